"""Read lm-eval output folders into per-model task results for the report.

lm-eval writes ``<output_path>/<model>/results_<timestamp>.json`` and, with ``--log_samples``,
``samples_<task>_<timestamp>.jsonl`` beside it. A model's tasks may come from several results files
(one run per benchmark, or shards of one task). Per task:

- the records of every ``samples_<task>_*`` file that belongs to a results file of this model are
  used; several files of one task are merged only when they are shards of it (``--metadata
  '{"shard": "i/n"}'``, different i, same n), otherwise the newest run wins (reported as a note);
- result values are recomputed from the records with the task's own aggregation
  (:func:`lm_eval_bias.samples.result_values`), so merged shards give the unsharded numbers; without
  samples, the results JSON's numbers are shown and the figures say samples are missing.
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

    @property
    def family(self) -> str:
        return samples.task_family(self.task)

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


def _is_plugin_task(task: str) -> bool:
    try:
        samples.task_family(task)
        return True
    except ValueError:
        return False


def _label(results: dict[str, Any]) -> str:
    """``pretrained=`` (local / Hub models) or ``model=`` (API models) of the run, else the backend
    name with its model_args (lm-eval's ``model_name`` is a random id for models without either)."""
    config = results.get("config") or {}
    model = str(config.get("model") or "model")
    args = config.get("model_args") or {}
    if isinstance(args, str):
        from lm_eval.utils import simple_parse_args_string

        args = simple_parse_args_string(args)
    guided = " [guided]" if model.endswith("-guided") else ""  # constrained decoding: never merged with free runs
    for key in ("pretrained", "model"):
        if args.get(key):
            return str(args[key]) + guided
    shown = ",".join(f"{k}={v}" for k, v in args.items())
    return f"{model} ({shown})" if shown else model


def _shard(results: dict[str, Any], task: str) -> str | None:
    meta = ((results.get("configs") or {}).get(task) or {}).get("metadata") or {}
    shard = meta.get("shard")
    return str(shard) if shard else None


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
        files = [run_dir] if run_dir.is_file() else sorted(run_dir.glob("**/results_*.json"))
        if not files:
            raise FileNotFoundError(f"{run_dir}: no results_*.json (not an lm-eval output folder?)")
        for file in files:
            results = json.loads(file.read_text(encoding="utf-8"))
            stamp = file.stem[len("results_"):]
            for task in (results.get("results") or {}):
                if _is_plugin_task(task):
                    found.setdefault(_label(results), {}).setdefault(task, []).append((stamp, results, file))
    models = []
    for label, tasks in found.items():
        runs = {}
        for task, entries in sorted(tasks.items()):
            runs[task] = _task_run(task, sorted(entries, key=lambda e: e[0]))
        models.append(ModelRun(label, runs))
    return models


def _task_run(task: str, entries: list[tuple[str, dict, Path]]) -> TaskRun:
    notes = []
    shards = [_shard(results, task) for _, results, _ in entries]
    if len(entries) > 1 and all(shards) and len(set(shards)) == len(shards) and len({s.split("/")[1] for s in shards}) == 1:
        chosen = entries
        n = int(shards[0].split("/")[1])
        if len(shards) < n:
            notes.append(f"only {len(shards)} of {n} shards present")
        else:
            notes.append(f"{n} shards merged")
    else:
        chosen = entries[-1:]
        if len(entries) > 1:
            notes.append(f"{len(entries)} runs of this task found; the newest ({entries[-1][0]}) is shown")
    records: list[dict[str, Any]] | None = []
    for stamp, _, file in chosen:
        sample_files = sorted(file.parent.glob(f"samples_{task}_{stamp}.jsonl"))
        if not sample_files:
            records = None
            break
        for sample_file in sample_files:
            records += samples.load_records(sample_file, task)
    stamp, results, file = chosen[-1]
    plain = _plain_metrics(results, task)
    n_samples = ((results.get("n-samples") or {}).get(task) or {}).get("effective")
    run = TaskRun(task, plain, records, n_samples, [str(f) for _, _, f in chosen], notes)
    if records is None:
        run.notes.append("no --log_samples files: figures and tables need them; headline numbers from the results JSON")
    elif records:
        run.n_samples = len(records)
        try:
            run.summary = samples.summarize(task, records)
            run.metrics = samples.result_values(task, records, run.summary)
        except Exception as exc:  # noqa: BLE001 - a partial run must not stop the report
            run.notes.append(f"metrics could not be computed from the samples ({type(exc).__name__}: {exc})")
    else:
        run.notes.append("no samples")
    return run
