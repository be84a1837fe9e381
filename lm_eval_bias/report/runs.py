"""Read lm-eval output folders into per-model task results for the report.

lm-eval writes ``<output_path>/<model>/results_<timestamp>.json`` and, with ``--log_samples``,
``samples_<task>_<timestamp>.jsonl`` beside it. A model's tasks may come from several results files
(one run per benchmark, or shards of one task). Per task:

- runs are chosen as :func:`lm_eval_bias.samples.choose_runs` does: one run, or the shards of one
  sharded run (``--metadata '{"shard": "i/n"}'``: same n and settings, different i), are used; of
  several runs the newest wins (reported as a note); a shard found twice is an error, and so are
  records of strict and lenient answer extraction, or a doc twice, in shards to merge;
- result values are the full analysis of the records (:func:`lm_eval_bias.analysis.task_values`: the
  task's own statistics, every key, the results JSON holding only the headline), so merged shards give
  the unsharded numbers; without samples, the results JSON's headline is shown and the figures say
  samples are missing.

Group entries of the results JSON (``reflect``, ``focus_2afc``, ``cf_vqa_all``, … : the keys of
``group_subtasks``) are not tasks and are skipped, whatever their name. A run made with ``--limit``
(``config.limit``) or with fewer docs than its task has (``n-samples``: effective < original) is marked
partial (:attr:`TaskRun.partial`), and the report says so wherever its numbers appear.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval_bias import samples


@dataclass
class TaskRun:
    task: str
    metrics: dict[str, float]  # result key -> value (``_stderr`` keys included)
    records: list[dict[str, Any]] | None
    n_samples: int | None
    sources: list[str]
    notes: list[str] = field(default_factory=list)
    summary: Any = None
    #: ``--limit`` of the run (lm-eval's ``config.limit``: a count, or a fraction of the docs) and the
    #: task's doc count without it (``n-samples.original``)
    limit: float | None = None
    n_original: int | None = None
    #: memo of derived statistics (resampling intervals, per-group win rates), filled on first use
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def family(self) -> str:
        return samples.task_family(self.task)

    @property
    def partial(self) -> str:
        """"8 of 360 docs (--limit 8)" when the run evaluated only part of the task's docs, else ""."""
        n = self.n_samples
        known = self.n_original is not None and n is not None
        cut = known and n < self.n_original
        if not cut and (self.limit is None or known):  # a --limit above the doc count cuts nothing
            return ""
        limit = "" if self.limit is None else f" (--limit {self.limit:g})"
        of = f" of {self.n_original}" if self.n_original is not None else ""
        return f"{n if n is not None else '?'}{of} docs{limit}"

    def status_counts(self) -> dict[str, int] | None:
        if self.records is None:
            return None
        counts = {"valid": 0, "refusal": 0, "invalid": 0}
        for r in self.records:
            status = r.get("status")
            if status in counts:
                counts[status] += 1
        return counts


@dataclass
class ModelRun:
    label: str
    tasks: dict[str, TaskRun]
    #: backend, model_args, lm-eval version and run dates, for the card's header
    meta: dict[str, str] = field(default_factory=dict)
    #: what the report printed as ``warning:`` lines for this model (also in the tasks' notes / the header)
    warnings: list[str] = field(default_factory=list)

    @property
    def partial_tasks(self) -> dict[str, str]:
        return {t: r.partial for t, r in self.tasks.items() if r.partial}


def _groups(results: dict[str, Any]) -> set[str]:
    """Names of the groups in a results JSON (they have entries under ``results`` too)."""
    return set(results.get("group_subtasks") or {}) | set(results.get("groups") or {})


def _is_plugin_task(task: str, results: dict[str, Any] | None = None) -> bool:
    """A task of this plugin (not a group such as ``cf_vqa_all``, whose name also starts with ``cf_vqa``)."""
    if results is not None and task in _groups(results):
        return False
    try:
        samples.task_family(task)
        return True
    except ValueError:
        return False


def _label(results: dict[str, Any]) -> str:
    """``pretrained=`` (local / Hub models) or ``model=`` (API models) of the run, else the backend
    name with its model_args, credential-like values shown as ``<redacted>``; ``[guided]`` for
    constrained decoding (never merged with free runs). See :func:`lm_eval_bias.samples.model_label`."""
    return samples.model_label(results)


def _plain_metrics(results: dict[str, Any], task: str) -> dict[str, float]:
    out = {}
    for key, value in ((results.get("results") or {}).get(task) or {}).items():
        if "," in key and isinstance(value, (int, float)):
            out[key.split(",")[0]] = float(value)
        elif "," in key and value in ("N/A", None):
            out[key.split(",")[0]] = math.nan
    return out


def load_runs(run_dirs: list[str | Path]) -> list[ModelRun]:
    """Every model found under ``run_dirs`` (order of first appearance)."""
    found: dict[str, dict[str, list[tuple[str, dict, Path]]]] = {}
    for run_dir in run_dirs:
        run_dir = Path(run_dir)
        if not run_dir.exists():
            raise FileNotFoundError(f"{run_dir}: no such file or folder")
        files = [run_dir] if run_dir.is_file() else sorted(run_dir.glob("**/results_*.json"))
        if not files:
            raise FileNotFoundError(f"{run_dir}: no results_*.json (not an lm-eval output folder?)")
        for file in files:
            results = _read_results(file)
            stamp = file.stem[len("results_"):]
            for task in (results.get("results") or {}):
                if _is_plugin_task(task, results):
                    found.setdefault(_label(results), {}).setdefault(task, []).append((stamp, results, file))
    models = []
    for label, tasks in found.items():
        runs = {}
        for task, entries in sorted(tasks.items()):
            runs[task] = _task_run(task, sorted(entries, key=lambda e: e[0]))
        model = ModelRun(label, runs, _meta([e for entries in tasks.values() for e in entries]))
        _note_versions(model, tasks)
        model.warnings += [f"{task}: {text}" for task, run in runs.items() for text in run.cache.pop("warnings", [])]
        models.append(model)
    return models


def _read_results(file: Path) -> dict[str, Any]:
    """A results JSON (UTF-8, a byte-order mark dropped); ValueError naming the file when it is not
    one lm-eval writes (not JSON, not an object, ``results`` not an object)."""
    from lm_eval_bias.core.safe_io import read_text_file

    text = read_text_file(file, "results JSON")
    try:
        results = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{file}: not JSON ({exc}); a results file cut short? rerun or remove it") from None
    if not isinstance(results, dict) or not isinstance(results.get("results", {}), dict):
        raise ValueError(f"{file}: not an lm-eval results JSON (expected an object with a 'results' object)")
    for part in ("config", "configs", "n-samples", "versions"):
        if part in results and results[part] is not None and not isinstance(results[part], dict):
            raise ValueError(f"{file}: '{part}' is {type(results[part]).__name__}, expected an object")
    return results


def _note_versions(model: ModelRun, tasks: dict[str, list[tuple[str, dict, Path]]]) -> None:
    """Runs of one model under different lm-eval versions are kept in one card, with a note in the
    header (``lm-eval 0.4.12, 0.4.13 (mixed ...)``), on each task and on the console."""
    used: dict[str, set[str]] = {}
    for task, entries in tasks.items():
        chosen = set(model.tasks[task].sources)
        for _, results, file in entries:
            if str(file) in chosen:
                used.setdefault(str(results.get("lm_eval_version") or "unknown"), set()).add(task)
    if len(used) < 2:
        return
    listed = "; ".join(f"{version}: {', '.join(sorted(names))}" for version, names in sorted(used.items()))
    model.meta["lm_eval"] = f"{', '.join(sorted(used))} (mixed versions: {listed})"
    model.warnings.append(f"runs under {len(used)} lm-eval versions merged into one card ({listed})")
    for version, names in used.items():
        for task in names:
            model.tasks[task].notes.append(f"run under lm-eval {version}; other tasks of this card under another version")


def _meta(entries: list[tuple[str, dict, Path]]) -> dict[str, str]:
    config = (entries[-1][1].get("config") or {}) if entries else {}
    stamps = sorted({stamp[:10] for stamp, _, _ in entries})
    versions = sorted({str(r.get("lm_eval_version")) for _, r, _ in entries if r.get("lm_eval_version")})
    return {"backend": str(config.get("model") or ""), "lm_eval": ", ".join(versions),
            "dates": stamps[0] if len(stamps) == 1 else (f"{stamps[0]} – {stamps[-1]}" if stamps else "")}


def _task_run(task: str, entries: list[tuple[str, dict, Path]]) -> TaskRun:
    runs = []
    for stamp, results, file in entries:
        sample_file = file.parent / f"samples_{task}_{stamp}.jsonl"
        runs.append(samples.run_of_results(results, task, stamp, file, sample_file if sample_file.is_file() else None))
    try:
        choice = samples.choose_runs(runs)
    except ValueError as exc:
        raise ValueError(f"{task}: {exc}") from None
    notes = [text.replace("\n", " ") for text in choice.warnings + choice.notes]
    chosen = [next(e for e, r in zip(entries, runs) if r is c) for c in choice.runs]
    files = [r.sample_file for r in choice.runs]
    records: list[dict[str, Any]] | None = None
    said: list[str] = []
    if all(f is not None for f in files):
        import warnings

        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", samples.SampleFileWarning)
                records = samples.read_records(files, task)
        except ValueError as exc:
            raise ValueError(f"{task}: {exc}") from None
        for item in caught:
            if issubclass(item.category, samples.SampleFileWarning):
                said.append(str(item.message))
            else:
                warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    stamp, results, file = chosen[-1]
    plain = _plain_metrics(results, task)
    counts = (results.get("n-samples") or {}).get(task) or {}
    n_samples = counts.get("effective")
    limit = (results.get("config") or {}).get("limit")
    run = TaskRun(task, plain, records, n_samples, [str(f) for _, _, f in chosen], notes,
                  limit=float(limit) if isinstance(limit, (int, float)) else None, n_original=counts.get("original"))
    if records is not None:
        note = samples.coverage_note(task, len(records), [r for _, r, _ in chosen])
        if note:
            said.append(note)
    run.notes += said
    run.cache["warnings"] = said  # printed by build_report (popped by load_runs into ModelRun.warnings)
    if records is None:
        fallback = "no --log_samples files: figures and tables need them; headline numbers from the results JSON"
        run.notes.append(fallback)
        said.append(fallback)
    elif records:
        run.n_samples = len(records)
        try:
            run.summary = samples.summarize(task, records)
            # every key from the samples through the analysis entry point (lm_eval_bias.analysis): the
            # results JSON holds the headline only; merged shards: a shard's own values describe that shard
            from lm_eval_bias import analysis

            merged = len(chosen) > 1
            values = analysis.task_values(task, records, run.summary)
            run.metrics = values if merged else {**plain, **values}
        except Exception as exc:  # noqa: BLE001 - a partial run must not stop the report
            run.notes.append(f"metrics could not be computed from the samples ({type(exc).__name__}: {exc})")
    else:
        run.notes.append("no samples")
    return run
