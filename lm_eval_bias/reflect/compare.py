"""``lm-eval-bias reflect-compare``: REFLECT tables that compare two runs of the same photos — Table 7
(prompt framings P0–P2, App. C.1), Table 10 (letter-only vs explanation-augmented MCQ, App. C.4), Table 8
(two editors, App. C.2), App. B.2 mirroring (original vs mirrored photos) — and Table 4 (face–body gender
mismatch, one run), each value with a 95 % paired template-cluster bootstrap interval
(:mod:`lm_eval_bias.reflect.tables`).

Run folders are read as the report reads them (:func:`lm_eval_bias.report.runs.load_runs`: one run, or the
shards of one run, per task; records from the ``--log_samples`` files). Which tasks are compared:

- ``framing``: the 2AFC tasks of one scenario (``focus_2afc_<s>`` = P1, ``_p0``, ``_p2``); with one folder
  every pair of framings in it, with two folders each task of X against each task of Y of its scenario;
- ``format``: ``focus_mcq_<v>`` (letter, X) against ``focus_mcq_<v>_explained`` (E) of the same variant,
  in one folder or X's letter task against Y's explained task;
- ``editors`` / ``mirror``: the MCQ tasks of the same name in X and Y (two folders);
- ``face-body``: each letter MCQ task of one folder, with ``--source-gender``.

The report calls :func:`report_tables` for a folder holding framing variants or explained MCQ tasks.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import sys
from pathlib import Path
from typing import Any

TABLES = ("framing", "format", "editors", "mirror", "face-body")
TWO_RUNS = ("editors", "mirror")
PAPER = {"framing": "Table 7 (App. C.1)", "format": "Table 10 (App. C.4)", "editors": "Table 8 (App. C.2)",
         "mirror": "App. B.2 mirroring", "face-body": "Table 4 (App. B.2)"}
FRAMINGS = ("p0", "p2")


def _scenario(task: str) -> tuple[str, str] | None:
    """(scenario, framing) of a generated 2AFC task (``focus_2afc_income_p0`` -> (income, p0)), else None."""
    if not task.startswith("focus_2afc_") or task.endswith("_logprob"):
        return None
    name = task.removeprefix("focus_2afc_")
    for framing in FRAMINGS:
        if name.endswith(f"_{framing}"):
            return name.removesuffix(f"_{framing}"), framing
    return (None if "_k" in name else (name, "p1"))


def _variant(task: str) -> tuple[str, str] | None:
    """(variant, response format) of a letter or explained MCQ task, else None (k-sample tasks included
    as letter: they are the same prompt)."""
    if not task.startswith("focus_mcq_") or task.endswith("_logprob"):
        return None
    name = task.removeprefix("focus_mcq_")
    if name.endswith("_explained"):
        return name.removesuffix("_explained"), "explained"
    return name.split("_k")[0], "letter"


def _model(folder: str, notes: list[str] | None = None):
    """The one model's runs in ``folder`` (ModelRun); errors name the folder. What the runs' reading
    warned (duplicated or truncated samples files, mixed lm-eval versions) is added to ``notes``."""
    from lm_eval_bias.report.runs import load_runs

    models = load_runs([folder])
    if len(models) != 1:
        raise ValueError(f"{folder}: holds runs of {len(models)} models ({', '.join(m.label for m in models)}); "
                         "pass a folder of one model")
    if notes is not None:
        notes += [f"{folder}: {text}" for text in models[0].warnings]
    return models[0]


def coverage_notes(label: str, run_x, run_y) -> list[str]:
    """A note when the two runs compared do not hold the same docs (one samples file cut short, a
    --limit on one side): the tables compare what both hold, and the reader must know."""
    if run_y is None or run_x.records is None or run_y.records is None:
        return []
    n_x, n_y = len(run_x.records), len(run_y.records)
    ids_x = {r.get("pair_id") or r.get("doc_id") for r in run_x.records if isinstance(r, dict)}
    ids_y = {r.get("pair_id") or r.get("doc_id") for r in run_y.records if isinstance(r, dict)}
    if n_x == n_y and (ids_x == ids_y or None in ids_x | ids_y):
        return []
    only = ""
    if None not in ids_x | ids_y:
        only = f" ({len(ids_x - ids_y)} only in X, {len(ids_y - ids_x)} only in Y)"
    return [f"{label}: X has {n_x} docs, Y {n_y}{only}; only what both runs hold is paired (a samples file cut "
            "short, or a --limit on one side?)"]


def _records(run) -> list[dict[str, Any]]:
    """Records of a TaskRun, one per answer (K samples expanded); errors name the results file."""
    from lm_eval_bias.reflect.tasks import expand_samples

    where = ", ".join(run.sources) or run.task
    if run.records is None:
        raise ValueError(f"{where}: task {run.task} has no logged samples (samples_{run.task}_<stamp>.jsonl beside "
                         "it); rerun with --log_samples")
    if not run.records:
        raise ValueError(f"{where}: task {run.task} has an empty samples file")
    return expand_samples(run.records)


def _need(tasks: dict, folder: str, what: str, found: list[str]) -> None:
    if not found:
        raise ValueError(f"{folder}: no {what} task (tasks found: {', '.join(sorted(tasks)) or 'none'})")


def _calls(run):
    from lm_eval_bias.reflect.twoafc import TwoAFCCall

    return [TwoAFCCall.from_dict(r) for r in _records(run)]


def _mcq_setup(task: str):
    from lm_eval_bias.reflect.tasks import MCQ_OPTION_VALUES, MCQ_OPTIONS

    variant = _variant(task)[0]
    return MCQ_OPTIONS[variant], MCQ_OPTION_VALUES[variant]


def pairs(table: str, x: dict, y: dict | None, folder_x: str, folder_y: str | None) -> list[tuple[str, str]]:
    """(task of X, task of Y) pairs compared by ``table`` (``y`` None: within X)."""
    other = x if y is None else y
    if table == "framing":
        xs = {t: _scenario(t) for t in x if _scenario(t)}
        _need(x, folder_x, "2AFC (focus_2afc_<scenario>[_p0|_p2])", list(xs))
        if y is None:
            found = [(a, b) for a, b in itertools.combinations(sorted(xs, key=lambda t: (xs[t][0], xs[t][1])), 2)
                     if xs[a][0] == xs[b][0]]
            if not found:
                raise ValueError(f"{folder_x}: no two framings of one 2AFC scenario (found {', '.join(sorted(xs))}); "
                                 "run focus_2afc_<scenario>_p0/_p2 too, or pass a second folder")
            return found
        ys = {t: _scenario(t) for t in y if _scenario(t)}
        _need(y, folder_y, "2AFC", list(ys))
        found = [(a, b) for a in sorted(xs) for b in sorted(ys) if xs[a][0] == ys[b][0]]
    elif table == "format":
        letters = [t for t in x if _variant(t) and _variant(t)[1] == "letter" and "_k" not in t]
        explained = {t: _variant(t)[0] for t in other if _variant(t) and _variant(t)[1] == "explained"}
        _need(x, folder_x, "letter MCQ (focus_mcq_<variant>)", letters)
        _need(other, folder_y or folder_x, "explained MCQ (focus_mcq_<variant>_explained)", list(explained))
        found = [(a, b) for a in sorted(letters) for b in sorted(explained) if _variant(a)[0] == explained[b]]
    elif table in TWO_RUNS:
        if y is None:
            raise ValueError(f"--table {table} compares two folders (e.g. E1 and E2 photos, original and mirrored); "
                             "pass RUN_Y")
        mcq = [t for t in x if _variant(t)]
        _need(x, folder_x, "MCQ (focus_mcq_*)", mcq)
        found = [(t, t) for t in sorted(mcq) if t in y]
    else:
        raise ValueError(f"unknown table {table!r}; one of {', '.join(TABLES)}")
    if not found:
        raise ValueError(f"{folder_x}{' and ' + folder_y if folder_y else ''}: no tasks to compare for --table "
                         f"{table} (X: {', '.join(sorted(x))}; Y: {', '.join(sorted(other))})")
    return found


def compare_tasks(table: str, run_x, run_y, n_boot: int, seed: int, source_gender: dict | None = None):
    """ComparisonSummary of ``table`` for TaskRuns ``run_x``/``run_y`` (``run_y`` None for face-body)."""
    from lm_eval_bias.reflect import tables as rt

    if table == "framing":
        return rt.framing_summary(_calls(run_x), _calls(run_y), n_boot, seed)
    options, values = _mcq_setup(run_x.task)
    if table == "face-body":
        return rt.face_body_summary(_records(run_x), source_gender or {}, options, values, n_boot, seed)
    fn = {"format": rt.format_summary, "editors": rt.editor_summary, "mirror": rt.mirror_summary}[table]
    return fn(_records(run_x), _records(run_y), options, values, n_boot, seed)


def read_source_gender(path: str) -> dict[str, str]:
    """``{template: man|woman}`` from a JSON object or a CSV with columns ``template`` and ``gender``."""
    from lm_eval_bias.core.safe_io import read_text_file

    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"{path}: --source-gender file not found")
    text = read_text_file(file, "--source-gender file")  # UTF-8 (BOM dropped) or an error naming the file
    if file.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{path}: --source-gender is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object {{template: gender}}")
        return {str(k): str(v) for k, v in data.items()}
    rows = list(csv.DictReader(text.splitlines()))
    if not rows or not {"template", "gender"} <= set(rows[0]):
        raise ValueError(f"{path}: expected CSV columns template,gender")
    return {r["template"]: r["gender"] for r in rows}


def compare(table: str, folder_x: str, folder_y: str | None = None, source_gender: dict | None = None,
            n_boot: int | None = None, seed: int | None = None, notes: list[str] | None = None) -> list[dict[str, Any]]:
    """Rows (one per comparison and key) of ``table`` for run folders X (and Y). ``notes`` (a list,
    when given) receives what the reader must know: reading warnings, runs of unequal coverage."""
    notes = [] if notes is None else notes
    from lm_eval_bias.core.aggregation import bootstrap_settings

    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; one of {', '.join(TABLES)}")
    iters, default_seed = bootstrap_settings()
    n_boot = iters if n_boot is None else n_boot
    seed = default_seed if seed is None else seed
    if table == "face-body":
        if source_gender is None:
            raise ValueError("--table face-body needs --source-gender FILE ({template: man|woman}: FOCUS does not "
                             "record the source photo's gender)")
        if folder_y is not None:
            raise ValueError("--table face-body reads one folder")
        x = _model(folder_x, notes).tasks
        tasks = [t for t in sorted(x) if _variant(t) and _variant(t)[1] == "letter"]
        _need(x, folder_x, "letter MCQ (focus_mcq_<variant>)", tasks)
        todo = [(t, None) for t in tasks]
        y = None
    else:
        x = _model(folder_x, notes).tasks
        y = _model(folder_y, notes).tasks if folder_y is not None else None
        todo = pairs(table, x, y, folder_x, folder_y)
    rows = []
    for a, b in todo:
        s = compare_tasks(table, x[a], None if b is None else (y or x)[b], n_boot, seed, source_gender)
        label = a if b is None else (f"{a} vs {b}" if y is None else f"{a} (X) vs {b} (Y)")
        if y is not None and b is not None:
            notes += coverage_notes(label, x[a], y[b])
        for row in s.rows():
            rows.append({"table": table, "comparison": label, "task_x": a, "task_y": b or "", **row,
                         "n_templates": s.n_templates, "resampling_unit": s.unit})
        for key, value in s.extra.items():
            rows.append({"table": table, "comparison": label, "task_x": a, "task_y": b or "", "key": key,
                         "value": value, "ci_low": math.nan, "ci_high": math.nan, "stderr": math.nan, "n": None,
                         "reason": "the paper's Wilson interval (photos as independent draws)",
                         "n_templates": s.n_templates, "resampling_unit": "photo"})
    return rows


def _fmt(v: Any) -> str:
    return "NaN" if isinstance(v, float) and not math.isfinite(v) else (f"{v:.4g}" if isinstance(v, float) else str(v))


def markdown(rows: list[dict[str, Any]]) -> str:
    """A small markdown table: comparison, key, value [ci_low, ci_high], n, note."""
    lines = ["| comparison | key | value [95 % CI] | n | note |", "|---|---|---|---|---|"]
    for r in rows:
        ci = f" [{_fmt(r['ci_low'])}, {_fmt(r['ci_high'])}]" if math.isfinite(r["ci_low"]) else ""
        lines.append(f"| {r['comparison']} | {r['key']} | {_fmt(r['value'])}{ci} | {'' if r['n'] is None else r['n']} "
                     f"| {r['reason']} |")
    return "\n".join(lines)


def _json_safe(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


def write(rows: list[dict[str, Any]], table: str, output: str | Path, notes: list[str] | None = None) -> tuple[Path, Path]:
    """``reflect_<table>.csv`` and ``.json`` (with ``notes``) in ``output``, both or neither (written into
    a temporary folder, then each renamed into place)."""
    import io

    from lm_eval_bias.core.safe_io import staged_folder

    out = Path(output)
    name = f"reflect_{table.replace('-', '_')}"
    fields = list(rows[0]) if rows else ["table", "comparison", "key", "value", "ci_low", "ci_high", "n", "reason"]
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    payload = json.dumps({"table": table, "paper": PAPER[table], "notes": list(notes or []),
                          "rows": [{k: _json_safe(v) for k, v in r.items()} for r in rows]}, indent=2)
    with staged_folder(out) as stage:
        (stage / f"{name}.csv").write_text(buffer.getvalue(), encoding="utf-8", newline="")
        (stage / f"{name}.json").write_text(payload, encoding="utf-8")
    return out / f"{name}.csv", out / f"{name}.json"


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lm-eval-bias reflect-compare",
        description="REFLECT tables comparing two runs of the same photos, each value with a 95 % paired "
                    "template-cluster bootstrap interval: framing (Table 7: P0/P1/P2 2AFC prompts), format (Table "
                    "10: letter vs explained MCQ), editors (Table 8: MCQ on two editors' photos), mirror (App. B.2: "
                    "original vs mirrored photos), face-body (Table 4: one run, --source-gender). Needs --log_samples "
                    "output. Docs: docs/reflect.md#reflect-compare.")
    parser.add_argument("run_x", metavar="RUN_X", help="lm-eval --output_path folder (X: P1, letter, E1, original)")
    parser.add_argument("run_y", metavar="RUN_Y", nargs="?",
                        help="second folder (Y); omit for framing/format when RUN_X holds both tasks")
    parser.add_argument("--table", required=True, choices=TABLES)
    parser.add_argument("--output", metavar="DIR", help="folder for reflect_<table>.csv and .json")
    parser.add_argument("--source-gender", dest="source_gender", metavar="FILE",
                        help="face-body: JSON {template: man|woman} or CSV template,gender of each source photo")
    return parser


def main(argv: list[str]) -> int:
    args = make_parser().parse_args(argv)
    notes: list[str] = []
    try:
        if args.output:
            from lm_eval_bias.core.safe_io import check_output_folder

            check_output_folder(args.output)
        gender = read_source_gender(args.source_gender) if args.source_gender else None
        rows = compare(args.table, args.run_x, args.run_y, gender, notes=notes)
        written = write(rows, args.table, args.output, notes) if args.output else ()
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: reflect-compare: {exc}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"warning: {note}", file=sys.stderr)
    print(f"{PAPER[args.table]}: 95 % paired template-cluster bootstrap intervals")
    print(markdown(rows))
    for path in written:
        print(f"wrote {path}")
    return 0


# -- report ---------------------------------------------------------------------------------------------------
def report_tables(runs: list, w, part) -> None:
    """Table 7 / Table 10 blocks for a model whose tasks include framing variants or explained MCQ tasks."""
    import pandas as pd

    from lm_eval_bias.core.aggregation import bootstrap_settings

    tasks = {r.task: r for r in runs if r.records}
    iters, seed = bootstrap_settings()
    for table, caption in (("framing", "Table 7 (App. C.1): 2AFC prompt framings P0/P1/P2 of the same pairs — kept "
                                       "rates, flip rate of pairs retained under both, Spearman ρ of the 45 win-rate "
                                       "cells"),
                           ("format", "Table 10 (App. C.4): letter-only (L) vs explanation-augmented (E) MCQ on the "
                                      "same photos — validity, per-photo agreement, JSD shift, mean option difference "
                                      "(E − L)")):
        try:
            todo = pairs(table, tasks, None, "run", None)
        except ValueError:
            continue
        rows = []
        for a, b in todo:
            try:
                s = compare_tasks(table, tasks[a], tasks[b], iters, seed)
            except Exception as exc:  # noqa: BLE001 - a partial run must not stop the report
                part.warnings.append(f"{a} vs {b}: {table} comparison not computed ({type(exc).__name__}: {exc})")
                continue
            for r in s.rows():
                rows.append({"comparison": f"{a} vs {b}", "key": r["key"], "estimate": r["value"],
                             "ci95_low": r["ci_low"], "ci95_high": r["ci_high"], "n": r["n"], "note": r["reason"]})
        if rows:
            frame = pd.DataFrame(rows).set_index(["comparison", "key"])
            part.details.append(w.table(frame, f"reflect_{table}", caption + "; 95 % paired template-cluster "
                                        "bootstrap intervals (`lm-eval-bias reflect-compare --table " + table + "`)."))


__all__ = ["TABLES", "compare", "main", "markdown", "pairs", "read_source_gender", "report_tables", "write"]
