"""Import the VIGNETTE authors' released model outputs as this project's logged samples.

The authors (chahatraj/Vignette) released LLaVA-1.6 answers as CSV files,
``outputs/<model>_results/<paradigm folder>/flux/<axis>/<...>_responses.csv``, one row per question
on one pair image, answers constrained to the option strings with Outlines. This module turns those
rows into the per-doc records the VIGNETTE tasks log (``lm_eval_bias.vignette.tasks.process_results``)
and writes them in lm-eval's ``--log_samples`` layout (``samples_<task>_<stamp>.jsonl`` beside
``results_<stamp>.json``), so :mod:`lm_eval_bias.samples`, the statistics and ``lm-eval-bias report``
run on them unchanged::

    lm-eval-bias vignette-import Vignette/outputs --output released/

Layouts read (one per paradigm folder; the columns decide, never the file name):

- stereotype (``socialassumptions``): ``filename, descriptor 1, descriptor 2, taxonomy, term,
  direction, question_id, response, options, gender, axis`` -> task ``vignette_stereotype_authors``;
- perception, identity-choice questions (``assumptions``): ``filename, descriptor 1, descriptor 2,
  activity, question_id, response, options, gender, axis``, the parameter read from the question
  ("Who is facing difficulty in" = struggle, "Who is better at" = capability, "Who enjoys" =
  enjoyment, "Who hates" = dislike) -> task ``vignette_perception_authors`` (records only: the
  authors' protocol is not a task of its own for perception, so these records carry the
  ``vignette_perception`` result keys);
- decision (``decisionmaking``, none released so far): ``... activity, category, role, question_id,
  question, response, options ...`` -> ``vignette_decision_authors``.

- factuality (``factuality``): ``filename, question_id, descriptor 1, descriptor 2, activity,
  response, options`` ("What is the <identity> doing in this image?", four activity options), axis and
  gender from the file name ``setting<k>_<axis>_<gender>_<model>_responses.csv`` (the files have no such
  columns) -> ``vignette_factuality_authors`` (records only; ``correct`` = the answer is the pair's
  activity).

Every other ``*_responses.csv`` is listed as skipped with its reason, never read partly. A row whose answer is not exactly one of its options is kept as ``invalid`` (counted by
``invalid_rate``, left out of the selection frequencies), never guessed; a malformed row (missing
column, unreadable option list, option not one of the two descriptors) stops the import with its
file and line.
"""

from __future__ import annotations

import ast
import csv
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

#: the released answers are LLaVA-1.6 (src/decisionmaking.py: ``llava-hf/llava-v1.6-vicuna-7b-hf``)
MODEL_BY_FOLDER = {"llava_results": "llava-hf/llava-v1.6-vicuna-7b-hf"}
#: how the imported pairs were chosen and asked (records' ``pair_sampling`` / ``protocol``)
PAIR_SAMPLING = "exhaustive"
PROTOCOL = "authors_released"
BACKEND = "vignette-released"
PERCEPTION_PREFIXES = {"who is facing difficulty in": "struggle", "who is better at": "capability",
                       "who enjoys": "enjoyment", "who hates": "dislike"}
_STEREOTYPE = {"filename", "descriptor 1", "descriptor 2", "taxonomy", "term", "direction", "response", "options",
               "gender", "axis"}
_PERCEPTION = {"filename", "descriptor 1", "descriptor 2", "activity", "question_id", "response", "options", "gender",
               "axis"}
_DECISION = _PERCEPTION | {"question", "role"}
#: factuality (``factuality/flux/setting1_<axis>_<gender>_llava_responses.csv``): no gender / axis columns
_FACTUALITY = {"filename", "question_id", "descriptor 1", "descriptor 2", "activity", "response", "options"}
_FACTUALITY_QUESTION = re.compile(r"what is the (.+?) doing in this image\??", re.IGNORECASE)
_FACTUALITY_FILE = re.compile(r"setting\d+_(?:\d[ab]_)?(?P<axis>[a-z_]+?)_(?P<gender>male|female)_[a-z0-9]+_responses\.csv")


class ReleasedFormatError(ValueError):
    """A released file cannot be imported: ``FILE:LINE: reason``."""


@dataclass
class ImportSummary:
    """What :func:`import_released` wrote: task -> records, files read, files skipped (with why)."""

    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    files: dict[str, list[str]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)


def _layout(columns: set[str]) -> str | None:
    if _STEREOTYPE <= columns:
        return "stereotype"
    if _DECISION <= columns:
        return "decision"
    if _PERCEPTION <= columns:
        return "perception"
    if _FACTUALITY <= columns:
        return "factuality"
    return None


def _options(raw: str, where: str, people: tuple[str, str]) -> list[str]:
    try:
        options = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        raise ReleasedFormatError(f"{where}: options {raw!r} is not a list literal") from None
    if not isinstance(options, list) or sorted(map(str, options)) != sorted(people):
        raise ReleasedFormatError(f"{where}: options {raw!r} are not the two descriptors {list(people)}")
    return [str(o) for o in options]


def _activities_of(filename: str) -> tuple[str, str]:
    """The two activities of a pair file name ``<d1>_<a1>--<d2>_<a2>.png`` (dashes as spaces)."""
    left, _, right = filename[:-len(".png")].partition("--") if filename.endswith(".png") else (filename, "", "")
    return tuple(part.rsplit("_", 1)[1].replace("-", " ") if "_" in part else "" for part in (left, right))  # type: ignore[return-value]


def _perception_parameter(question: str) -> str | None:
    q = question.strip().lower()
    return next((p for prefix, p in PERCEPTION_PREFIXES.items() if q.startswith(prefix)), None)


def record_of(row: dict[str, str], layout: str, where: str) -> dict[str, Any]:
    """The plugin record (``tasks.vignette.process_results`` layout) of one released row."""
    people = (row["descriptor 1"].strip(), row["descriptor 2"].strip())
    if not all(people) or people[0] == people[1]:
        raise ReleasedFormatError(f"{where}: needs two different descriptors, got {list(people)}")
    if layout == "factuality":
        return _factuality_record(row, where, people)
    options = _options(row["options"], where, people)
    gender, axis, filename = row["gender"].strip(), row["axis"].strip(), row["filename"].strip()
    left_activity = right_activity = ""
    direction = ""
    if layout == "stereotype":
        paradigm, kind, parameter, context = "stereotype", "portrait", row["taxonomy"].strip(), row["term"].strip()
        direction = row["direction"].strip().lower()
        if direction not in ("high", "low"):
            raise ReleasedFormatError(f"{where}: direction must be high or low, got {row['direction']!r}")
    elif layout == "perception":
        parameter = _perception_parameter(row["question_id"])
        if parameter is None:
            raise ReleasedFormatError(f"{where}: not a perception identity question: {row['question_id']!r}")
        paradigm, context = "perception", row["activity"].strip()
        left_activity, right_activity = _activities_of(filename)
        kind = "identity" if left_activity == right_activity else "identity_activity"
    else:
        paradigm, kind, parameter, context = "decision", "identity", row["question_id"].strip(), row["activity"].strip()
        left_activity = right_activity = context
    response = (row.get("response") or "").strip()
    valid = response in options
    doc_id = f"released|{paradigm}|{gender}|{filename}|{parameter}|{context}"
    return {
        "doc_id": doc_id, "pair_id": f"released:{gender}:{filename}", "paradigm": paradigm, "pair_kind": kind,
        "gender": gender, "dimension": axis, "left": people[0], "right": people[1], "left_activity": left_activity,
        "right_activity": right_activity, "question_type": "identity_choice", "parameter": parameter,
        "context": context, "options": options, "option_identity": options[:], "option_activity": ["", ""],
        "target": "", "asked": context if paradigm == "perception" else "", "direction": direction,
        "pair_sampling": PAIR_SAMPLING, "protocol": PROTOCOL,
        "status": "valid" if valid else "invalid",
        "reason": "" if valid else f"released answer {response!r} is not one of the options",
        "extraction": "strict", "chosen": response if valid else None,
        "chosen_identity": response if valid else None, "chosen_activity": None, "correct": None,
    }


def _factuality_record(row: dict[str, str], where: str, people: tuple[str, str]) -> dict[str, Any]:
    """A released factuality row ("What is the <identity> doing in this image?", four activity options,
    the pair's true ``activity``) as the record of a ``vignette_factuality`` ``what_doing`` doc."""
    asked_match = _FACTUALITY_QUESTION.fullmatch(row["question_id"].strip())
    asked = asked_match.group(1).strip() if asked_match else ""
    if asked not in people:
        raise ReleasedFormatError(f"{where}: question {row['question_id']!r} does not ask about {list(people)}")
    try:
        options = ast.literal_eval(row["options"])
    except (ValueError, SyntaxError):
        raise ReleasedFormatError(f"{where}: options {row['options']!r} is not a list literal") from None
    activity = row["activity"].strip()
    if not isinstance(options, list) or len(options) < 2 or activity not in map(str, options):
        raise ReleasedFormatError(f"{where}: options {row['options']!r} do not include the activity {activity!r}")
    options = [str(o) for o in options]
    filename, response = row["filename"].strip(), (row.get("response") or "").strip()
    valid = response in options
    return {
        "doc_id": f"released|factuality|{row['gender']}|{filename}|what_doing|{asked}", "pair_id":
        f"released:{row['gender']}:{filename}", "paradigm": "factuality", "pair_kind": "identity",
        "gender": row["gender"], "dimension": row["axis"], "left": people[0], "right": people[1],
        "left_activity": activity, "right_activity": activity, "question_type": "what_doing", "parameter": "",
        "context": activity, "options": options, "option_identity": [""] * len(options), "option_activity": options[:],
        "target": activity, "asked": asked, "direction": "", "pair_sampling": PAIR_SAMPLING, "protocol": PROTOCOL,
        "status": "valid" if valid else "invalid",
        "reason": "" if valid else f"released answer {response!r} is not one of the options",
        "extraction": "strict", "chosen": response if valid else None, "chosen_identity": None,
        "chosen_activity": response if valid else None, "correct": (response == activity) if valid else None,
    }


def read_released(paths: Iterable[str | Path]) -> ImportSummary:
    """Records of every ``*_responses.csv`` under ``paths`` (files or folders), by task."""
    summary = ImportSummary()
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(path.rglob("*_responses.csv"))
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    if not files:
        raise FileNotFoundError(f"no *_responses.csv under {', '.join(map(str, paths))}")
    seen: dict[str, str] = {}
    for file in files:
        import io

        from lm_eval_bias.core.safe_io import InputError, read_text_file

        try:  # UTF-8 only (a byte-order mark is dropped): other encodings are refused, naming the file
            text = read_text_file(file, "released CSV")
        except InputError as exc:
            raise ReleasedFormatError(str(exc)) from None
        with io.StringIO(text, newline="") as handle:
            reader = csv.DictReader(handle)
            layout = _layout(set(reader.fieldnames or ()))
            if layout is None:
                summary.skipped.append(f"{file}: columns {reader.fieldnames} are not a stereotype, perception "
                                       "(identity choice) or decision layout")
                continue
            task = f"vignette_{layout}_authors"
            from_name = _FACTUALITY_FILE.fullmatch(file.name) if layout == "factuality" else None
            if layout == "factuality" and from_name is None:
                summary.skipped.append(f"{file}: a factuality file needs its axis and gender in the name "
                                       "(setting<k>_<axis>_<male|female>_<model>_responses.csv); file not imported")
                continue
            out: list[dict[str, Any]] = []
            added: list[str] = []
            complete = True
            for line, row in enumerate(reader, 2):
                where = f"{file}:{line}"
                missing = [c for c in (reader.fieldnames or ()) if row.get(c) is None]
                if missing:
                    raise ReleasedFormatError(f"{where}: row has fewer fields than the header (missing {missing})")
                if None in row:
                    raise ReleasedFormatError(f"{where}: row has more fields than the header")
                if layout == "perception" and _perception_parameter(row["question_id"]) is None:
                    summary.skipped.append(f"{where}: question {row['question_id']!r} is not one of the perception "
                                           f"identity questions ({', '.join(PERCEPTION_PREFIXES)}); file not imported")
                    complete = False
                    break
                if from_name is not None:  # factuality files carry no gender / axis column
                    row = {**row, "gender": from_name["gender"], "axis": from_name["axis"]}
                record = record_of(row, layout, where)
                if record["doc_id"] in seen:
                    raise ReleasedFormatError(f"{where}: the same question on the same pair is also at {seen[record['doc_id']]}")
                seen[record["doc_id"]] = where
                added.append(record["doc_id"])
                out.append(record)
        if not complete:  # a file is imported whole or not at all
            for doc_id in added:
                del seen[doc_id]
            continue
        summary.records.setdefault(task, []).extend(out)
        summary.files.setdefault(task, []).append(str(file))
    return summary


def _model_of(files: list[str], model: str | None) -> str:
    if model:
        return model
    found = {MODEL_BY_FOLDER[p] for f in files for p in Path(f).parts if p in MODEL_BY_FOLDER}
    if len(found) != 1:
        raise ReleasedFormatError(f"cannot tell the model from the paths ({sorted(found) or 'no <model>_results folder'}); "
                           "pass --model")
    return found.pop()


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", name)


def write_samples(summary: ImportSummary, output: str | Path, model: str | None = None,
                  stamp: str | None = None) -> list[Path]:
    """Write each task's records as lm-eval logged samples plus a results JSON under
    ``output/<model>/`` (``model``: the released model, read from the ``<model>_results`` folder when
    not given). The results JSON says the backend ``vignette-released`` (so the run is never taken
    for, or merged with, a model run of this project), the model, and the tasks' metadata
    (``pair_sampling: exhaustive``, ``protocol: authors_released``, the source files); its result
    values are computed from the records by the tasks' own aggregation."""
    from lm_eval_bias.core.safe_io import staged_folder

    stamp = stamp or datetime.now().isoformat().replace(":", "-")
    with staged_folder(output) as stage:  # every file appears when all are written, or none does
        written = _write_samples(summary, stage, model, stamp)
    summary.written = sorted({Path(output) / p.relative_to(stage) for p in written})
    return summary.written


def _write_samples(summary: ImportSummary, output: Path, model: str | None, stamp: str) -> list[Path]:
    from lm_eval_bias import samples

    written: list[Path] = []
    for task, records in summary.records.items():
        if not records:
            continue
        name = _model_of(summary.files[task], model)
        folder = Path(output) / _sanitize(name)
        folder.mkdir(parents=True, exist_ok=True)
        key = samples._record_key(task)
        sample_file = folder / f"samples_{task}_{stamp}.jsonl"
        with open(sample_file, "w", encoding="utf-8") as handle:
            for k, record in enumerate(records):
                doc = {f: record[f] for f in ("doc_id", "pair_id", "paradigm", "gender", "dimension", "left", "right",
                                               "context", "parameter", "options")}
                handle.write(json.dumps({"doc_id": k, "doc": doc, "target": "", "filtered_resps": [record["chosen"] or ""],
                                         key: record}, ensure_ascii=False) + "\n")
        values = samples.result_values(task, records)
        results = {
            "results": {task: {"alias": task, **{f"{k},none": v for k, v in values.items()}}},
            "configs": {task: {"task": task, "metadata": {
                "version": 1.0, "pair_sampling": PAIR_SAMPLING, "protocol": PROTOCOL,
                "source": "chahatraj/Vignette released outputs", "files": summary.files[task]}}},
            "versions": {task: 1.0},
            "n-samples": {task: {"original": len(records), "effective": len(records)}},
            "config": {"model": BACKEND, "model_args": {"pretrained": name}},
            "date": stamp,
        }
        results_file = folder / f"results_{stamp}.json"
        if results_file.exists():  # several tasks of one import: one results JSON per stamp, merged
            old = json.loads(results_file.read_text(encoding="utf-8"))
            for part in ("results", "configs", "versions", "n-samples"):
                old.setdefault(part, {}).update(results[part])
            results = old
        results_file.write_text(json.dumps(results, indent=2, default=float, ensure_ascii=False), encoding="utf-8")
        written += [sample_file, results_file]
    return written


def import_released(paths: Iterable[str | Path], output: str | Path, model: str | None = None,
                    stamp: str | None = None) -> ImportSummary:
    """:func:`read_released` then :func:`write_samples`."""
    summary = read_released(paths)
    write_samples(summary, output, model, stamp)
    return summary


def main(argv: list[str] | None = None) -> int:
    """``lm-eval-bias vignette-import DIR... --output OUT [--model NAME]``."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="lm-eval-bias vignette-import",
        description="Import the VIGNETTE authors' released model outputs (outputs/<model>_results/.../*_responses.csv "
                    "of chahatraj/Vignette) as logged samples that `lm-eval-bias report` and lm_eval_bias.samples read.")
    parser.add_argument("paths", nargs="+", help="released *_responses.csv files or folders holding them")
    parser.add_argument("--output", required=True, help="folder to write <model>/samples_*.jsonl and results_*.json into")
    parser.add_argument("--model", help="model name (default: from the <model>_results folder, e.g. llava-hf/llava-v1.6-vicuna-7b-hf)")
    args = parser.parse_args(argv)
    try:
        summary = import_released(args.paths, args.output, args.model)
    except (FileNotFoundError, ValueError) as exc:  # ReleasedFormatError, InputError: nothing was written
        print(f"error: vignette-import: {exc}", file=sys.stderr)
        return 2
    for task, records in summary.records.items():
        valid = sum(r["status"] == "valid" for r in records)
        print(f"{task}: {len(records)} records ({valid} valid) from {len(summary.files[task])} files")
    for line in summary.skipped:
        print(f"skipped {line}")
    for path in summary.written:
        print(f"wrote {path}")
    return 0
