"""The 95 % interval of every result key, or the reason it has none.

In order of preference:

1. REFLECT (``focus_*``): the template-cluster bootstrap percentile interval the task's own summary
   computes (App. C.3: source-photo templates resampled within occupation; ``LM_EVAL_BIAS_BOOTSTRAP_ITERS``,
   default 1000). Fewer than two templates give no interval (nothing to resample).
2. FACT-OR-FAIR, Counterfactual VQA, VIGNETTE: their tasks compute no interval, so the report resamples
   the logged records and recomputes every result key with the task's own aggregation
   (:func:`lm_eval_bias.samples.result_values`) — FACT-OR-FAIR: queries within statistic × side;
   CF-VQA: pairs (both images, all option orders) within category; VIGNETTE: image pairs (all their
   questions) within bias dimension — and takes the 2.5 / 97.5 percentiles.
   ``LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS`` (default 200; 0 disables) and ``LM_EVAL_BIAS_BOOTSTRAP_SEED``
   (default 1234) set it.
3. A key with a ``<key>_stderr``: estimate ± 1.96 SE; a valid/refusal/invalid share of a run without
   logged samples: Wilson.

Otherwise :class:`Interval` says why there is none: a p-value, a count, a chance baseline, an
undefined value, no logged samples, too few clusters to resample.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from lm_eval_bias.report.runs import TaskRun
from lm_eval_bias.stats.intervals import normal_interval, proportion_interval

DOC_RATES = ("valid_rate", "refusal_rate", "invalid_rate")
ITERS_ENV = "LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS"
SEED_ENV = "LM_EVAL_BIAS_BOOTSTRAP_SEED"
DEFAULT_ITERS = 200


#: why a number has no interval: the short phrase printed next to it -> the explanation (glossary, docs)
REASONS = {
    "no data": "the value is undefined: nothing was answered to compute it from.",
    "no interval: p-value": "a p-value is a test result, not an estimate.",
    "no interval: count": "a count of cells or docs.",
    "no interval: chance level": "a chance baseline is a constant (1/k).",
    "no interval: 1 template": "REFLECT intervals resample source-photo templates; the run has only one "
                               "(e.g. a short --limit).",
    "no interval: bootstrap off": "resampling was turned off (LM_EVAL_BIAS_BOOTSTRAP_ITERS=0 or "
                                  "LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS=0).",
    "no interval: undefined in resamples": "the value is undefined in most bootstrap resamples (too few answers).",
    "no interval: no samples": "the run has no --log_samples records to resample.",
    "no interval: too few units": "fewer than two units (queries, pairs) to resample.",
    "no interval: within noise": "the estimate lies outside its own bootstrap distribution: a statistic biased "
                                 "under resampling (a max − min spread, a mean of absolute values) whose value is "
                                 "within resampling noise.",
}


@dataclass(frozen=True)
class Interval:
    low: float = math.nan
    high: float = math.nan
    method: str = ""  # how it was computed, when there is one
    reason: str = ""  # why there is none, when there is none

    @property
    def ok(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


#: family -> (what is resampled, cluster of a record, stratum of a record)
RESAMPLING: dict[str, tuple[str, Callable[[int, dict], Any], Callable[[dict], Any]]] = {
    "fact_or_fair": ("queries resampled within statistic × side", lambda i, r: i,
                     lambda r: (r.get("statistic"), r.get("side"))),
    "cf_vqa": ("pairs resampled within category", lambda i, r: r.get("pair_id", i), lambda r: r.get("category")),
    "vignette": ("image pairs resampled within dimension", lambda i, r: r.get("pair_id", r.get("doc_id", i)),
                 lambda r: r.get("dimension")),
}


def report_bootstrap_settings() -> tuple[int, int]:
    try:
        iters = int(os.environ.get(ITERS_ENV, str(DEFAULT_ITERS)))
        seed = int(os.environ.get(SEED_ENV, "1234"))
    except ValueError as exc:
        raise ValueError(f"{ITERS_ENV} and {SEED_ENV} must be integers: {exc}") from None
    return max(iters, 0), seed


def resampled(run: TaskRun) -> tuple[dict[str, tuple[float, float]], str]:
    """({key: (low, high)}, method) from resampling ``run``'s records, or ({}, reason there is none).
    Computed once per run."""
    if "resampled" in run.cache:
        return run.cache["resampled"]
    out: tuple[dict[str, tuple[float, float]], str] = ({}, "")
    what, cluster_of, stratum_of = RESAMPLING[run.family]
    iters, seed = report_bootstrap_settings()
    if not run.records:
        out = ({}, "no interval: no samples")
    elif iters == 0:
        out = ({}, "no interval: bootstrap off")
    else:
        from lm_eval_bias import samples

        clusters: dict[Any, list[dict]] = {}
        strata: dict[Any, list[Any]] = {}
        for i, record in enumerate(run.records):
            key = cluster_of(i, record)
            if key not in clusters:
                clusters[key] = []
                strata.setdefault(stratum_of(record), []).append(key)
            clusters[key].append(record)
        singles = [keys[0] for keys in strata.values() if len(keys) == 1]
        if len(singles) > 1:  # a stratum of one unit never varies: resample such units together
            strata = {k: v for k, v in strata.items() if len(v) > 1}
            strata["(pooled single-unit strata)"] = singles
        if len(clusters) < 2:
            out = ({}, "no interval: too few units")
        else:
            rng = np.random.default_rng(seed)
            draws: dict[str, list[float]] = {}
            for _ in range(iters):
                records = []
                for keys in strata.values():
                    for k in rng.integers(0, len(keys), len(keys)):
                        records.extend(clusters[keys[k]])
                try:
                    values = samples.result_values(run.task, records)
                except Exception:  # noqa: BLE001 - a resample with nothing answered has no value
                    continue
                for key, value in values.items():
                    draws.setdefault(key, []).append(value)
            bounds = {}
            for key, values in draws.items():
                array = np.asarray(values, dtype=float)
                array = array[np.isfinite(array)]
                if array.size >= max(10, 0.5 * iters):
                    low, high = np.quantile(array, [0.025, 0.975])
                    bounds[key] = (float(low), float(high))
            out = (bounds, f"bootstrap percentile, {what}, B = {iters}")
    run.cache["resampled"] = out
    return out


def _fixed_reason(key: str) -> str:
    if key.startswith("p_"):
        return "no interval: p-value"
    if key.startswith("n_"):
        return "no interval: count"
    if key.endswith("_chance"):
        return "no interval: chance level"
    return ""


def checked_interval(value: float, low: float, high: float, method: str) -> Interval:
    """A percentile interval that excludes its own estimate is not shown: the statistic is biased under
    resampling (a max − min spread, a mean of absolute values), and the estimate is within noise."""
    if low <= value <= high:
        return Interval(low, high, method)
    return Interval(reason="no interval: within noise")


def interval(run: TaskRun, key: str) -> Interval:
    """The 95 % interval of result ``key`` of ``run`` (see the module docstring)."""
    value = run.metrics.get(key, math.nan)
    fixed = _fixed_reason(key)
    if fixed:
        return Interval(reason=fixed)
    if not (isinstance(value, (int, float)) and math.isfinite(value)):
        return Interval(reason="no data")
    summary = run.summary
    ci_low = getattr(summary, "ci_low", None)
    if isinstance(ci_low, dict) and key in ci_low:
        low, high = ci_low[key], summary.ci_high[key]
        n_boot, templates = getattr(summary, "n_boot", None), getattr(summary, "n_templates", None)
        if templates is not None and templates < 2:
            return Interval(reason="no interval: 1 template")
        if math.isfinite(low) and math.isfinite(high):
            b = f", B = {n_boot}" if n_boot else ""
            return checked_interval(value, low, high, f"template-cluster bootstrap percentile{b}")
        if n_boot == 0:
            return Interval(reason="no interval: bootstrap off")
        return Interval(reason="no interval: undefined in resamples")
    reason = ""
    if run.family in RESAMPLING:
        bounds, text = resampled(run)
        if key in bounds:
            return checked_interval(value, *bounds[key], text)
        reason = text if not bounds else "no interval: undefined in resamples"
    stderr = run.metrics.get(f"{key}_stderr")
    if stderr is not None and math.isfinite(stderr):
        low, high = normal_interval(value, stderr)
        return Interval(low, high, "estimate ± 1.96 SE")
    if key in DOC_RATES and run.n_samples and run.records is None:
        low, high = proportion_interval(value * run.n_samples, run.n_samples)
        return Interval(low, high, "Wilson score interval")
    if run.records is None:
        return Interval(reason="no interval: no samples")
    return Interval(reason=reason or "no interval: undefined in resamples")


def metric(benchmark: str, run: TaskRun, key: str, digits: int = 2, unit: str = ""):
    """``run``'s value of ``key`` with its interval, as a :class:`~.render.Metric`."""
    from lm_eval_bias.report.render import Metric

    ci = interval(run, key)
    return Metric(benchmark, key, run.metrics.get(key, math.nan), ci.low, ci.high, ci.method, ci.reason, digits, unit)


def key_table(run: TaskRun, keys: list[str] | None = None):
    """Every result key of ``run`` (``_stderr`` keys folded in) with value, 95 % interval and method."""
    import pandas as pd

    keys = keys or [k for k in run.metrics if not k.endswith("_stderr")]
    rows = []
    for key in keys:
        ci = interval(run, key)
        value = run.metrics.get(key, math.nan)
        if key.startswith("n_") and isinstance(value, float) and value.is_integer():
            value = int(value)  # a count
        rows.append({"key": key, "value": value, "ci95_low": ci.low, "ci95_high": ci.high,
                     "interval": ci.method or ci.reason})
    frame = pd.DataFrame(rows, columns=["key", "value", "ci95_low", "ci95_high", "interval"]).set_index("key")
    frame["value"] = pd.Series([r["value"] for r in rows], index=frame.index, dtype=object)  # counts stay integers
    return frame


def counts_table(runs: list[TaskRun]):
    """Docs and answer status per task, and what is partial about each."""
    import pandas as pd

    rows = []
    for run in runs:
        counts = run.status_counts() or {}
        rows.append({"task": run.task, "docs": run.n_samples if run.n_samples is not None else math.nan,
                     "of": run.n_original if run.n_original is not None else math.nan,
                     "valid": counts.get("valid", math.nan), "refusal": counts.get("refusal", math.nan),
                     "invalid": counts.get("invalid", math.nan),
                     "notes": "; ".join(([f"partial run: {run.partial}"] if run.partial else []) + run.notes)})
    frame = pd.DataFrame(rows, columns=["task", "docs", "of", "valid", "refusal", "invalid", "notes"]).set_index("task")
    return frame.astype({c: "Int64" for c in ("docs", "of", "valid", "refusal", "invalid")})
