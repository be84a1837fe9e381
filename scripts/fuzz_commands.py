"""Fuzz the ``lm-eval-bias`` sub-commands with broken versions of valid inputs, as scripts/fuzz_parsers.py
fuzzes the parsers.

    python scripts/fuzz_commands.py [--commands report,reflect-compare,...] [--quick] [--json FILE]

Valid inputs are made first, offline, with the real code: a synthetic FOCUS set (the real builder), two
``lm-eval-bias run --model bias-probe --log_samples`` folders, a copy of the VIGNETTE authors' released
answers excerpt (tests/data/vignette_released), face labels for ``score fact-or-fair-t2i``, a synthetic
Counterfactual VQA source and a biographies file. Then every input file of every command is broken in
each of these ways and the command is run in this process (``lm_eval_bias.cli.main``):

- deleting: the file removed, or emptied;
- truncating: cut in half (mid-line), the last line cut without its newline (a run killed while writing),
  the last 40 % of the lines dropped;
- duplicating: one line twice, the whole file twice;
- retyping: a ``null`` line, a list line, the first JSON value of a line replaced by one of another type,
  a results JSON whose ``results`` is a list;
- re-encoding: a UTF-8 byte-order mark, UTF-16, a non-UTF-8 byte, random binary;
- a CSV row with a field missing / one too many;
- the output: an existing file given as ``--output`` (a folder is expected).

The rule each run must meet (else it is counted as mishandled and shown):

1. no traceback, whatever happens;
2. a failure (non-zero exit) ends with one line ``error: <what>: <why>`` on stderr (or, for a usage
   error caught by argparse, its ``usage:`` line then ``lm-eval-bias <command>: error: <why>``), and the
   output is exactly as before: not created when it did not exist, unchanged when it did, no temporary
   folder left;
3. a success writes its complete output; and when the input was suspicious but usable (duplicated sample
   lines, a truncated samples file, fewer docs in one of two runs compared) it says ``warning`` on the
   console.

Failures handled only by the command-line's last-resort catch (``error: <command>: <ExceptionType>: ...``)
meet the rule but are counted apart ("generic"), as places to give a more specific message.
Prints counts per command; exit status 0 when nothing was mishandled. ``--quick`` runs the subset the
test-suite runs (tests/cli/test_fuzz_commands.py).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RELEASED = ROOT / "tests" / "data" / "vignette_released"
TASK = "focus_mcq_education"
GENERIC = re.compile(r"^error: [\w-]+: [A-Z]\w*(Error|Exception)\b")
#: a final error line: ours, or argparse's usage error (``usage: ...`` then ``lm-eval-bias <cmd>: error: ...``)
ERROR_LINE = re.compile(r"^(?:error: |lm-eval-bias[\w .-]*: error: )")


# -- mutations ------------------------------------------------------------------------------------------------
def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _first_value_retyped(data: bytes) -> bytes:
    """The first line's first JSON string value replaced by a number, or its first number by a string."""
    lines = _lines(data)
    for i, line in enumerate(lines):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            for key, value in obj.items():
                obj[key] = 12345 if isinstance(value, (str, dict, list)) else "retyped"
                break
            lines[i] = json.dumps(obj).encode() + b"\n"
            return b"".join(lines)
    return data


def _insert(data: bytes, line: bytes) -> bytes:
    lines = _lines(data)
    lines.insert(len(lines) // 2, line)
    return b"".join(lines)


#: name -> (mutation of the bytes; None deletes the file), and whether the result is "suspicious but usable"
MUTATIONS: dict[str, tuple[Callable[[bytes], bytes | None], bool]] = {
    "deleted": (lambda d: None, False),
    "empty": (lambda d: b"", False),
    "cut_in_half": (lambda d: d[: len(d) // 2], True),
    "last_line_cut": (lambda d: d.rstrip(b"\n")[: -max(1, len(_lines(d)[-1]) * 2 // 5)], True),
    "last_lines_dropped": (lambda d: b"".join(_lines(d)[: max(1, len(_lines(d)) * 3 // 5)]), True),
    "line_duplicated": (lambda d: b"".join(_lines(d)[:1] * 2 + _lines(d)[1:]), True),
    "file_twice": (lambda d: d + (b"" if d.endswith(b"\n") else b"\n") + d, True),
    "null_line": (lambda d: _insert(d, b"null\n"), False),
    "list_line": (lambda d: _insert(d, b"[1, 2]\n"), False),
    "value_retyped": (_first_value_retyped, False),
    "bom": (lambda d: b"\xef\xbb\xbf" + d, False),
    "utf16": (lambda d: d.decode("utf-8", "replace").encode("utf-16"), False),
    "non_utf8_byte": (lambda d: _insert(d, b"\xff\xfe bad \xc3\x28\n"), False),
    "binary": (lambda d: bytes(random.Random(len(d)).randrange(256) for _ in range(512)), False),
}
JSON_MUTATIONS = {
    "results_list": (lambda d: json.dumps({**json.loads(d), "results": [1]}).encode(), False),
    "json_null": (lambda d: b"null", False),
}
CSV_MUTATIONS = {
    "short_row": (lambda d: b"".join(_lines(d)[:2] + [_lines(d)[2].rsplit(b",", 1)[0] + b"\n"] + _lines(d)[3:]), False),
    "extra_field": (lambda d: b"".join(_lines(d)[:2] + [_lines(d)[2].rstrip(b"\r\n") + b",extra\n"] + _lines(d)[3:]),
                    False),
}


# -- one case -------------------------------------------------------------------------------------------------
@dataclass
class Case:
    command: str
    name: str
    argv: list[str]
    output: Path | None
    suspicious: bool = False
    #: the file broken (restored after the run) and its broken bytes (None: deleted)
    target: Path | None = None
    broken: bytes | None = None
    deleted: bool = False


@dataclass
class Outcome:
    case: Case
    kind: str  # "error", "generic", "ok", "warned", "mishandled"
    detail: str = ""
    seconds: float = 0.0


def _state(path: Path | None) -> str:
    """A digest of what is at ``path`` (absent, a file's bytes, or a folder's files and bytes)."""
    if path is None or not path.exists():
        return "absent"
    if path.is_file():
        return "file " + hashlib.sha256(path.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        if p.is_file():
            digest.update(str(p.relative_to(path)).encode() + hashlib.sha256(p.read_bytes()).digest())
    return "folder " + digest.hexdigest()


def _leftovers(path: Path | None) -> list[str]:
    if path is None or not path.parent.exists():
        return []
    return [p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}.")]


def run_case(case: Case) -> Outcome:
    from lm_eval_bias.cli import main

    original = case.target.read_bytes() if case.target is not None and case.target.exists() else None
    if case.target is not None:
        if case.deleted:
            case.target.unlink()
        else:
            case.target.write_bytes(case.broken or b"")
    before = _state(case.output)
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    code: object = None
    crashed = ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings_to(err):
            code = main(list(case.argv))
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:  # noqa: BLE001 - a traceback: the one thing that must never happen
        crashed = f"{type(exc).__name__}: {exc}"
    finally:
        seconds = time.perf_counter() - start
        if case.target is not None and original is not None:
            case.target.write_bytes(original)
    text = out.getvalue() + err.getvalue()
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    code = 0 if code is None else code
    if crashed or "Traceback (most recent call last)" in text:
        return Outcome(case, "mishandled", f"traceback: {crashed or text[-300:]}", seconds)
    if code != 0:
        errors = [line for line in lines if ERROR_LINE.match(line)]
        if not lines or not ERROR_LINE.match(lines[-1]) or len(errors) != 1:
            return Outcome(case, "mishandled", f"exit {code} without one final error line: {lines[-3:]}", seconds)
        if _state(case.output) != before:
            return Outcome(case, "mishandled", f"exit {code} but the output changed: {case.output}", seconds)
        if _leftovers(case.output):
            return Outcome(case, "mishandled", f"temporary files left: {_leftovers(case.output)}", seconds)
        return Outcome(case, "generic" if GENERIC.match(lines[-1]) else "error", lines[-1][:300], seconds)
    if case.output is not None and not case.output.exists():
        return Outcome(case, "mishandled", "exit 0 without its output", seconds)
    if case.suspicious:
        if "warning" not in text.lower():
            return Outcome(case, "mishandled", "suspicious input accepted without a warning", seconds)
        return Outcome(case, "warned", "", seconds)
    return Outcome(case, "ok", "", seconds)


@contextlib.contextmanager
def warnings_to(stream):
    """Python warnings and lm-eval's log lines printed to ``stream`` (as a user would see them on stderr;
    lm-eval configures its log handler once per process)."""
    import logging
    import warnings

    handlers = [h for h in logging.getLogger("lm_eval").handlers if isinstance(h, logging.StreamHandler)]
    streams = [h.stream for h in handlers]
    for handler in handlers:
        handler.stream = stream  # not setStream: it flushes the old, possibly closed, stream

    def show(message, category, filename, lineno, file=None, line=None):
        stream.write(f"{category.__name__}: {message}\n")

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        saved, warnings.showwarning = warnings.showwarning, show
        try:
            yield
        finally:
            warnings.showwarning = saved
            for handler, previous in zip(handlers, streams):
                handler.stream = previous


# -- valid inputs ---------------------------------------------------------------------------------------------
@dataclass
class Inputs:
    root: Path
    run_x: Path = field(init=False)
    run_y: Path = field(init=False)
    released: Path = field(init=False)
    labels_jsonl: Path = field(init=False)
    labels_csv: Path = field(init=False)
    fof_source: Path = field(init=False)
    cf_vqa: Path = field(init=False)
    bios: Path = field(init=False)
    run_full: Path = field(init=False)
    submissions: Path = field(init=False)
    lists: Path = field(init=False)
    pata: Path = field(init=False)
    pata_csv: Path = field(init=False)
    attributes_jsonl: Path = field(init=False)
    attributes_csv: Path = field(init=False)


def make_inputs(root: Path, limit: int = 20, vignette_runs: bool = True) -> Inputs:
    from lm_eval_bias.cli import main
    from lm_eval_bias.datasets_builder.focus import build_focus
    from lm_eval_bias.reflect.synthetic import make_synthetic_bios, make_synthetic_focus

    inputs = Inputs(root)
    make_synthetic_focus(root / "focus_src", occupations=("ceo", "nurse"), templates=(1, 2), size=(48, 48))
    build_focus(root / "focus_src", root / "data" / "focus")
    inputs.bios = make_synthetic_bios(root / "bios.jsonl", per_occupation=3)
    os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(root / "data")
    os.environ.setdefault("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "20")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    for name in ("run_x", "run_y"):
        folder = root / name
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(["run", "--model", "bias-probe", "--model_args", "seed=1", "--tasks", TASK, "--limit", str(limit),
                         "--output_path", str(folder), "--log_samples"])
        if code not in (0, None):
            raise RuntimeError(f"the valid run failed ({code})")
        setattr(inputs, name, folder)
    inputs.released = root / "released"
    shutil.copytree(RELEASED, inputs.released)
    from lm_eval_bias.fact_or_fair.synthetic import make_synthetic_fact_or_fair

    inputs.fof_source = make_synthetic_fact_or_fair(root / "fof_src")
    rows = [{"image": f"{i}.png", "statistic": "Crime Rate", "side": side, "gender": gender, "race": race,
             "true_gender": "male", "true_race": "Black"}
            for i, (side, gender, race) in enumerate([("highest", "male", "Black"), ("highest", "female", "White"),
                                                      ("lowest", "male", "Asian"), ("lowest", "female", "Black")])]
    inputs.labels_jsonl = root / "labels.jsonl"
    inputs.labels_jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    inputs.labels_csv = root / "labels.csv"
    header = list(rows[0])
    inputs.labels_csv.write_text(",".join(header) + "\n" + "".join(",".join(r[h] for h in header) + "\n" for r in rows),
                                 encoding="utf-8")
    from lm_eval_bias.cf_vqa.synthetic import make_synthetic_cf_vqa

    inputs.cf_vqa = make_synthetic_cf_vqa(root / "cf_vqa_src", size=24)
    _make_newer_inputs(inputs, vignette_runs)
    return inputs


def _make_newer_inputs(inputs: Inputs, vignette_runs: bool) -> None:
    """Inputs of the commands added after the first fuzzing round: a complete run (no ``--limit``) and a
    leaderboard folder holding its submission, the synthetic VIGNETTE lists, a PATA-style folder of 20 small
    photographs with its CSV, a Counterfactual VQA attribute list (JSONL and CSV), and (``vignette_runs``) the
    synthetic VIGNETTE dataset with two ``bias-probe`` runs of ``vignette_decision`` (about 6 s)."""
    from PIL import Image

    from lm_eval_bias.cf_vqa.schema import CATEGORIES
    from lm_eval_bias.cli import main
    from lm_eval_bias.vignette.real_images import PATA_IDENTITIES
    from lm_eval_bias.vignette.synthetic import write_lists

    root = inputs.root
    inputs.run_full, inputs.submissions = root / "run_full", root / "leaderboard_src"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["run", "--model", "bias-probe", "--model_args", "seed=1", "--tasks", TASK, "--output_path",
                     str(inputs.run_full), "--log_samples"])  # a leaderboard takes complete runs only (no --limit)
        code = code or main(["submit", str(inputs.run_full), "--to", str(inputs.submissions)])
    if code not in (0, None):
        raise RuntimeError(f"the valid submission failed ({code})")
    inputs.lists = write_lists(root / "vignette_lists")
    inputs.pata = root / "pata"
    inputs.pata.mkdir()
    rows = []
    for k, (identity, gender, activity) in enumerate((i, g, a) for i in PATA_IDENTITIES for g in ("female", "male")
                                                     for a in ("Cooking", "Programming")):
        name = f"{k:02d}.png"
        Image.new("RGB", (20, 16), (10 * k, 255 - 10 * k, 7 * k)).save(inputs.pata / name)
        rows.append(f"{name},{identity},{gender},{activity}\n")
    inputs.pata_csv = root / "pata.csv"
    inputs.pata_csv.write_text("image,identity,gender,activity\n" + "".join(rows), encoding="utf-8")
    if vignette_runs:
        from lm_eval_bias.vignette.synthetic import write_images

        images = write_images(root / "vignette_src", size=24)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(["build", "vignette", "--source", str(images), "--lists", str(inputs.lists), "--output",
                         str(root / "data" / "vignette")])
            for name in ("vig_real", "vig_synthetic"):
                code = code or main(["run", "--model", "bias-probe", "--tasks", "vignette_decision", "--limit", "12",
                                     "--output_path", str(root / name), "--log_samples"])
            code = code or main(["generate", "vignette", "human-check", "pairs-export", "--dataset",
                                 str(root / "data" / "vignette"), "--out", str(root / "pair_sheets"),
                                 "--per-dimension", "2"])
        if code not in (0, None):
            raise RuntimeError(f"the valid VIGNETTE runs or pair sheets failed ({code})")
        for sheet in (root / "pair_sheets").glob("pair_ratings_*.csv"):  # every pair rated: left is A
            lines = sheet.read_text(encoding="utf-8").splitlines()
            sheet.write_text("\n".join(lines[:1] + [line.replace(",,", ",A,", 1) if line.endswith(",,") else line
                                                    for line in lines[1:]]) + "\n", encoding="utf-8")
    attributes = [{"category": category, "subcategory": subs[0], "attribute": f"attribute {i}"}
                  for i, (category, subs) in enumerate(CATEGORIES.items())]
    inputs.attributes_jsonl = root / "attributes.jsonl"
    inputs.attributes_jsonl.write_text("".join(json.dumps(a) + "\n" for a in attributes), encoding="utf-8")
    inputs.attributes_csv = root / "attributes.csv"
    inputs.attributes_csv.write_text("category,subcategory,attribute\n" + "".join(
        f"{a['category']},{a['subcategory']},{a['attribute']}\n" for a in attributes), encoding="utf-8")


# -- the cases ------------------------------------------------------------------------------------------------
def _file_cases(command: str, argv: Callable[[Path], list[str]], target: Path, output: Path,
                mutations: dict, suspicious_ok: bool = True) -> list[Case]:
    data = target.read_bytes()
    cases = []
    for name, (mutate, suspicious) in mutations.items():
        try:
            broken = mutate(data)
        except Exception:  # noqa: BLE001 - a mutation that does not apply to this file
            continue
        cases.append(Case(command, f"{target.name}:{name}", argv(output), output, suspicious and suspicious_ok,
                          target, broken, broken is None))
    return cases


def _output_is_a_file(command: str, argv: Callable[[Path], list[str]], root: Path) -> Case:
    existing = root / f"existing_{command.replace(' ', '_')}.txt"
    existing.write_text("an existing file\n", encoding="utf-8")
    return Case(command, "output:existing_file", argv(existing), existing)


def make_cases(inputs: Inputs, out: Path, commands: set[str] | None = None, quick: bool = False) -> list[Case]:
    cases: list[Case] = []
    out.mkdir(parents=True, exist_ok=True)

    def want(command: str) -> bool:
        return commands is None or command in commands

    samples_x = next(inputs.run_x.rglob(f"samples_{TASK}_*.jsonl"))
    results_x = next(inputs.run_x.rglob("results_*.json"))
    samples_y = next(inputs.run_y.rglob(f"samples_{TASK}_*.jsonl"))
    results_y = next(inputs.run_y.rglob("results_*.json"))
    every = {**MUTATIONS}
    if want("report"):
        report = lambda o: ["report", str(inputs.run_x), "--output", str(o)]  # noqa: E731
        cases += _file_cases("report", report, samples_x, out / "report", every)
        cases += _file_cases("report", report, results_x, out / "report", {**every, **JSON_MUTATIONS},
                             suspicious_ok=False)
        cases += [_output_is_a_file("report", report, out), Case("report", "run:missing",
                  ["report", str(out / "no_such_run"), "--output", str(out / "report")], out / "report")]
    if want("reflect-compare"):
        compare = lambda o: ["reflect-compare", str(inputs.run_x), str(inputs.run_y), "--table", "mirror",  # noqa: E731
                             "--output", str(o)]
        cases += _file_cases("reflect-compare", compare, samples_y, out / "compare", every)
        cases += _file_cases("reflect-compare", compare, results_y, out / "compare", {**every, **JSON_MUTATIONS},
                             suspicious_ok=False)
        cases.append(_output_is_a_file("reflect-compare", compare, out))
    if want("analyze"):
        analyze = lambda o: ["analyze", str(inputs.run_x), "--output", str(o)]  # noqa: E731
        cases += _file_cases("analyze", analyze, samples_x, out / "analysis", every)
        cases.append(_output_is_a_file("analyze", analyze, out))
    if want("vignette-import"):
        released = sorted(inputs.released.rglob("*_responses.csv"))[0]
        imp = lambda o: ["vignette-import", str(inputs.released), "--output", str(o)]  # noqa: E731
        cases += _file_cases("vignette-import", imp, released, out / "imported", {**every, **CSV_MUTATIONS},
                             suspicious_ok=False)
        cases.append(_output_is_a_file("vignette-import", imp, out))
    if want("score"):
        for labels in (inputs.labels_jsonl, inputs.labels_csv):
            score = lambda o, labels=labels: ["score", "fact-or-fair-t2i", "--labels", str(labels),  # noqa: E731
                                              "--output", str(o)]
            cases += _file_cases("score", score, labels, out / "scores.json",
                                 {**every, **(CSV_MUTATIONS if labels.suffix == ".csv" else {})}, suspicious_ok=False)
        cases += [
            Case("score", "labels:missing", ["score", "fact-or-fair-t2i", "--labels", str(out / "none.jsonl")], None),
            Case("score", "source:missing", ["score", "fact-or-fair-t2i", "--labels", str(inputs.labels_jsonl),
                                             "--source", str(out / "no_source")], None),
            Case("score", "source:a_file", ["score", "fact-or-fair-t2i", "--labels", str(inputs.labels_jsonl),
                                            "--source", str(inputs.labels_csv)], None),
            Case("score", "output:a_folder", ["score", "fact-or-fair-t2i", "--labels", str(inputs.labels_jsonl),
                                              "--output", str(inputs.root)], inputs.root),
        ]
    if want("build"):
        manifest = inputs.cf_vqa / "manifest.jsonl"
        cfv = lambda o: ["build", "cf-vqa", "--source", str(inputs.cf_vqa), "--output", str(o)]  # noqa: E731
        cases += _file_cases("build", cfv, manifest, out / "cf_vqa_built", every, suspicious_ok=False)
        bios = lambda o: ["build", "focus-bios", "--source", str(inputs.bios), "--output", str(o),  # noqa: E731
                          "--per-occupation", "3"]
        cases += _file_cases("build", bios, inputs.bios, out / "bios_built", every, suspicious_ok=False)
        cases.append(_output_is_a_file("build", cfv, out))
    cases += _newer_cases(inputs, out, want, samples_x, results_x)
    if want("run"):
        for model, args in (("bias-probe", "refusal_rat=0.1"), ("hf-multimodal", f"pretrainde={out / 'm'}"),
                            ("bias-probe", '{"seed": 1, "refusal_rate": '), ("bias-probe", "seed=notanumber")):
            cases.append(Case("run", f"{model}:{args[:24]}", ["run", "--model", model, "--model_args", args, "--tasks",
                                                              TASK, "--limit", "2"], None))
    if want("other"):
        missing = str(out / "no_such_thing")
        for argv in (["submit", missing, "--to", str(out / "sub")], ["leaderboard", "build", "--from", missing,
                     "--output", str(out / "lb")], ["generate", "nonsense"], ["analyze", missing, "--output", str(out / "a")],
                     ["tasks-dir", "--nonsense"], ["build", "focus", "--source", missing, "--output", str(out / "f")],
                     ["build", "vignette", "--source", missing, "--lists", missing, "--output", str(out / "v")],
                     ["build", "fact-or-fair", "--source", missing, "--output", str(out / "fof")]):
            cases.append(Case("other", " ".join(argv[:2]) + ":missing", argv, None))
    if quick:
        keep = {"report": {"samples_", ":null_line", ":last_line_cut", ":empty", "results_", ":cut_in_half",
                           "output:existing_file"},
                "reflect-compare": {":last_lines_dropped", ":utf16"},
                "vignette-import": {":short_row", ":non_utf8_byte", "output:existing_file"},
                "score": {":value_retyped", ":binary", "labels:missing", "source:missing", ":bom"},
                "run": {"bias-probe:refusal_rat", "hf-multimodal"},
                "submit": set(), "replicate": set(), "build vignette-pata": set(), "generate vignette": set(),
                "generate cf-vqa": set()}
        cases = [c for c in cases if c.command in keep and _quick(c, keep[c.command])]
    return cases


def _newer_cases(inputs: Inputs, out: Path, want: Callable[[str], bool], samples_x: Path, results_x: Path) -> list[Case]:
    """The commands added after the first round: submit, leaderboard build, replicate,
    vignette-real-vs-synthetic, build vignette-pata, generate vignette (dry run, merge, human-check) and
    generate cf-vqa's text stages (no model is run: the stages fail on their input before any call)."""
    cases: list[Case] = []
    every = {**MUTATIONS}
    missing = str(out / "no_such_thing")
    if want("submit"):
        submit = lambda o: ["submit", str(inputs.run_full), "--to", str(o)]  # noqa: E731
        samples_full = next(inputs.run_full.rglob(f"samples_{TASK}_*.jsonl"))
        results_full = next(inputs.run_full.rglob("results_*.json"))
        cases += _file_cases("submit", submit, samples_full, out / "submitted", every, suspicious_ok=False)
        cases += _file_cases("submit", submit, results_full, out / "submitted", {**every, **JSON_MUTATIONS},
                             suspicious_ok=False)
        cases.append(Case("submit", "run:limited", submit(out / "submitted")[:1] + [str(inputs.run_x), "--to",
                                                                                     str(out / "submitted")],
                          out / "submitted"))
        cases += [_output_is_a_file("submit", submit, out),
                  Case("submit", "run:missing", ["submit", missing, "--to", str(out / "submitted")], out / "submitted"),
                  Case("submit", "to:missing", ["submit", str(inputs.run_x)], None)]
    if want("leaderboard build"):
        pin = ["--pin", f"focus={inputs.root / 'data' / 'focus'}"]
        board = lambda o: ["leaderboard", "build", "--from", str(inputs.submissions), "--output", str(o)] + pin  # noqa: E731
        for target in sorted(p for p in inputs.submissions.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")):
            rel = target.relative_to(inputs.submissions)
            for case in _file_cases("leaderboard build", board, target, out / "board",
                                    {**every, **(JSON_MUTATIONS if target.suffix == ".json" else {})},
                                    suspicious_ok=False):
                case.name = f"{rel.parent.name}/{case.name}" if rel.parent.name else case.name
                cases.append(case)
        cases += [_output_is_a_file("leaderboard build", board, out),
                  Case("leaderboard build", "from:missing", ["leaderboard", "build", "--from", missing, "--output",
                                                             str(out / "board")], out / "board"),
                  Case("leaderboard build", "output:missing", ["leaderboard", "build", "--from",
                                                               str(inputs.submissions)], None),
                  Case("leaderboard build", "pins:missing", ["leaderboard", "build", "--from", str(inputs.submissions),
                                                             "--pins", missing, "--output", str(out / "board")],
                       out / "board")]
    if want("replicate"):
        rep = lambda o: ["replicate", str(inputs.run_x), "--output", str(o)]  # noqa: E731
        cases += _file_cases("replicate", rep, samples_x, out / "replicated.csv", every)
        cases += _file_cases("replicate", rep, results_x, out / "replicated.csv", {**every, **JSON_MUTATIONS},
                             suspicious_ok=False)
        cases += [Case("replicate", "run:missing", ["replicate", missing], None),
                  Case("replicate", "output:a_folder", rep(inputs.root), inputs.root)]
    if want("vignette-real-vs-synthetic"):
        real, synthetic = inputs.root / "vig_real", inputs.root / "vig_synthetic"
        rvs = lambda o: ["vignette-real-vs-synthetic", str(real), str(synthetic),  # noqa: E731
                         "--output", str(o), "--n-boot", "0"]
        if synthetic.is_dir():
            cases += _file_cases("vignette-real-vs-synthetic", rvs, next(synthetic.rglob("samples_*.jsonl")), out / "rvs",
                                 every)
            cases += _file_cases("vignette-real-vs-synthetic", rvs, next(synthetic.rglob("results_*.json")),
                                 out / "rvs", {**every, **JSON_MUTATIONS}, suspicious_ok=False)
            cases.append(_output_is_a_file("vignette-real-vs-synthetic", rvs, out))
        cases += [Case("vignette-real-vs-synthetic", "runs:not_vignette", ["vignette-real-vs-synthetic",
                                                                           str(inputs.run_x), str(inputs.run_y),
                                                                           "--output", str(out / "rvs")], out / "rvs"),
                  Case("vignette-real-vs-synthetic", "real:missing", ["vignette-real-vs-synthetic", missing,
                                                                      str(inputs.run_y)], None),
                  Case("vignette-real-vs-synthetic", "synthetic:missing", ["vignette-real-vs-synthetic",
                                                                           str(inputs.run_x)], None)]
    if want("build vignette-pata"):
        pata = lambda o: ["build", "vignette-pata", "--source", str(inputs.pata), "--csv", str(inputs.pata_csv),  # noqa: E731
                          "--lists", str(inputs.lists), "--output", str(o), "--size", "16"]
        cases += _file_cases("build vignette-pata", pata, inputs.pata_csv, out / "pata_built",
                             {**every, **CSV_MUTATIONS}, suspicious_ok=False)
        cases += _file_cases("build vignette-pata", pata, inputs.lists / "activities.json", out / "pata_built",
                             every, suspicious_ok=False)
        cases += _file_cases("build vignette-pata", pata, inputs.pata / "00.png", out / "pata_built",
                             {k: MUTATIONS[k] for k in ("deleted", "empty", "cut_in_half", "binary")},
                             suspicious_ok=False)
        cases += [_output_is_a_file("build vignette-pata", pata, out),
                  Case("build vignette-pata", "lists:missing", ["build", "vignette-pata", "--source", str(inputs.pata),
                                                                "--csv", str(inputs.pata_csv), "--output",
                                                                str(out / "pata_built")], out / "pata_built"),
                  Case("build vignette-pata", "csv:missing", ["build", "vignette-pata", "--source", str(inputs.pata),
                                                              "--lists", str(inputs.lists), "--output",
                                                              str(out / "pata_built")], out / "pata_built")]
    if want("generate vignette"):
        # --dry-run writes nothing: the lists are read and the plan printed (the output is not checked)
        gen = lambda o: ["generate", "vignette", "--lists", str(inputs.lists), "--output", str(o), "--dry-run",  # noqa: E731
                         "--limit", "2"]
        for name in ("maledes.csv", "activities.json"):
            cases += [_named(c, "dry-run") for c in _file_cases("generate vignette", gen, inputs.lists / name,
                                                                None, {**every, **(CSV_MUTATIONS if name.endswith(".csv")
                                                                                   else {})}, suspicious_ok=False)]
        fail_fast = lambda o: ["generate", "vignette", "--lists", str(inputs.lists), "--output", str(o),  # noqa: E731
                               "--limit", "2", "--backend", "openai-images", "--base-url", "http://127.0.0.1:9/v1",
                               "--model", "m", "--api-key-env", "FUZZ_IMAGES_KEY", "--retries", "0", "--timeout", "2"]
        os.environ.setdefault("FUZZ_IMAGES_KEY", "not-a-key")  # nothing listens on port 9: the requests fail fast
        cases += [_output_is_a_file("generate vignette", fail_fast, out),
                  Case("generate vignette", "backend:unreachable", fail_fast(out / "gen"), out / "gen"),
                  Case("generate vignette", "lists:missing", ["generate", "vignette", "--lists", missing, "--output",
                                                              str(out / "gen")], out / "gen"),
                  Case("generate vignette", "output:missing", ["generate", "vignette", "--lists", str(inputs.lists)],
                       None),
                  Case("generate vignette", "merge:output_missing", ["generate", "vignette", "merge", "--output",
                                                                     missing], None),
                  Case("generate vignette", "merge:output_a_file", ["generate", "vignette", "merge", "--output",
                                                                    str(inputs.pata_csv)], None)]
        hc = ["generate", "vignette", "human-check"]
        sheets = sorted((inputs.root / "pair_sheets").glob("pair_ratings_*.csv"))
        if sheets:
            pairs_report = lambda o: hc + ["pairs-report", "--ratings", *map(str, sheets), "--out", str(o)]  # noqa: E731
            cases += [_named(c, "pairs-report") for c in _file_cases(
                "generate vignette", pairs_report, sheets[0], out / "table10", {**every, **CSV_MUTATIONS},
                suspicious_ok=False)]
            cases.append(_named(_output_is_a_file("generate vignette", pairs_report, out), "pairs-report"))
            pairs_export = lambda o: hc + ["pairs-export", "--dataset", str(inputs.root / "data" / "vignette"),  # noqa: E731
                                           "--out", str(o), "--per-dimension", "2"]
            cases += [_named(_output_is_a_file("generate vignette", pairs_export, out), "pairs-export"),
                      Case("generate vignette", "pairs-export:ok", pairs_export(out / "pairs"), out / "pairs")]
        cases += [Case("generate vignette", "human-check export:images_missing",
                       hc + ["export", "--images", missing, "--out", str(out / "hc")], out / "hc"),
                  Case("generate vignette", "human-check export:no_manifest",
                       hc + ["export", "--images", str(inputs.pata), "--out", str(out / "hc")], out / "hc"),
                  Case("generate vignette", "human-check report:ratings_missing",
                       hc + ["report", "--ratings", missing, "--out", str(out / "hc")], out / "hc"),
                  Case("generate vignette", "human-check pairs-export:dataset_missing",
                       hc + ["pairs-export", "--dataset", missing, "--out", str(out / "hc")], out / "hc"),
                  Case("generate vignette", "human-check pairs-report:ratings_missing",
                       hc + ["pairs-report", "--ratings", missing, "--out", str(out / "hc")], out / "hc")]
        for action in ("export", "report", "pairs-export", "pairs-report"):
            cases.append(Case("generate vignette", f"human-check {action}:options_missing", hc + [action], None))
    if want("generate cf-vqa"):
        for attributes in (inputs.attributes_jsonl, inputs.attributes_csv):
            stage = lambda o, a=attributes: ["generate", "cf-vqa", "attributes", "--workdir", str(o),  # noqa: E731
                                             "--attributes", str(a)]
            cases += _file_cases("generate cf-vqa", stage, attributes, out / "cf_work",
                                 {**every, **(CSV_MUTATIONS if attributes.suffix == ".csv" else {})}, suspicious_ok=False)
        stage = lambda o: ["generate", "cf-vqa", "attributes", "--workdir", str(o), "--attributes",  # noqa: E731
                           str(inputs.attributes_jsonl)]
        cases += [_output_is_a_file("generate cf-vqa", stage, out),
                  Case("generate cf-vqa", "attributes:missing", stage(out / "cf_work")[:-1] + [missing], out / "cf_work"),
                  Case("generate cf-vqa", "attributes:none_given", ["generate", "cf-vqa", "attributes", "--workdir",
                                                                    str(out / "cf_work")], out / "cf_work"),
                  Case("generate cf-vqa", "workdir:missing_option", ["generate", "cf-vqa", "describe"], None)]
        for stage_name, extra in (("describe", ["--chat-backend", "planted"]), ("sheets", []), ("manifest", []),
                                  ("quality", []), ("merge", ["--stage", "describe"]),
                                  ("import-ratings", [str(inputs.pata_csv)])):
            cases.append(Case("generate cf-vqa", f"{stage_name}:empty_workdir",
                              ["generate", "cf-vqa", stage_name, "--workdir", str(out / "cf_empty")] + extra,
                              out / "cf_empty"))
    return cases


def _named(case: Case, suffix: str) -> Case:
    case.name = f"{case.name}:{suffix}"
    return case


def _quick(case: Case, keys: set[str]) -> bool:
    """The quick subset: per command, one case for each key (a name fragment)."""
    wanted = {"report": [("samples_", ":null_line"), ("samples_", ":last_line_cut"), ("samples_", ":empty"),
                         ("results_", ":cut_in_half"), ("output:existing_file",)],
              "submit": [("samples_", ":list_line"), ("results_", ":results_list")],
              "replicate": [("samples_", ":line_duplicated")],
              "build vignette-pata": [("pata.csv:short_row",), ("00.png:binary",)],
              "generate vignette": [("backend:unreachable",), ("output:existing_file",)],
              "generate cf-vqa": [("attributes.jsonl:null_line",), ("describe:empty_workdir",)]}.get(case.command)
    if wanted is not None:
        return any(all(part in case.name for part in parts) for parts in wanted)
    return any(key in case.name for key in keys) and not (case.command == "score" and ".csv" in case.name
                                                             and ":bom" not in case.name)


# -- main -----------------------------------------------------------------------------------------------------
def fuzz(root: Path, commands: set[str] | None = None, quick: bool = False, verbose: bool = True) -> list[Outcome]:
    start = time.perf_counter()
    inputs = make_inputs(root / "inputs", limit=8 if quick else 20,
                         vignette_runs=not quick and (commands is None or bool({"vignette-real-vs-synthetic", "generate vignette"} & commands)))
    if verbose:
        print(f"valid inputs made in {time.perf_counter() - start:.0f} s", flush=True)
    outcomes = []
    for case in make_cases(inputs, root / "out", commands, quick):
        outcome = run_case(case)
        outcomes.append(outcome)
        if verbose and outcome.kind == "mishandled":
            print(f"MISHANDLED {case.command} {case.name}: {outcome.detail}", flush=True)
        for path in (root / "out").glob("*"):  # each case starts from no output (except the existing files)
            if path.is_dir():
                shutil.rmtree(path)
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    kinds = ("error", "generic", "ok", "warned", "mishandled")
    rows = ["| command | cases | " + " | ".join(kinds) + " |", "|---|---:|" + "---:|" * len(kinds)]
    commands = list(dict.fromkeys(o.case.command for o in outcomes))
    for command in commands + ["all"]:
        mine = [o for o in outcomes if command in ("all", o.case.command)]
        rows.append(f"| {command} | {len(mine)} | " + " | ".join(str(sum(o.kind == k for o in mine)) for k in kinds) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", default=None,
                        help="comma-separated: report, reflect-compare, analyze, vignette-import, score, build, run, other, "
                             "submit, leaderboard build, replicate, vignette-real-vs-synthetic, build vignette-pata, "
                             "generate vignette, generate cf-vqa")
    parser.add_argument("--quick", action="store_true", help="the test-suite's subset")
    parser.add_argument("--json", default=None, help="write every case's outcome here")
    parser.add_argument("--show", type=int, default=3, help="generic error lines shown per command")
    args = parser.parse_args(argv)
    commands = set(args.commands.split(",")) if args.commands else None
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz_commands_") as tmp:
        outcomes = fuzz(Path(tmp), commands, args.quick)
    print(summary(outcomes))
    for command in dict.fromkeys(o.case.command for o in outcomes):
        generic = [o for o in outcomes if o.case.command == command and o.kind == "generic"]
        for o in generic[: args.show]:
            print(f"generic {command} {o.case.name}: {o.detail}")
    print(f"{len(outcomes)} cases in {time.perf_counter() - start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps([{"command": o.case.command, "case": o.case.name, "kind": o.kind,
                                                "detail": o.detail, "seconds": round(o.seconds, 2)} for o in outcomes],
                                              indent=1), encoding="utf-8")
    return 1 if any(o.kind == "mishandled" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
