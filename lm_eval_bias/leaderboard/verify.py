"""The checks a run must pass to enter a leaderboard, shared by ``submit`` (before packaging) and
``leaderboard build`` (again, on every submission, trusting nothing but the files).

A run folder (lm-eval's ``--output_path`` with ``--log_samples``) is accepted when:

1. **one model**: every results JSON names the same model (:func:`lm_eval_bias.samples.model_label`:
   ``pretrained=`` / ``model=``, ``[guided]``, ``[lenient]``, ``[logprob]`` marks) and backend;
2. **complete**: no ``--limit`` (``config.limit`` null), every task's ``n-samples`` effective equal to
   original (``--samples`` picks docs too), and its samples file holds exactly that many lines, one per
   doc (no doc twice);
3. **one setting**: one answer extraction (the docs' ``extraction``: strict or lenient) and one scoring
   method (generated answers, or letter probabilities for ``*_logprob`` tasks) across all its tasks;
4. **datasets identified**: every doc's data location is a pinned Hub copy (``<id>@<commit>``) or a
   folder, and each is identified by the sha256 of its data files' manifest
   (:func:`lm_eval_bias.core.data.dataset_identity`);
5. **results from its samples**: every number the results JSON holds for a plugin task is recomputed
   from the logged samples (:func:`lm_eval_bias.samples.result_values`, with the run's resampling
   settings) and must agree (relative tolerance 1e-9).

Every failure is a :class:`SubmissionError` whose message is the reason, one line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

#: environment settings the plugin's resampling reads (intervals, null floors): recorded with a
#: submission and applied when its results are recomputed
RESAMPLING_ENV = ("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "LM_EVAL_BIAS_BOOTSTRAP_SEED", "LM_EVAL_BIAS_NULL_ITERS")
#: datasets each task family reads (names of :data:`lm_eval_bias.core.data.DEFAULT_HUB_IDS`)
FAMILY_DATASETS = {"2afc": ("focus",), "mcq": ("focus",), "salary": ("focus", "focus_bios"),
                   "fact_or_fair": ("fact_or_fair",), "cf_vqa": ("cf_vqa",), "vignette": ("vignette",)}
REL_TOL = 1e-9


class SubmissionError(ValueError):
    """A run or submission that a leaderboard must not take; the message says why."""


@dataclass
class TaskCheck:
    """One task of a checked run."""

    task: str
    results_file: Path
    samples_file: Path
    docs: int
    doc_ids_sha256: str
    extraction: str
    method: str
    locations: list[str]  # the data locations the docs name (``images_from``)
    n_checked: int  # result values recomputed and equal


@dataclass
class RunCheck:
    """A run that passed every check."""

    model: str
    backend: str
    model_args: dict[str, Any]
    results: list[dict[str, Any]]
    tasks: dict[str, TaskCheck] = field(default_factory=dict)

    @property
    def settings(self) -> dict[str, str]:
        first = next(iter(self.tasks.values()))
        return {"answer_extraction": first.extraction, "method": first.method}


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def resampling_settings(settings: dict[str, str | None] | None) -> Iterator[None]:
    """The process environment with ``settings`` (:data:`RESAMPLING_ENV` names) applied, restored after."""
    from lm_eval_bias.core.aggregation import environment

    with environment({} if settings is None else {name: settings.get(name) for name in RESAMPLING_ENV}):
        yield


def current_resampling_settings() -> dict[str, str | None]:
    return {name: os.environ.get(name) for name in RESAMPLING_ENV}


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SubmissionError(f"{path.name}: not a readable JSON file ({exc})") from None
    if not isinstance(value, dict) or not isinstance(value.get("results", {}), dict):
        raise SubmissionError(f"{path.name}: not a results JSON (an object whose 'results' is an object)")
    return value


def _plugin_tasks(results: dict[str, Any]) -> list[str]:
    from lm_eval_bias.report.runs import _is_plugin_task

    return [t for t in (results.get("results") or {}) if _is_plugin_task(t, results)]


def _sample_lines(path: Path, task: str) -> list[dict[str, Any]]:
    lines = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            lines.append(json.loads(line))
        except ValueError:
            raise SubmissionError(f"{task}: {path.name}:{number}: not a JSON line (a truncated or edited samples "
                                  "file)") from None
        if not isinstance(lines[-1], dict):
            raise SubmissionError(f"{task}: {path.name}:{number}: expected a JSON object, got "
                                  f"{json.dumps(lines[-1])[:40]} (an edited samples file)")
    return lines


def _doc_id(sample: dict[str, Any]) -> str:
    doc = sample.get("doc")
    if isinstance(doc, dict) and "doc_id" in doc:
        return str(doc["doc_id"])
    return str(sample.get("doc_hash") or json.dumps(doc, sort_keys=True, default=str))


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def recompute_results(task: str, results: dict[str, Any], samples_file: Path) -> int:
    """Compare every numeric result of ``task`` in ``results`` with the value recomputed from
    ``samples_file``; returns how many were compared. Whatever keys the results hold are checked (a
    headline-only results JSON, or every key)."""
    from lm_eval_bias import samples

    reported = {}
    for key, value in ((results.get("results") or {}).get(task) or {}).items():
        if "," not in key or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # "N/A", alias, name, sample_len
        reported[key.split(",", 1)[0]] = float(value)
    if not reported:
        raise SubmissionError(f"{task}: the results JSON holds no result values")
    try:
        records = samples.read_records([samples_file], task)
        values = samples.result_values(task, records)
        if any(key not in values for key in reported):
            values = {**values, **samples.result_values(task, records, tables=True)}
    except (ValueError, KeyError, TypeError) as exc:
        raise SubmissionError(f"{task}: its samples cannot be read back into records ({exc})") from None
    for key, value in reported.items():
        if key not in values:
            raise SubmissionError(f"{task}: result {key!r} cannot be recomputed from the samples")
        if not _same(value, float(values[key])):
            raise SubmissionError(f"{task}: result {key} = {value!r} in the results JSON, but {values[key]!r} "
                                  "recomputed from the samples (an edited result, or samples of another run)")
    return len(reported)


def check_run(run_dir: str | os.PathLike, resampling: dict[str, str | None] | None = None) -> RunCheck:
    """Apply the module's checks to the lm-eval output folder ``run_dir``; :class:`SubmissionError`
    with the first reason it fails."""
    from lm_eval_bias import samples
    from lm_eval_bias.core.redaction import redact_model_args

    root = Path(run_dir)
    if not root.is_dir():
        raise SubmissionError(f"{root}: no such folder")
    files = sorted(root.rglob("results_*.json"))
    if not files:
        raise SubmissionError(f"{root}: no results_*.json (not an lm-eval --output_path folder?)")
    check: RunCheck | None = None
    for file in files:
        results = _read_json(file)
        config = results.get("config") or {}
        label = samples.model_label(results)
        args = config.get("model_args") or {}
        if isinstance(args, str):
            from lm_eval.utils import simple_parse_args_string

            args = simple_parse_args_string(args) if args.strip() else {}
        args = redact_model_args(args)
        if check is None:
            check = RunCheck(label, str(config.get("model")), args, [])
        elif (label, str(config.get("model")), args) != (check.model, check.backend, check.model_args):
            raise SubmissionError(f"several models in one run folder: {check.model!r} and {label!r} "
                                  f"({file.name}); submit one model at a time")
        check.results.append(results)
        if config.get("limit") is not None:
            limit = config["limit"]
            shown = f"{limit:g}" if isinstance(limit, (int, float)) else limit
            raise SubmissionError(f"{file.name}: run with --limit {shown}; a leaderboard takes complete "
                                  "runs only (rerun without --limit)")
        stamp = file.stem[len("results_"):]
        tasks = _plugin_tasks(results)
        if not tasks:
            raise SubmissionError(f"{file.name}: no lm-eval-bias task in it")
        for task in tasks:
            if task in check.tasks:
                raise SubmissionError(f"{task}: in two runs ({check.tasks[task].results_file.name}, {file.name}); "
                                      "keep one")
            counts = (results.get("n-samples") or {}).get(task) or {}
            original, effective = counts.get("original"), counts.get("effective")
            if original is None or effective != original:
                raise SubmissionError(f"{task}: {effective} of {original} docs evaluated (--limit or --samples); a "
                                      "leaderboard takes complete runs only")
            sample_file = file.parent / f"samples_{task}_{stamp}.jsonl"
            if not sample_file.is_file():
                raise SubmissionError(f"{task}: no {sample_file.name} beside {file.name} (run with --log_samples)")
            lines = _sample_lines(sample_file, task)
            ids = [_doc_id(s) for s in lines]
            if len(set(ids)) != len(ids):
                raise SubmissionError(f"{task}: a doc occurs twice in {sample_file.name}")
            if len(ids) != original:
                raise SubmissionError(f"{task}: {len(ids)} of {original} docs in {sample_file.name} (a dropped or "
                                      "added sample)")
            docs = [s.get("doc") or {} for s in lines]
            extraction = {str(d.get("extraction") or "strict") for d in docs if isinstance(d, dict)} or {"strict"}
            if len(extraction) > 1:
                raise SubmissionError(f"{task}: docs of several answer extractions ({', '.join(sorted(extraction))})")
            with resampling_settings(resampling):
                n_checked = recompute_results(task, results, sample_file)
            check.tasks[task] = TaskCheck(
                task, file, sample_file, len(ids), hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest(),
                extraction.pop(), "logprob" if samples.is_logprob_task(task) else "generate",
                sorted({str(d["images_from"]) for d in docs if isinstance(d, dict) and d.get("images_from")}), n_checked)
    assert check is not None
    for what in ("extraction", "method"):
        found = {getattr(t, what): t.task for t in check.tasks.values()}
        if len(found) > 1:
            listing = ", ".join(f"{value} ({task})" for value, task in sorted(found.items()))
            name = "answer extraction" if what == "extraction" else "scoring method"
            raise SubmissionError(f"mixed settings: {name} {listing}; a submission has one setting")
    return check


def datasets_of(task: TaskCheck) -> dict[str, str]:
    """{dataset name: location} a checked task read: the docs' ``images_from`` for the task's first
    dataset, the location the plugin resolves now for the others (REFLECT salary's biographies)."""
    from lm_eval_bias import samples
    from lm_eval_bias.core import data

    names = FAMILY_DATASETS.get(samples.task_family(task.task), ())
    out = {}
    for index, name in enumerate(names):
        if index == 0 and task.locations:
            if len(task.locations) > 1:
                raise SubmissionError(f"{task.task}: docs from several copies of {name}: {', '.join(task.locations)}")
            out[name] = task.locations[0]
        else:
            out[name] = data.resolve_dataset_location(name)
    return out
