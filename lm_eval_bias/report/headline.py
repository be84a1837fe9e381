"""Headline numbers of one task with their 95 % intervals, and the status counts, as tables.

Interval per result key, in order of preference: the template-cluster bootstrap percentile interval
of the REFLECT summaries (``summary.ci_low/ci_high``); estimate ± 1.96 SE where the task reports a
``<key>_stderr``; the Wilson interval for the ``valid_rate`` / ``refusal_rate`` / ``invalid_rate``
shares of docs; otherwise none (blank).
"""

from __future__ import annotations

import math

import pandas as pd

from lm_eval_bias.report.runs import TaskRun
from lm_eval_bias.stats.intervals import normal_interval, proportion_interval

DOC_RATES = ("valid_rate", "refusal_rate", "invalid_rate")


def interval(run: TaskRun, key: str) -> tuple[float, float, str]:
    value = run.metrics.get(key, math.nan)
    summary = run.summary
    if summary is not None and hasattr(summary, "ci_low") and key in getattr(summary, "ci_low", {}):
        return summary.ci_low[key], summary.ci_high[key], "template-cluster bootstrap (percentile)"
    stderr = run.metrics.get(f"{key}_stderr")
    if stderr is not None and math.isfinite(stderr):
        low, high = normal_interval(value, stderr)
        return low, high, "±1.96 SE"
    if key in DOC_RATES and run.n_samples and math.isfinite(value):
        low, high = proportion_interval(value * run.n_samples, run.n_samples)
        return low, high, "Wilson"
    return math.nan, math.nan, ""


def headline_table(run: TaskRun, keys: list[str] | None = None) -> pd.DataFrame:
    keys = keys or [k for k in run.metrics if not k.endswith("_stderr")]
    rows = []
    for key in keys:
        low, high, method = interval(run, key)
        rows.append({"metric": key, "value": run.metrics.get(key, math.nan), "stderr": run.metrics.get(f"{key}_stderr", math.nan),
                     "ci95_low": low, "ci95_high": high, "interval": method})
    return pd.DataFrame(rows).set_index("metric")


def counts_table(runs: list[TaskRun]) -> pd.DataFrame:
    rows = []
    for run in runs:
        counts = run.status_counts() or {}
        rows.append({"task": run.task, "samples": run.n_samples if run.n_samples is not None else math.nan,
                     "valid": counts.get("valid", math.nan), "refusal": counts.get("refusal", math.nan),
                     "invalid": counts.get("invalid", math.nan), "notes": "; ".join(run.notes)})
    return pd.DataFrame(rows).set_index("task")
