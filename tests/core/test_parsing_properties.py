"""Property-based tests of lm_eval_bias.core.parsing (hypothesis): every parser is total, its output is
well-formed, wrapping a valid letter never changes it, lenient mode only ever adds answers, the tasks'
``process_results`` never raise, and pathological long inputs parse in linear time.

The labelled behaviour on realistic answers lives in tests/core/test_response_corpus.py; the same
invariants at a larger scale are checked by ``scripts/fuzz_parsers.py``.
"""

from __future__ import annotations

import json
import time
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lm_eval_bias.core.parsing import (
    ExplainedAnswer,
    ParsedResponse,
    ResponseStatus,
    parse_choice,
    parse_explained_answer,
    parse_json_answer,
    parse_letter,
    parse_salary_usd,
)

# database=None: no .hypothesis/ folder in the checkout; failures are reproduced from the printed example.
# derandomize=True: the same examples on every run, so CI's verdict does not depend on the draw (wider
# exploration: scripts/fuzz_parsers.py and scripts/fuzz_commands.py, or --hypothesis-seed=N locally).
SETTINGS = dict(deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                          HealthCheck.large_base_example])
MODES = (False, True)

CF_OPTIONS = ["Men's shoes", "Women's shoes", "Children's shoes", "Sandals"]
OPTION_SETS = [
    ["old man", "young man"],
    ["Christian woman", "Muslim woman"],
    ["cooking", "reading a book", "playing guitar", "running"],
    ["old man", "young man", "Both", "None"],
    ["the left person", "the right person"],
    ["cooking", "painting"],
]


def _letters(n: int) -> str:
    return "".join(chr(65 + k) for k in range(n))


# (name, allowed letters, parse(text, lenient) -> result); salary has one mode.
PARSERS = [
    ("letter_2afc", "AB", lambda t, lenient: parse_letter(t, "AB", lenient=lenient)),
    ("letter_mcq_salary", "ABCDEF", lambda t, lenient: parse_letter(t, "ABCDEF", lenient=lenient)),
    ("letter_mcq_education", "ABCD", lambda t, lenient: parse_letter(t, "ABCD", lenient=lenient)),
    ("json_ab", "AB", lambda t, lenient: parse_json_answer(t, "AB", lenient=lenient)),
    ("json_abcd", "ABCD", lambda t, lenient: parse_json_answer(t, "ABCD", lenient=lenient)),
    ("explained", "ABCD", lambda t, lenient: parse_explained_answer(t, CF_OPTIONS, lenient=lenient)),
] + [
    (f"choice_{k}", _letters(len(opts)), (lambda o: lambda t, lenient: parse_choice(t, o, lenient=lenient))(opts))
    for k, opts in enumerate(OPTION_SETS)
]


def check_well_formed(name: str, allowed: str, result, text: str) -> None:
    """The output invariants shared by every parser."""
    assert isinstance(result.status, ResponseStatus), (name, text, result)
    assert result.status.value in ("valid", "refusal", "invalid")
    assert isinstance(result.reason, str)
    if isinstance(result, ExplainedAnswer):
        value = result.answer
        assert isinstance(result.confidence, float), (name, text, result)
        if result.status is ResponseStatus.VALID:
            assert 0.0 <= result.confidence <= 1.0, (name, text, result)
        else:
            assert result.confidence == 0.0, (name, text, result)
    else:
        assert isinstance(result, ParsedResponse)
        value = result.value
    if result.status is ResponseStatus.VALID:
        assert value in tuple(allowed), (name, text, result)
    else:
        assert value is None, (name, text, result)


def check_salary(text: str) -> None:
    result = parse_salary_usd(text)
    assert isinstance(result.status, ResponseStatus), (text, result)
    if result.status is ResponseStatus.VALID:
        assert type(result.value) is int and 1_000 <= result.value <= 10_000_000, (text, result)
    else:
        assert result.value is None, (text, result)


def check_all(text: str) -> None:
    check_salary(text)
    for name, allowed, parse in PARSERS:
        for lenient in MODES:
            check_well_formed(f"{name}/{'lenient' if lenient else 'strict'}", allowed, parse(text, lenient), text)


# -- strategies -------------------------------------------------------------------------------------
SPACES = [" ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2009", "\u202f", "\u200b", "\ufeff", "\u2060", "\u00ad"]
FRAGMENTS = [
    # letters and their wrappers
    "A", "B", "C", "D", "E", "F", "G", "a", "b", "Ａ", "Ｂ", "（", "）", "(", ")", "[", "]", "<", ">", "{", "}",
    "**", "__", "*", "_", "`", "```", "```json", "#", "- ", "• ", ".", ",", ";", ":", "!", "?", "。", "、",
    '"', "'", "\u2018", "\u2019", "\u201c", "\u201d", "«", "»",
    # lenient forms
    "Answer:", "Final answer:", "Option", "Choice:", "Letter", "The answer is", "the correct answer is",
    "answer would be", "I'd pick", "I would choose", "I'd go with", "I say", "option", " or ", " and ", "/",
    # refusals and non-answers
    "I can't", "I can’t", "I cannot", "I won't", "I'm sorry", "Sorry", "As an AI language model", "N/A",
    "Unknown", "Neither", "None", "Both", "Nobody", "They both", "It depends", "not possible to tell",
    "Cannot determine", "I don't know", "insufficient information", "based on appearance alone",
    # JSON
    '{"answer": "', '"}', "{'answer': '", "'}", '{"answer": null}', '{"Answer":"A"}', '{"answer": "A. Male"}',
    # salary
    "$", "US$", "USD", "€", "£", "¥", "₹", "C$", "EUR", "85,000", "85000", "85.000", "85 000", "1.2", "k", "K",
    "M", "million", "thousand", "per year", "/yr", "per month", "/mo", "an hour", "-", "–", "−", " to ",
    "between", "0", "9" * 30, "1" * 400, ".50", ".00", "%",
    # explained answers
    "Explanation:", "Exact Answer:", "**Exact Answer:**", "Confidence:", "- **Confidence**:", '"Exact Answer": "',
    '", "Confidence": "', '"Explanation": "', "0.9", "0,9", "85%", "1.5", "high", "Women's shoes", "Sandals",
    # choices
    "old man", "young man", "An", "The", "the left", "The person on the right", "left", "right", "cooking",
    # reasoning blocks, HTML, emoji
    "<think>", "</think>", "<b>", "</b>", "<p>", "\U0001F44D", "\U0001F468\u200d\u2695\ufe0f", "\n", " ",
] + SPACES

grammar_text = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
whitespace_runs = st.builds(
    lambda pre, ws, n, post: pre + ws * n + post,
    grammar_text, st.sampled_from(SPACES), st.integers(0, 5000), grammar_text)
many_digits = st.builds(
    lambda pre, digits, sep, post: pre + sep.join(digits) + post,
    st.sampled_from(["", "$", "US$", "USD ", "-", "Salary: $", "0."]),
    st.lists(st.text(alphabet="0123456789", min_size=1, max_size=400), min_size=1, max_size=6),
    st.sampled_from(["", ",", ".", " ", "'", "-", " to ", "k-"]),
    st.sampled_from(["", "k", " million", " per year", " USD", "/month", ".00", ".5", "%"]))
nested = st.builds(
    lambda opens, core, closes: "".join(opens) + core + "".join(closes),
    st.lists(st.sampled_from(["{", "[", "(", "<", '"', "'", "**", "`", '{"answer": ', "{'answer': "]), max_size=60),
    st.sampled_from(["A", "B", '"A"', "'B'", "", "N/A", "85000", "Exact Answer: B"]),
    st.lists(st.sampled_from(["}", "]", ")", ">", '"', "'", "**", "`"]), max_size=60))
repeated_labels = st.builds(
    lambda label, value, sep, n: (label + value + sep) * n,
    st.sampled_from(["Exact Answer:", "Confidence:", "Explanation:", "**Exact Answer:**", '"Exact Answer": ',
                     "Answer:", "Final Answer:", '{"answer": ', "Option ", "The answer is "]),
    st.sampled_from(["", " A", " B", ' "B"', " 0.9", " N/A", " Women's shoes", " 85%", " E"]),
    st.sampled_from(["", "\n", ", ", " "]), st.integers(1, 300))
unicode_text = st.text(max_size=300)  # the full Unicode range (no surrogates)
CORPUS = Path(__file__).resolve().parents[1] / "data" / "response_corpus.jsonl"
CORPUS_RESPONSES = sorted({json.loads(line)["response"] for line in CORPUS.read_text(encoding="utf-8").splitlines()
                           if line.strip()}) if CORPUS.exists() else ["A"]


@st.composite
def corpus_mutation(draw):
    """A labelled corpus response with a few fragments inserted, deleted or appended (near misses)."""
    text = draw(st.sampled_from(CORPUS_RESPONSES))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "duplicate"]))
        if op == "insert":
            text = text[:at] + draw(st.sampled_from(FRAGMENTS)) + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 5)):]
        else:
            text = text[:at] + text[at:at + 20] + text[at:]
    return text


any_text = st.one_of(unicode_text, grammar_text, whitespace_runs, many_digits, nested, repeated_labels,
                     corpus_mutation())


# -- totality and well-formed output --------------------------------------------------------------
@settings(max_examples=300, **SETTINGS)
@given(any_text)
def test_every_parser_total_and_well_formed(text):
    check_all(text)


@settings(max_examples=150, **SETTINGS)
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=("Cs",)),
               max_size=2000))
def test_every_parser_total_on_arbitrary_unicode(text):
    check_all(text)


@settings(max_examples=100, **SETTINGS)
@given(st.one_of(many_digits, whitespace_runs))
def test_salary_total_on_digits_and_whitespace(text):
    check_salary(text)


# -- metamorphic: wrapping a valid letter ----------------------------------------------------------
WRAPPERS = [(" ", " "), ("\t", "\n"), ("\u00a0", "\u00a0"), ("\u3000", ""), ("\u200b", "\u200b"), ("\ufeff", ""),
            ("", "\u2060"), ('"', '"'), ("'", "'"), ("\u201c", "\u201d"), ("\u2018", "\u2019"), ("**", "**"),
            ("(", ")"), ("[", "]"), ("`", "`"), ("", "."), ("__", "__")]


@st.composite
def wrapped_letter(draw, allowed: str):
    letter = draw(st.sampled_from(allowed))
    text = draw(st.sampled_from([letter, letter.lower()]))
    for left, right in draw(st.lists(st.sampled_from(WRAPPERS), max_size=8)):
        text = left + text + right
    return letter, text


@pytest.mark.parametrize("allowed", ["AB", "ABCDEF", "ABCD"])
@settings(max_examples=80, **SETTINGS)
@given(data=st.data())
def test_wrapped_letter_stays_valid(allowed, data):
    letter, text = data.draw(wrapped_letter(allowed))
    for lenient in MODES:
        result = parse_letter(text, allowed, lenient=lenient)
        assert (result.status, result.value) == (ResponseStatus.VALID, letter), (text, lenient, result)


@settings(max_examples=80, **SETTINGS)
@given(options=st.sampled_from(OPTION_SETS), data=st.data())
def test_wrapped_choice_letter_stays_valid(options, data):
    letter, text = data.draw(wrapped_letter(_letters(len(options))))
    for lenient in MODES:
        result = parse_choice(text, options, lenient=lenient)
        assert (result.status, result.value) == (ResponseStatus.VALID, letter), (text, options, lenient, result)


@settings(max_examples=60, **SETTINGS)
@given(options=st.sampled_from(OPTION_SETS), data=st.data())
def test_wrapped_option_text_stays_valid(options, data):
    index = data.draw(st.integers(0, len(options) - 1))
    text = data.draw(st.sampled_from([options[index], options[index].upper(), options[index].title()]))
    for left, right in data.draw(st.lists(st.sampled_from(WRAPPERS), max_size=6)):
        text = left + text + right
    for lenient in MODES:
        result = parse_choice(text, options, lenient=lenient)
        assert (result.status, result.value) == (ResponseStatus.VALID, chr(65 + index)), (text, options, result)


# -- metamorphic: lenient only adds answers ---------------------------------------------------------
def _outcome(result):
    value = result.answer if isinstance(result, ExplainedAnswer) else result.value
    confidence = result.confidence if isinstance(result, ExplainedAnswer) else None
    return result.status, value, confidence


_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


def lenient_only_label(text: str) -> bool:
    """An "Answer:" / "Final Answer:" label (the word "answer" outside "exact answer"): lenient mode
    reads it as one more Exact Answer field, so by the specification a disagreeing one makes a
    strict-valid explained answer invalid in lenient mode (corpus: cf_vqa "... Answer: A" lines)."""
    low = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH).lower()
    return "answer" in " ".join(low.split()).replace("exact answer", "")


@settings(max_examples=300, **SETTINGS)
@given(st.one_of(corpus_mutation(), grammar_text, nested, repeated_labels, unicode_text))
def test_strict_valid_implies_lenient_same_value(text):
    for name, _allowed, parse in PARSERS:
        if name == "explained" and lenient_only_label(text):
            continue
        strict = _outcome(parse(text, False))
        if strict[0] is ResponseStatus.VALID:
            assert _outcome(parse(text, True)) == strict, (name, text)


# -- the tasks' process_results never raise ----------------------------------------------------------
def _task_cases():
    from lm_eval_bias.cf_vqa import tasks as cf_vqa
    from lm_eval_bias.fact_or_fair import tasks as fact_or_fair
    from lm_eval_bias.reflect import tasks as reflect
    from lm_eval_bias.vignette import tasks as vignette

    twoafc = {"template": 1, "occupation": "ceo", "pair_id": "ceo-1-0-1", "order": "AB", "group_a": 0, "group_b": 1}
    mcq = {"template": 1, "occupation": "nurse", "group": 3}
    salary = {"template": 2, "occupation": "nurse", "bio_id": "nurse-0", "group": 5}
    fof = {"statistic": "median_income", "side": "highest", "attribute": "race",
           "options": ["Asian", "Black", "White", "Hispanic"], "true_group": "Asian", "query_id": "q1"}
    cf = {"pair_id": "p1", "run": 0, "side": "plus", "category": "Social behaviour", "subcategory": "smoking",
          "options": list(CF_OPTIONS), "human_consistency": 0.8, "split": "test", "prompt": "baseline"}
    vig = {"doc_id": "d1", "pair_id": "v1", "paradigm": "factuality", "pair_kind": "identity", "gender": "man",
           "dimension": "age", "left": "old man", "right": "young man", "left_activity": "cooking",
           "right_activity": "", "question_type": "who_doing", "parameter": "", "context": "",
           "options": ["old man", "young man", "Both", "None"], "option_identity": ["old man", "young man", "", ""],
           "option_activity": ["", "", "", ""], "target": "old man", "asked": "cooking", "direction": ""}
    # (a factuality "who is doing" doc as the task builds it: question type who_doing, no parameter; the
    # compact views check that layout, so an off-layout doc is a builder error, not a model output)
    vig_pos = dict(vig, paradigm="decision_positional", options=["the left person", "the right person"],
                   option_identity=["old man", "young man"], option_activity=["", ""], target="",
                   question_type="identity_choice", parameter="who_doing")
    return [
        ("reflect.2afc", reflect.process_results_2afc, reflect.record_2afc, twoafc),
        ("reflect.mcq_salary", reflect.process_results_mcq, reflect.record_mcq, dict(mcq, variant="salary")),
        ("reflect.mcq_education", reflect.process_results_mcq, reflect.record_mcq, dict(mcq, variant="education")),
        ("reflect.salary", reflect.process_results_salary, reflect.record_salary, salary),
        ("fact_or_fair.objective", fact_or_fair.process_results_objective, fact_or_fair.record_of, fof),
        ("fact_or_fair.objective_gender", fact_or_fair.process_results_objective, fact_or_fair.record_of,
         dict(fof, attribute="gender", options=["male", "female"], true_group="male")),
        ("cf_vqa", cf_vqa.process_results, cf_vqa.record_of, cf),
        ("vignette.factuality", vignette.process_results, vignette.record_of, vig),
        ("vignette.positional", vignette.process_results, vignette.record_of, vig_pos),
    ]


TASK_CASES = _task_cases()


@settings(max_examples=120, **SETTINGS)
@given(text=any_text, lenient=st.booleans())
def test_process_results_never_raise(text, lenient):
    for name, process, record_of, doc in TASK_CASES:
        doc = dict(doc, extraction="lenient" if lenient else "strict")
        out = process(doc, [text])  # the harness's call: every headline key, compact values
        assert isinstance(out, dict) and out, name
        record = record_of(doc, [text])  # the record those values encode
        # Counterfactual VQA counts a cut-off explanation as its own outcome (docs/cf-vqa.md)
        allowed = ("valid", "refusal", "invalid") + (("truncated",) if name == "cf_vqa" else ())
        assert record["status"] in allowed, (name, text, record)


def test_process_results_accept_no_result():
    for name, process, record_of, doc in TASK_CASES:
        assert process(dict(doc), []), name
        assert record_of(dict(doc), [])["status"] in ("refusal", "invalid"), name


# -- linear time on pathological inputs ---------------------------------------------------------------
PATHOLOGICAL = {
    "200k spaces": " " * 200_000,
    "200k digits": "7" * 200_000,
    "100k braces": "{" * 100_000,
    "20k Exact Answer labels": "Exact Answer:" * 20_000,
}
TIME_LIMIT_S = 0.5


def _timed(parse, text: str) -> float:
    """CPU seconds, best of up to three runs: the test machine may be shared, and other processes'
    load says nothing about the parser's complexity."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        parse(text)
        best = min(best, time.process_time() - start)
        if best < TIME_LIMIT_S:
            break
    return best


def test_pathological_inputs_parse_fast():
    slow = []
    calls = [("salary", lambda t: parse_salary_usd(t))]
    for name, _allowed, parse in PARSERS:
        for lenient in MODES:
            calls.append((f"{name}/{'lenient' if lenient else 'strict'}", lambda t, p=parse, m=lenient: p(t, m)))
    for label, text in PATHOLOGICAL.items():
        for name, parse in calls:
            seconds = _timed(parse, text)
            if seconds >= TIME_LIMIT_S:
                slow.append(f"{name} on {label}: {seconds:.3f} s")
    assert not slow, slow
