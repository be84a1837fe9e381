"""Fuzz every response parser of lm_eval_bias.core.parsing and measure how parse time grows with length.

    python scripts/fuzz_parsers.py [--n 100000] [--seed 0] [--max-mb 1]

1. Robustness: ``--n`` seeded responses (mutations of the labelled corpus tests/data/response_corpus.jsonl,
   random Unicode, grammar-built near misses of every answer format, fragment soups and a few long
   pathological strings) go through every parser in both modes. Any exception is a failure, and so is a
   malformed result (a status outside valid/refusal/invalid, a value outside the allowed set, a value
   on a non-valid response, a confidence outside [0, 1], a salary outside the bounds) or a response
   that is valid in strict mode but not valid with the same value in lenient mode.
2. Complexity: for several pathological families (whitespace runs, digits, digit groups, braces,
   quotes and colons, repeated field labels, repeated lenient phrases, random text) each parser is timed
   at lengths 1 kB ... 1 MB and the growth exponent is the least-squares slope of log(time) against
   log(length). An exponent above 1.3 (super-linear) or a 1 MB parse slower than 1 s is a failure
   (measured again, best of three, before it counts). Times are CPU times of this process, so other
   load on a shared machine does not count.

Exit status 0 when nothing failed, 1 otherwise. The default run takes about two minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lm_eval_bias.core.parsing import (  # noqa: E402
    ExplainedAnswer,
    ResponseStatus,
    parse_choice,
    parse_explained_answer,
    parse_json_answer,
    parse_letter,
    parse_salary_usd,
)

CORPUS = ROOT / "tests" / "data" / "response_corpus.jsonl"
CF_OPTIONS = ["Men's shoes", "Women's shoes", "Children's shoes", "Sandals"]
WHO_OPTIONS = ["old man", "young man", "Both", "None"]
POS_OPTIONS = ["the left person", "the right person"]
WHAT_OPTIONS = ["cooking", "reading a book", "playing guitar", "running"]
MAX_EXPONENT = 1.3
MAX_1MB_SECONDS = 1.0
SHOWN = 5  # failing inputs shown per kind


# -- the parsers ----------------------------------------------------------------------------------------
class Parser:
    """One parser in one mode with one allowed set / option set: ``call(text)``, the allowed values and
    its strict twin (when this is the lenient mode)."""

    def __init__(self, name, call, allowed, strict_twin=None):
        self.name, self.call, self.allowed, self.strict_twin = name, call, allowed, strict_twin


def _variants() -> list[list[list[Parser]]]:
    """Per parser function, its variants (allowed sets / option sets), each a list of Parsers (one per
    mode, strict first). Every response goes through every function in both modes, with one variant
    drawn per response; the growth measurement times the first variant of each function."""
    functions = [
        [("parse_letter[AB]", lambda t, m: parse_letter(t, "AB", lenient=m), "AB"),
         ("parse_letter[ABCDEF]", lambda t, m: parse_letter(t, "ABCDEF", lenient=m), "ABCDEF"),
         ("parse_letter[ABCD]", lambda t, m: parse_letter(t, "ABCD", lenient=m), "ABCD")],
        [("parse_json_answer[AB]", lambda t, m: parse_json_answer(t, "AB", lenient=m), "AB"),
         ("parse_json_answer[ABCD]", lambda t, m: parse_json_answer(t, "ABCD", lenient=m), "ABCD")],
        [("parse_explained_answer", lambda t, m: parse_explained_answer(t, CF_OPTIONS, lenient=m), "ABCD")],
        [("parse_choice[who]", lambda t, m: parse_choice(t, WHO_OPTIONS, lenient=m), "ABCD"),
         ("parse_choice[positional]", lambda t, m: parse_choice(t, POS_OPTIONS, lenient=m), "AB"),
         ("parse_choice[what]", lambda t, m: parse_choice(t, WHAT_OPTIONS, lenient=m), "ABCD")],
    ]
    out = [[[Parser("parse_salary_usd", parse_salary_usd, None)]]]
    for variants in functions:
        rows = []
        for name, fn, allowed in variants:
            strict = Parser(f"{name}/strict", (lambda f: lambda t: f(t, False))(fn), allowed)
            rows.append([strict, Parser(f"{name}/lenient", (lambda f: lambda t: f(t, True))(fn), allowed, strict)])
        out.append(rows)
    return out


_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


def lenient_only_label(text: str) -> bool:
    """True when ``text`` has an "Answer:" / "Final Answer:" label (any word "answer" outside "exact
    answer"): lenient mode reads it as one more Exact Answer field, so a disagreeing one makes a
    strict-valid explained answer invalid in lenient mode, as the specification says."""
    low = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH).lower()
    return "answer" in " ".join(low.split()).replace("exact answer", "")


def _outcome(result):
    if isinstance(result, ExplainedAnswer):
        return result.status, result.answer, result.confidence
    return result.status, result.value, None


def malformed(parser: Parser, result) -> str | None:
    """Why ``result`` breaks the output invariants, or None."""
    status, value, confidence = _outcome(result)
    if not isinstance(status, ResponseStatus):
        return f"status {status!r}"
    if status is ResponseStatus.VALID:
        if parser.allowed is None:
            if type(value) is not int or not 1_000 <= value <= 10_000_000:
                return f"salary value {value!r}"
        elif not (isinstance(value, str) and len(value) == 1 and value in parser.allowed):
            return f"value {value!r} not in {parser.allowed}"
        if confidence is not None and not (isinstance(confidence, float) and 0.0 <= confidence <= 1.0):
            return f"confidence {confidence!r}"
    else:
        if value is not None:
            return f"value {value!r} on a {status.value} response"
        if confidence not in (None, 0.0):
            return f"confidence {confidence!r} on a {status.value} response"
    return None


# -- the responses --------------------------------------------------------------------------------------
FRAGMENTS = [
    "A", "B", "C", "D", "E", "F", "G", "a", "b", "Ａ", "Ｂ", "（", "）", "(", ")", "[", "]", "<", ">", "{", "}", "**",
    "__", "*", "_", "`", "```", "```json", "#", "- ", "• ", ".", ",", ";", ":", "!", "?", "。", "、", '"', "'",
    "\u2018", "\u2019", "\u201c", "\u201d", "«", "»", "Answer:", "Final answer:", "Option", "Choice:", "Letter",
    "The answer is", "the correct answer is", "answer would be", "I'd pick", "I would choose", "I'd go with",
    "I say", "option", " or ", " and ", "/", "I can't", "I can’t", "I cannot", "I won't", "I'm sorry", "Sorry",
    "As an AI language model", "N/A", "Unknown", "Neither", "None", "Both", "Nobody", "They both", "It depends",
    "not possible to tell", "Cannot determine", "I don't know", "insufficient information",
    "based on appearance alone", '{"answer": "', '"}', "{'answer': '", "'}", '{"answer": null}', '{"Answer":"A"}',
    '{"answer": "A. Male"}', "$", "US$", "USD", "€", "£", "¥", "₹", "C$", "EUR", "85,000", "85000", "85.000",
    "85 000", "1.2", "k", "K", "M", "million", "thousand", "per year", "/yr", "per month", "/mo", "an hour", "-",
    "–", "−", " to ", "between", "0", "9" * 30, ".50", ".00", "%", "Explanation:", "Exact Answer:",
    "**Exact Answer:**", "Confidence:", "- **Confidence**:", '"Exact Answer": "', '", "Confidence": "',
    '"Explanation": "', "0.9", "0,9", "85%", "1.5", "high", "Women's shoes", "Sandals", "old man", "young man",
    "An", "The", "the left", "The person on the right", "left", "right", "cooking", "<think>", "</think>", "<b>",
    "</b>", "<p>", "\U0001F44D", "\U0001F468\u200d\u2695\ufe0f", "\n", " ", "\t", "\u00a0", "\u3000", "\u200b",
    "\ufeff", "\u2060", "\u00ad", "\u202f",
]
CONFUSABLES = {"A": "ΑАＡ𝐀", "B": "ΒВＢ𝐁", ":": "：꞉", "$": "＄﹩", "0": "０𝟎٠", "5": "５𝟓٥", ",": "，‚", ".": "．。",
               " ": "\u00a0\u3000\u2009"}
UNICODE_POOL = (
    [chr(c) for c in range(0x20, 0x7F)] + list("\t\n\r") + [chr(c) for c in range(0xA0, 0x250)]
    + [chr(c) for c in range(0x2000, 0x2070)] + [chr(c) for c in range(0x3000, 0x3040)]
    + [chr(c) for c in range(0x4E00, 0x4E80)] + [chr(c) for c in range(0xFF00, 0xFF70)]
    + [chr(c) for c in range(0x1F300, 0x1F340)] + [chr(c) for c in range(0x660, 0x66A)] + ["\ufeff", "\ufffd"]
)


def _random_unicode(rng: random.Random, n: int, anywhere: bool | None = None) -> str:
    """``n`` random characters: from anywhere in the code space (surrogates excluded) or from a pool of
    likely ones (ASCII, Latin, punctuation, spaces, CJK, fullwidth, emoji); ``None`` draws which."""
    if anywhere is None:
        anywhere = rng.random() < 0.3
    if anywhere:
        chars = []
        while len(chars) < n:
            c = rng.randrange(0x110000)
            if not 0xD800 <= c <= 0xDFFF:
                chars.append(chr(c))
        return "".join(chars)
    return "".join(rng.choices(UNICODE_POOL, k=n))


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(text))
        op = rng.randrange(8)
        if op == 0:
            text = text[:at] + rng.choice(FRAGMENTS) + text[at:]
        elif op == 1:
            text = text[:at] + text[at + rng.randint(1, 6):]
        elif op == 2:
            text = text[:at] + text[at:at + rng.randint(1, 30)] + text[at:]
        elif op == 3:
            text = text.swapcase() if rng.random() < 0.5 else text.upper()
        elif op == 4 and text:
            i = rng.randrange(len(text))
            if text[i] in CONFUSABLES:
                text = text[:i] + rng.choice(CONFUSABLES[text[i]]) + text[i + 1:]
        elif op == 5:
            left, right = rng.choice([("**", "**"), ("(", ")"), ('"', '"'), ("\u201c", "\u201d"), ("`", "`"),
                                      ("<think>x</think>", ""), ("```json\n", "\n```"), ("\u200b", "\u00a0")])
            text = left + text + right
        elif op == 6:
            text = text[:at] + _random_unicode(rng, rng.randint(1, 4)) + text[at:]
        else:
            text = text + rng.choice(["\n", " ", "."]) + text[: rng.randint(0, 40)]
    return text


def _near_miss(rng: random.Random) -> str:
    """A response built from one answer format's grammar with random choices in every slot."""
    L = lambda: rng.choice("ABCDEFGabZ")  # noqa: E731
    sp = lambda: rng.choice(["", " ", "  ", "\n", "\u00a0", "\u200b", "\t"])  # noqa: E731
    q = lambda: rng.choice(['"', "'", "\u201c", "\u201d", "", "`"])  # noqa: E731
    num = lambda: rng.choice(["85000", "85,000", "85.000", "85 000", "1.2", "0", "999", "-5", "85000.50",  # noqa: E731
                              "10,000,001", "1" * rng.randint(1, 60), "0.9", ".5", "85", "1,2,3"])
    kind = rng.randrange(6)
    if kind == 0:  # letters
        pre = rng.choice(["", "Answer:", "Option", "The answer is", "I'd pick", "I would choose", "Final answer:",
                          "**Answer:**", "Choice:", "Letter", "(", "- ", "• ", "#", "**"])
        post = rng.choice(["", ".", ")", "**", ". Because he looks richer.", " or " + L(), L(), ") - explanation",
                           "!", "?", "。", "\U0001F44D"])
        return sp() + pre + sp() + L() + post + sp()
    if kind == 1:  # salary
        cur = rng.choice(["$", "US$", "USD ", "", "€", "£", "C$", "¥", "₹", "＄"])
        unit = rng.choice(["", "k", "K", " thousand", " million", "M", " USD", " EUR", " CAD", " rupees"])
        per = rng.choice(["", " per year", " annually", "/yr", " a year", "/month", " per hour", " weekly", " daily"])
        tail = rng.choice(["", " plus a 10% bonus", f" - {cur}{num()}", f" to {num()}", ".", " (approx.)"])
        head = rng.choice(["", "Salary: ", "I'd recommend ", "I cannot recommend ", "Around ", "between "])
        return head + cur + num() + unit + per + tail
    if kind == 2:  # FACT-OR-FAIR JSON
        key = rng.choice(["answer", "Answer", "ANSWER", "answr", "answer "])
        value = rng.choice([L(), L() + ".", L() + ". Male", "N/A", "None", "", "null", L() + L(), "Both"])
        obj = "{" + sp() + q() + key + q() + sp() + ":" + sp() + q() + value + q() + sp() + rng.choice(["}", "", "}}"])
        text = obj * rng.randint(1, 3)
        return rng.choice(["", "```json\n", "Sure! ", "<think>{}</think>"]) + text + rng.choice(["", "\n```", " ok"])
    if kind == 3:  # Counterfactual VQA explained answers
        label = lambda name: rng.choice([f'"{name}": ', f"{name}: ", f"**{name}:** ", f"- **{name}**: ",  # noqa: E731
                                         f"{name.lower()}: ", f"\u201d{name}\u201d: ", f"{name}\n"])
        answer = rng.choice([L(), f"({L()})", f"Option {L()}", rng.choice(CF_OPTIONS),
                             f"{L()}. {rng.choice(CF_OPTIONS)}", "N/A", "None of the above", "", "Boots", "I cannot tell"])
        conf = rng.choice(["0.9", "0,9", "85%", "1", "0", "1.5", "high", "85", "-0.1", "", "0.9."])
        parts = [label("Explanation") + q() + "The shoes are " + rng.choice(["red", "small", ", Confidence"]) + q(),
                 label("Exact Answer") + q() + answer + q(), label("Confidence") + q() + conf + q()]
        if rng.random() < 0.2:
            parts.append(label(rng.choice(["Exact Answer", "Confidence", "Answer", "Final Answer"])) + L())
        if rng.random() < 0.2:
            rng.shuffle(parts)
        return rng.choice([", ", "\n", "\n\n"]).join(parts)
    if kind == 4:  # VIGNETTE choices
        opt = rng.choice(WHO_OPTIONS + POS_OPTIONS + WHAT_OPTIONS + ["the person on the left", "left one", "nobody",
                                                                   "they both", "an old man", "young"])
        pre = rng.choice(["", f"{L()}. ", f"{L()}) ", "The ", "A ", "An ", "**", "I think "])
        return pre + rng.choice([opt, opt.upper(), opt.title()]) + rng.choice(["", ".", "!", "**", f" ({L()})"])
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 30)))


def _long(rng: random.Random) -> str:
    n = rng.choice([2_000, 10_000, 30_000])
    unit = rng.choice([" ", "\u00a0", "7", "123,", "{", '"', ": ", "Exact Answer:", "The answer is ", "A or ",
                       "I can't ", "$85,000 ", '{"answer": "A"}', "\u200b", "<think>", "**"])
    text = (unit * (n // len(unit) + 1))[:n]
    return rng.choice(["", "A", "$85,000", "Exact Answer: B\n"]) + text + rng.choice(["", "B", "\nConfidence: 0.9"])


def responses(n: int, seed: int):
    rng = random.Random(seed)
    corpus = [json.loads(line)["response"] for line in CORPUS.read_text(encoding="utf-8").splitlines()
              if line.strip()] if CORPUS.exists() else ["A"]
    for _ in range(n):
        r = rng.random()
        if r < 0.30:
            yield _mutate(rng, rng.choice(corpus))
        elif r < 0.33:
            yield rng.choice(corpus)
        elif r < 0.48:
            yield _random_unicode(rng, rng.randint(0, 200))
        elif r < 0.84:
            yield _near_miss(rng)
        elif r < 0.995:
            yield "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 40)))
        else:
            yield _long(rng)


# -- growth of parse time with length ---------------------------------------------------------------------
def _family_text(name: str, n: int, rng: random.Random) -> str:
    if name == "random text":
        return _random_unicode(rng, n, anywhere=False)
    unit = {
        "whitespace": " \u00a0\t",
        "digits": "7",
        "digit groups": "123,",
        "braces": "{",
        "quotes and colons": '": "',
        "field labels": "Exact Answer: Confidence: Explanation: ",
        "lenient phrases": "The answer is A or I'd pick ",
        "json objects": '{"answer": "A"} ',
    }[name]
    return (unit * (n // len(unit) + 1))[:n]


FAMILIES = ("whitespace", "digits", "digit groups", "braces", "quotes and colons", "field labels", "lenient phrases",
            "json objects", "random text")


def _time_call(call, text: str, min_total: float = 0.03, max_runs: int = 50, at_least: int = 1) -> float:
    """Best per-call CPU time over repeated runs (until ``min_total`` seconds or ``max_runs`` runs).
    CPU time (``time.process_time``), not wall time: other processes on the machine do not count."""
    best, total, runs = float("inf"), 0.0, 0
    while runs < at_least or (total < min_total and runs < max_runs):
        start = time.process_time()
        call(text)
        elapsed = time.process_time() - start
        best, total, runs = min(best, elapsed), total + elapsed, runs + 1
    return best


def _slope(lengths: list[int], seconds: list[float]) -> float:
    xs = [math.log(n) for n in lengths]
    ys = [math.log(max(s, 1e-7)) for s in seconds]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def growth(parsers: list[Parser], lengths: list[int], seed: int, errors: list[str]):
    """{parser name: {family: (exponent, seconds at the longest length)}}; NaN where the parser raised
    (the exception is appended to ``errors``)."""
    texts = {f: [_family_text(f, n, random.Random(seed + k)) for k, n in enumerate(lengths)] for f in FAMILIES}
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for parser in parsers:
        out[parser.name] = {}
        for family in FAMILIES:
            try:
                seconds = [_time_call(parser.call, t) for t in texts[family]]
            except Exception as exc:  # noqa: BLE001 - any exception is a finding
                errors.append(f"{parser.name} raised {type(exc).__name__}: {exc} on the {family} family")
                out[parser.name][family] = (math.nan, math.nan)
                continue
            out[parser.name][family] = (_slope(lengths, seconds), seconds[-1])
    return out, texts


# -- main -------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="number of fuzzed responses (default 100000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-mb", type=float, default=1.0, help="longest response of the growth measurement, in MB")
    args = ap.parse_args(argv)
    variants = _variants()
    failures: list[str] = []

    # 1. robustness
    calls = 0
    exceptions: list[tuple[str, str, str]] = []
    bad: list[tuple[str, str, str]] = []
    slow: list[tuple[float, Parser, str]] = []  # the slowest calls, timed again at the end
    pick = random.Random(args.seed + 1)
    started = time.perf_counter()
    for text in responses(args.n, args.seed):
        outcomes = {}
        for parser in (p for function in variants for p in pick.choice(function)):
            calls += 1
            t0 = time.perf_counter()
            try:
                result = parser.call(text)
            except Exception as exc:  # noqa: BLE001 - any exception is a finding
                exceptions.append((parser.name, text, f"{type(exc).__name__}: {exc}"))
                continue
            elapsed = time.perf_counter() - t0
            if len(slow) < SHOWN or elapsed > slow[-1][0]:
                slow = sorted(slow + [(elapsed, parser, text)], key=lambda s: -s[0])[:SHOWN]
            why = malformed(parser, result)
            if why:
                bad.append((parser.name, text, why))
            outcomes[parser.name] = _outcome(result)
            twin = parser.strict_twin
            if twin and twin.name in outcomes and outcomes[twin.name][0] is ResponseStatus.VALID \
                    and outcomes[parser.name] != outcomes[twin.name] \
                    and not (parser.name.startswith("parse_explained_answer") and lenient_only_label(text)):
                bad.append((parser.name, text, f"strict {outcomes[twin.name]} but lenient {outcomes[parser.name]}"))
    fuzz_seconds = time.perf_counter() - started
    print(f"fuzz: seed {args.seed}, {args.n} responses x {len(variants)} parsers x 2 modes (salary: 1), "
          f"{calls} calls in {fuzz_seconds:.1f} s")
    print(f"exceptions: {len(exceptions)}")
    for name, text, error in exceptions[:SHOWN]:
        print(f"  {name}: {error} on {repr(text)[:160]}")
    print(f"malformed results / strict-lenient disagreements: {len(bad)}")
    for name, text, why in bad[:SHOWN]:
        print(f"  {name}: {why} on {repr(text)[:160]}")
    # A single slow call on a shared machine may be a pause of the process: the slowest calls (wall
    # time) are timed again (CPU time, best of three) and the slowest after that is reported.
    retimed = sorted(((_time_call(p.call, t, min_total=0, at_least=3), p, t, first) for first, p, t in slow),
                     key=lambda s: -s[0])
    if retimed:
        seconds, parser, text, first = retimed[0]
        print(f"slowest call: {parser.name} on a {len(text)}-character response: {seconds:.4f} s CPU "
              f"(best of 3; {first:.4f} s wall in the fuzz loop) {repr(text)[:80]}")
    if exceptions:
        failures.append(f"{len(exceptions)} exceptions")
    if bad:
        failures.append(f"{len(bad)} malformed results")

    # 2. complexity
    top = int(args.max_mb * 1_000_000)
    lengths = [n for n in (1_000, 4_000, 16_000, 64_000, 256_000, 1_000_000) if n < top] + [top]
    started = time.perf_counter()
    timed = [p for function in variants for p in function[0]]
    growth_errors: list[str] = []
    table, texts = growth(timed, lengths, args.seed, growth_errors)
    suspects = [(p, f) for p, row in table.items() for f, (exp, sec) in row.items()
                if exp > MAX_EXPONENT or sec > MAX_1MB_SECONDS * args.max_mb]  # NaN compares False
    for parser_name, family in suspects:  # measure again (best of three) before it counts
        parser = next(p for p in timed if p.name == parser_name)
        seconds = [_time_call(parser.call, t, at_least=3) for t in texts[family]]
        table[parser_name][family] = (_slope(lengths, seconds), seconds[-1])
    print(f"\ngrowth exponent of parse time (CPU) vs length ({lengths[0]:,} .. {lengths[-1]:,} chars; "
          f"log-log least squares; {time.perf_counter() - started:.1f} s):")
    short = {"whitespace": "ws", "digits": "digits", "digit groups": "groups", "braces": "braces",
             "quotes and colons": "quotes", "field labels": "labels", "lenient phrases": "lenient",
             "json objects": "json", "random text": "random"}
    longest = f"{lengths[-1] / 1e6:g} MB"
    print(f"  {'parser':34s}" + "".join(f"{short[f]:>8s}" for f in FAMILIES) + f"{'max':>7s}  slowest at {longest}")
    for name, row in table.items():
        measured = {f: v for f, v in row.items() if not math.isnan(v[0])} or {FAMILIES[0]: (math.nan, math.nan)}
        worst_exp = max(e for e, _ in measured.values())
        worst_family = max(measured, key=lambda f: measured[f][1])
        worst_sec = measured[worst_family][1]
        print(f"  {name:34s}" + "".join(f"{row[f][0]:8.2f}" for f in FAMILIES)
              + f"{worst_exp:7.2f}  {worst_sec:.3f} s ({short[worst_family]})")
        if worst_exp > MAX_EXPONENT:
            failures.append(f"{name}: exponent {worst_exp:.2f} > {MAX_EXPONENT} "
                            f"({', '.join(f for f, (e, _) in row.items() if e > MAX_EXPONENT)})")
        if worst_sec > MAX_1MB_SECONDS * args.max_mb:
            failures.append(f"{name}: {worst_sec:.2f} s on {lengths[-1]:,} chars")
    for error in growth_errors:
        print(f"  {error}")
    failures += growth_errors[:SHOWN]
    print("\nRESULT: " + ("FAIL\n  " + "\n  ".join(failures) if failures else "OK"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
