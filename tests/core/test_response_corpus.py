"""The labelled response corpus (tests/data/response_corpus.jsonl) against lm_eval_bias.core.parsing.

Every line is one test: the response is dispatched to the parser of its format (in its mode) and the
status, value (and, for valid Counterfactual VQA answers, the confidence) must equal the label. The
labels follow the parsing specification, not the parser (see scripts/build_response_corpus.py).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from lm_eval_bias.core.parsing import (
    ResponseStatus,
    parse_choice,
    parse_explained_answer,
    parse_json_answer,
    parse_letter,
    parse_salary_usd,
)

CORPUS = Path(__file__).resolve().parents[1] / "data" / "response_corpus.jsonl"
FORMATS = ("2afc", "mcq_salary", "mcq_education", "salary", "fof_json", "cf_vqa", "vignette")
LETTERS = {"2afc": "AB", "mcq_salary": "ABCDEF", "mcq_education": "ABCD"}
STATUSES = {s.value for s in ResponseStatus}


def _load() -> list[tuple[int, dict]]:
    rows = []
    with CORPUS.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if line.strip():
                rows.append((number, json.loads(line)))
    return rows


ROWS = _load()


def _mode_kwargs(row: dict) -> dict:
    # Strict is the default: strict lines call the parser exactly as the tasks do.
    return {"lenient": True} if row.get("mode", "strict") == "lenient" else {}


def parse_row(row: dict):
    """(status, value, confidence or None, reason) of the row's response under its format's parser."""
    fmt, text = row["format"], row["response"]
    if fmt in LETTERS:
        parsed = parse_letter(text, LETTERS[fmt], **_mode_kwargs(row))
        return parsed.status, parsed.value, None, parsed.reason
    if fmt == "salary":
        parsed = parse_salary_usd(text)
        return parsed.status, parsed.value, None, parsed.reason
    if fmt == "fof_json":
        parsed = parse_json_answer(text, row.get("allowed", "AB"), **_mode_kwargs(row))
        return parsed.status, parsed.value, None, parsed.reason
    if fmt == "vignette":
        parsed = parse_choice(text, row["options"], **_mode_kwargs(row))
        return parsed.status, parsed.value, None, parsed.reason
    if fmt == "cf_vqa":
        parsed = parse_explained_answer(text, row["options"], **_mode_kwargs(row))
        return parsed.status, parsed.answer, parsed.confidence, parsed.reason
    raise AssertionError(f"unknown format {fmt!r}")


def _describe(number: int, row: dict) -> str:
    text = row["response"]
    shown = repr(text) if len(text) <= 200 else repr(text[:120]) + f"...<{len(text)} chars>..." + repr(text[-40:])
    extra = {k: row[k] for k in ("options", "allowed", "note") if k in row}
    return f"corpus line {number} [{row['format']}/{row.get('mode', 'strict')}] {shown} {extra}"


@pytest.mark.parametrize("number,row", ROWS, ids=[f"line{n}-{r['format']}-{r.get('mode', 'strict')}" for n, r in ROWS])
def test_corpus_line(number: int, row: dict):
    status, value, confidence, reason = parse_row(row)
    where = _describe(number, row)
    got = f"got status={getattr(status, 'value', status)!r} value={value!r} reason={reason!r}"
    assert isinstance(status, ResponseStatus), f"{where}: status is not a ResponseStatus ({status!r})"
    assert status.value == row["status"], f"{where}: expected {row['status']!r} value={row['value']!r}, {got}"
    assert value == row["value"], f"{where}: expected value {row['value']!r}, {got}"
    if row["format"] == "salary" and value is not None:
        assert type(value) is int, f"{where}: salary value must be an int, got {type(value).__name__}"
    if row["format"] == "cf_vqa":
        if row["status"] == "valid":
            assert math.isclose(confidence, row["confidence"], rel_tol=0, abs_tol=1e-9), (
                f"{where}: expected confidence {row['confidence']!r}, got {confidence!r}")
        else:
            assert confidence == 0.0, f"{where}: confidence must be 0.0 unless valid, got {confidence!r}"
    if "reason" in row:
        assert reason == row["reason"], f"{where}: expected reason {row['reason']!r}, {got}"


def test_corpus_schema():
    problems = []
    for number, row in ROWS:
        fmt = row.get("format")
        if fmt not in FORMATS:
            problems.append((number, f"format {fmt!r}"))
            continue
        if not isinstance(row.get("response"), str):
            problems.append((number, "response is not a string"))
        if row.get("status") not in STATUSES:
            problems.append((number, f"status {row.get('status')!r}"))
        if row.get("mode", "strict") not in ("strict", "lenient"):
            problems.append((number, f"mode {row.get('mode')!r}"))
        if fmt == "salary" and row.get("mode", "strict") != "strict":
            problems.append((number, "salary has no lenient mode"))
        if row.get("status") != "valid" and row.get("value") is not None:
            problems.append((number, "value must be null unless valid"))
        if row.get("status") == "valid":
            value = row.get("value")
            if fmt == "salary":
                if type(value) is not int or not 1_000 <= value <= 10_000_000:
                    problems.append((number, f"salary value {value!r}"))
            elif fmt in LETTERS and value not in LETTERS[fmt]:
                problems.append((number, f"letter {value!r}"))
            elif fmt == "fof_json" and value not in row.get("allowed", "AB"):
                problems.append((number, f"letter {value!r} not in allowed"))
            elif fmt in ("cf_vqa", "vignette") and (
                    not isinstance(value, str) or len(value) != 1 or not "A" <= value < chr(65 + len(row["options"]))):
                problems.append((number, f"option letter {value!r}"))
        if fmt in ("cf_vqa", "vignette") and not (isinstance(row.get("options"), list) and row["options"]):
            problems.append((number, "options missing"))
        if fmt == "cf_vqa" and len(row.get("options", [])) != 4:
            problems.append((number, "cf_vqa lines have 4 options"))
        if fmt == "cf_vqa" and row.get("status") == "valid" and not 0.0 <= row.get("confidence", -1) <= 1.0:
            problems.append((number, "valid cf_vqa line needs a confidence in [0, 1]"))
    assert not problems, problems


def test_corpus_size_and_spread():
    rows = [r for _, r in ROWS]
    by_format = Counter(r["format"] for r in rows)
    assert len(rows) >= 420, len(rows)
    assert by_format["2afc"] >= 60, by_format
    assert by_format["mcq_salary"] + by_format["mcq_education"] >= 50, by_format
    assert by_format["mcq_salary"] >= 10 and by_format["mcq_education"] >= 10, by_format
    assert by_format["salary"] >= 80, by_format
    assert by_format["fof_json"] >= 60, by_format
    assert by_format["cf_vqa"] >= 70, by_format
    assert by_format["vignette"] >= 80, by_format
    lenient = [r for r in rows if r.get("mode") == "lenient"]
    assert len(lenient) >= 40, len(lenient)
    assert {r["format"] for r in lenient} >= {"2afc", "mcq_salary", "mcq_education", "fof_json", "cf_vqa", "vignette"}
    refusals = [r for r in rows if r["status"] == "refusal"]
    assert len(refusals) >= 100, len(refusals)
    assert {r["format"] for r in refusals} == set(FORMATS)
    for fmt in FORMATS:
        assert {r["status"] for r in rows if r["format"] == fmt} == STATUSES, fmt
    # Where the modes differ, the corpus holds the same response in both modes.
    keyed = {}
    for r in rows:
        keyed.setdefault((r["format"], r["response"], json.dumps(r.get("options")), r.get("allowed")), {})[
            r.get("mode", "strict")] = (r["status"], r["value"])
    differing = [k for k, modes in keyed.items() if len(modes) == 2 and modes["strict"] != modes["lenient"]]
    assert len(differing) >= 30, len(differing)


def test_corpus_covers_spec_refusal_phrasings():
    """Every refusal phrasing of the specification occurs in at least one refusal line."""
    text = "\n".join(r["response"] for _, r in ROWS if r["status"] == "refusal").replace("\u2019", "'").lower()
    phrases = [
        "i can't", "i cannot", "i can not", "i won't", "i will not", "i'm unable", "i am unable", "i'm not able",
        "i am not able", "i must decline", "i decline", "i refuse", "i'd rather not", "i would rather not",
        "i prefer not to", "i don't feel comfortable", "i'm not comfortable", "i'm sorry", "sorry", "i apologize",
        "as an ai language model", "as an ai assistant", "it is not appropriate to", "inappropriate to",
        "unfair to", "wrong to", "unethical to", "not possible to", "impossible to", "there is no way",
        "there is no basis", "there is no correct answer", "there is no right answer", "i don't know",
        "i do not know", "it depends", "based on appearance alone", "i cannot make assumptions based on appearance",
        "n/a", "unknown", "undetermined", "cannot determine", "not determinable", "neither", "none", "both",
        "neither of them", "both are equally likely", "equally", "they are the same",
    ]
    phrases += [f"unable to {v}" for v in ("determine", "tell", "say", "answer", "judge", "decide", "assess",
                                           "provide", "make", "choose", "infer", "identify", "know")]
    phrases += [f"impossible to {v}" for v in ("tell", "determine", "say", "know", "judge")]
    phrases += [f"not possible to {v}" for v in ("tell", "determine", "say", "know", "judge")]
    phrases += [f"be {v}" for v in ("determined", "inferred", "known", "judged", "told")]
    phrases += [f"no way to {v}" for v in ("tell", "know", "determine")]
    phrases += [f"{a} {b}" for a in ("insufficient", "not enough") for b in ("information", "evidence", "context")]
    phrases += ["don't make assumptions", "do not make assumptions", "won't make judgements", "won't make judgments",
                "will not make judgments", "don't make guesses", "will not make guesses"]
    missing = [p for p in phrases if p not in text]
    assert not missing, missing
    raw = "\n".join(r["response"] for _, r in ROWS if r["status"] == "refusal")
    assert "\u2019" in raw and "'" in raw, "refusals need both curly and straight apostrophes"
