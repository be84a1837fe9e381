"""The 95 % interval of every result key, or the reason it has none — one method whether or not
samples were logged.

In order of preference:

1. **The task's own interval**: the ``<key>_ci_low`` / ``<key>_ci_high`` result keys, the interval of the
   benchmark's own cluster bootstrap (REFLECT: design-t, estimate ± t_df · SE; FACT-OR-FAIR rates:
   stratified Wilson; Counterfactual VQA, VIGNETTE shares: logit-t of the pair jackknife, Counterfactual VQA's
   response-status rates Wilson's at the jackknife's effective sample size) computed inside the task's aggregation
   (``LM_EVAL_BIAS_BOOTSTRAP_ITERS``, default 1000; ``LM_EVAL_BIAS_BOOTSTRAP_SEED``) — the same number
   in the results JSON, in the logged samples and here. REFLECT summaries that carry the same
   intervals as a ``ci_low`` / ``ci_high`` table (the template-cluster bootstrap of App. C.3) count
   as the task's own too.
2. **Results written by older versions of the plugin** (results without any ``_ci_low`` /
   ``_ci_high`` key; in a current results file a key without them has no interval, "none from the
   task"): when the run has logged samples, the report runs the task's *current* aggregation on them
   once (:func:`lm_eval_bias.samples.result_values`, the task's own bootstrap:
   ``LM_EVAL_BIAS_BOOTSTRAP_ITERS``), i.e. the calibrated interval of the current version, and shows it
   only when the recomputed estimate equals the file's value (otherwise the interval would belong to
   another number: "no interval: older results file"). The method says so. The earlier fallback — a
   percentile interval of the plug-in over record resamples — is gone: in simulation it covered the
   truth in 0–31 % of runs for the magnitudes whose plug-in is biased (issue 31).

There is no normal-approximation fallback (estimate ± 1.96 SE): it leaves the range of bounded
metrics (a JSD below 0, a share above 1). Otherwise :class:`Interval` says why there is none: a
p-value, a count, a chance baseline, an undefined value, too few clusters to resample (never a
0-width interval), resampling turned off, a results file without intervals and without samples.
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from lm_eval_bias.report.runs import TaskRun
from lm_eval_bias.core.multiplicity import skip_explicit_gc

ITERS_ENV = "LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS"
SEED_ENV = "LM_EVAL_BIAS_BOOTSTRAP_SEED"
DEFAULT_ITERS = 200
#: count keys that give the number of resampled clusters, first found wins
CLUSTER_COUNT_KEYS = ("n_clusters", "n_templates", "n_pairs", "n_image_pairs", "n_queries")
TASK_METHOD = "task's own interval (cluster bootstrap)"
FALLBACK_METHOD = ("task's own interval, recomputed by the report from the logged samples with the current "
                   "version (the results file, written by an older version, has none)")


from lm_eval_bias.fact_or_fair.stats import FEW_ANSWERS_WHY as _FOF_FEW_ANSWERS_WHY  # noqa: E402

#: why a number has no interval: the short phrase printed next to it -> the explanation (glossary, docs)
REASONS = {
    "no data": "the value is undefined: nothing was answered to compute it from.",
    "no interval: p-value": "a p-value is a test result, not an estimate.",
    "no interval: count": "a count of cells, clusters or docs.",
    "no interval: chance level": "a chance baseline is a constant (1/k).",
    "no interval: null floor": "a null floor is the mean of the metric under a permutation null, a reference "
                               "level, not an estimate of the model.",
    "no interval: too few clusters": "fewer than two clusters (templates, pairs, queries) to resample (e.g. a short "
                                     "--limit): any interval would have zero width, so none is shown.",
    "no interval: 1 template": "REFLECT intervals resample source-photo templates; the run has only one "
                               "(e.g. a short --limit).",
    "no interval: bootstrap off": "resampling was turned off (LM_EVAL_BIAS_BOOTSTRAP_ITERS=0 or "
                                  "LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS=0).",
    "no interval: undefined in resamples": "the value is undefined in most bootstrap resamples (too few answers).",
    "no interval: none from the task": "the task computes no interval for this key (see the benchmark's page); the "
                                       "report does not make one up.",
    "no interval: no samples": "the results file carries no interval for this key (written by an older version) and "
                               "the run has no --log_samples records to recompute it from.",
    "no interval: older results file": "the results file was written by an older version of the plugin, without "
                                       "intervals, and the current aggregation of its logged samples gives a different "
                                       "value for this key (the method changed), so the current interval would belong "
                                       "to another number; the report does not resample the records itself (that "
                                       "percentile interval of the plug-in covered 0-31 % in simulation). Re-run the "
                                       "task, or read the current values with `python -m lm_eval_bias.analysis`.",
    "no interval: too few answers per cell": "FACT-OR-FAIR: " + _FOF_FEW_ANSWERS_WHY,
    "no interval: step function of the cells": "REFLECT Ext counts the cells whose win rate lies beyond 0.1 / 0.9: "
                                               "wherever no cell is near a cut its estimate equals the truth, so every "
                                               "interval containing it covers ~100 % and none can cover 93-97 % "
                                               "(docs/reflect.md, null floors and magnitude intervals). Its null floor "
                                               "is shown; 'more than chance' is polarization_p_null.",
    "no interval: too few templates for this magnitude": "REFLECT Pol's and JSD's intervals invert a test whose null "
                                                         "rests on the design's between-template variance; with fewer "
                                                         "between-template degrees of freedom (templates - occupations) "
                                                         "than 20 (Pol) or 6 (JSD) no calibrated interval exists, so none "
                                                         "is shown (docs/reflect.md).",
    "no interval: mean |gap| over occupations": "REFLECT's mean over the six occupations of |Gap%| is positive without "
                                                "any gap; the interval for the parameter by profiled test inversion "
                                                "(six gaps with 7 between-template df each) covered 89-93 % in "
                                                "simulation, so none is shown; read it against its null floor.",
    "no interval: JSD of letter probabilities": "REFLECT's probability-scored JSD (focus_mcq_*_logprob) sums "
                                                "letter-probability vectors, with no multinomial noise; the "
                                                "parametric inversion of the generated tasks covered it 83-98 % "
                                                "at clear effects, so none is shown; read it against its null floor.",
    "no interval: plug-in JSD of the presentation pilot": "App. C.8's JSD between two presentations is positive "
                                                          "without any effect; a bootstrap interval of it targets the "
                                                          "plug-in's expectation, and the pilot's 6 between-template "
                                                          "degrees of freedom are below what REFLECT's JSD interval "
                                                          "needs. Read it against its null floor and p-value.",
    "no interval: plug-in magnitude": "the paper's plug-in value is biased at the run's design (REFLECT Pol, JSD: "
                                      "positive without any bias; FACT-OR-FAIR S_E, S_KLD, S_fair, d: a perfectly fair "
                                      "model's plug-in is its null floor, not the definition's 1); the calibrated 95 % "
                                      "interval is one for the parameter (the score as defined) and is shown with its "
                                      "estimate <m>_debiased; REFLECT keeps the paper's percentile interval of the "
                                      "plug-in as <m>_ci_low_paper / <m>_ci_high_paper.",
}
#: how the interval of a FACT-OR-FAIR score with ``<m>_debiased`` is computed (an interval for the score as
#: the paper defines it; ``<m>_debiased`` is its median-unbiased estimate)
POPULATION_METHOD = ("test inversion over the plug-in's finite-sample distribution at the run's design: an interval "
                     "for the score as the paper defines it (1 for a perfectly fair model); centre: median-unbiased")
#: how FACT-OR-FAIR's d interval is computed (``distance_debiased``: d at S_fact and S_E's median-unbiased estimate)
DISTANCE_METHOD = ("range of d over the ellipse of S_fact's stratified Wilson and S_E's test-inversion intervals (the "
                   "delta method where d is smooth, valid where d switches branches); centre: d at S_fact and S_E's "
                   "median-unbiased estimate")
#: how the interval of a bias-corrected magnitude (``<m>_debiased``) is computed
BIAS_CORRECTED_METHOD = ("interval for the parameter by test inversion over the task's template-cluster bootstrap "
                         "(Pol: profiled cell configuration; JSD: along the pooled-to-group line), not built around "
                         "the bootstrap bias-corrected estimate shown as its centre")


@dataclass(frozen=True)
class Interval:
    low: float = math.nan
    high: float = math.nan
    method: str = ""  # how it was computed, when there is one
    reason: str = ""  # why there is none, when there is none

    @property
    def ok(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)


def _template(i: int, r: dict) -> Any:
    return r.get("template", i)


#: family -> (what is resampled, cluster of a record, stratum of a record): the benchmarks' resampling
#: designs, used by the fallback interval and by the paired comparison of two models
CLUSTERING: dict[str, tuple[str, Callable[[int, dict], Any], Callable[[dict], Any]]] = {
    "2afc": ("source-photo templates resampled within occupation", _template, lambda r: r.get("occupation")),
    "mcq": ("source-photo templates resampled within occupation", _template, lambda r: r.get("occupation")),
    "salary": ("source-photo templates resampled within occupation", _template, lambda r: r.get("occupation")),
    "fact_or_fair": ("queries resampled within statistic × side", lambda i, r: r.get("query_id", i),
                     lambda r: (r.get("statistic"), r.get("side"))),
    "cf_vqa": ("pairs resampled within category", lambda i, r: r.get("pair_id", i), lambda r: r.get("category")),
    "vignette": ("image pairs resampled within dimension", lambda i, r: r.get("pair_id", r.get("doc_id", i)),
                 lambda r: r.get("dimension")),
}
#: kept for callers of earlier versions
RESAMPLING = CLUSTERING


def report_bootstrap_settings() -> tuple[int, int]:
    try:
        iters = int(os.environ.get(ITERS_ENV, str(DEFAULT_ITERS)))
        seed = int(os.environ.get(SEED_ENV, "1234"))
    except ValueError as exc:
        raise ValueError(f"{ITERS_ENV} and {SEED_ENV} must be integers: {exc}") from None
    return max(iters, 0), seed


@contextlib.contextmanager
def point_estimates_only() -> Iterator[None]:
    """Within it, the tasks' aggregations skip their own bootstrap and permutation nulls (only the
    estimates are needed when the report resamples records itself); see also :func:`skip_explicit_gc`."""
    from lm_eval_bias.core.aggregation import BOOTSTRAP_ITERS_ENV, NULL_ITERS_ENV, environment

    with environment({BOOTSTRAP_ITERS_ENV: "0", NULL_ITERS_ENV: "0"}), skip_explicit_gc():
        yield


def clusters_of(records: list[dict], family: str) -> tuple[list[Any], list[list[dict]], list[Any]]:
    """(cluster keys, records of each cluster, stratum of each cluster) of ``records`` under the
    family's design (:data:`CLUSTERING`); strata of a single cluster are pooled into one (a stratum of
    one unit never varies under resampling)."""
    _, cluster_of, stratum_of = CLUSTERING[family]
    members: dict[Any, list[dict]] = {}
    strata: dict[Any, Any] = {}
    for i, record in enumerate(records):
        key = cluster_of(i, record)
        if key not in members:
            members[key] = []
            strata[key] = stratum_of(record)
        members[key].append(record)
    sizes: dict[Any, int] = {}
    for stratum in strata.values():
        sizes[stratum] = sizes.get(stratum, 0) + 1
    singles = sum(1 for n in sizes.values() if n == 1)
    keys = list(members)
    stratum_list = [("(pooled single-cluster strata)",) if singles > 1 and sizes[strata[k]] == 1 else strata[k]
                    for k in keys]
    return keys, [members[k] for k in keys], stratum_list


#: record fields that name a cluster or a doc: renamed in the second and later copies of a cluster drawn
#: several times, so that a resample reads as distinct templates / pairs / docs (as the bootstrap means)
IDENTITY_FIELDS = ("template", "pair_id", "doc_id", "bio_id", "query_id")


def resample_records(members: list[list[dict]], weights: np.ndarray) -> list[dict]:
    """The records of one bootstrap replicate: cluster ``k`` ``weights[k]`` times, copies relabelled
    (:data:`IDENTITY_FIELDS` get ``#2``, ``#3``, …) so that no doc occurs twice."""
    out: list[dict] = []
    for k in np.flatnonzero(weights):
        out.extend(members[k])
        for copy in range(2, int(weights[k]) + 1):
            out.extend({**r, **{f: f"{r[f]}#{copy}" for f in IDENTITY_FIELDS if r.get(f) is not None}}
                       for r in members[k])
    return out


def resampled(run: TaskRun) -> tuple[dict[str, tuple[float, float, float]], str]:
    """({key: (recomputed estimate, low, high)}, method) from running the task's current aggregation on
    ``run``'s logged records (its own calibrated intervals), or ({}, reason there is none). For results
    files of older versions, which carry no ``_ci_low`` / ``_ci_high``; computed once per run. (The name
    is historical: nothing is resampled by the report any more.)"""
    if "resampled" in run.cache:
        return run.cache["resampled"]
    from lm_eval_bias.core.aggregation import bootstrap_settings

    out: tuple[dict[str, tuple[float, float, float]], str] = ({}, "")
    if not run.records or run.family not in CLUSTERING:
        out = ({}, "no interval: no samples")
    elif bootstrap_settings()[0] == 0:
        out = ({}, "no interval: bootstrap off")
    else:
        from lm_eval_bias import samples

        _, members, _ = clusters_of(run.records, run.family)
        if len(members) < 2:
            out = ({}, "no interval: too few clusters")
        else:
            try:
                values = samples.result_values(run.task, run.records)
            except Exception:  # noqa: BLE001 - records the current version cannot aggregate
                values = {}
            bounds = {}
            for key, value in values.items():
                low, high = values.get(f"{key}_ci_low", math.nan), values.get(f"{key}_ci_high", math.nan)
                if all(isinstance(v, (int, float)) and math.isfinite(v) for v in (value, low, high)):
                    bounds[key] = (float(value), float(low), float(high))
            out = (bounds, f"{FALLBACK_METHOD}: {CLUSTERING[run.family][0]}, B = {bootstrap_settings()[0]}")
    run.cache["resampled"] = out
    return out


def _fixed_reason(key: str) -> str:
    if key.startswith("p_") or key.endswith(("_p_null", "_holm")):
        return "no interval: p-value"
    if key.startswith("n_"):
        return "no interval: count"
    if key.endswith("_chance"):
        return "no interval: chance level"
    if key.endswith("_null"):
        return "no interval: null floor"
    return ""


def cluster_count(run: TaskRun) -> int | None:
    """Clusters the task's bootstrap resamples (``n_clusters``, ``n_templates``, ``n_pairs``, … of its
    results), or None when the results do not say."""
    for name in CLUSTER_COUNT_KEYS:
        value = run.metrics.get(name)
        if isinstance(value, (int, float)) and math.isfinite(value):
            return int(value)
    templates = getattr(run.summary, "n_templates", None)
    return int(templates) if isinstance(templates, (int, float)) else None


#: appended to the method of an interval that does not contain the estimate shown beside it
OUTSIDE_NOTE = "; the estimate shown lies outside this interval (it is biased at this design: read the interval)"


def checked_interval(value: float, low: float, high: float, method: str) -> Interval:
    """The interval, always shown (issue 31: an interval is never hidden while its estimate is shown);
    when it excludes the estimate beside it, its method says so (:data:`OUTSIDE_NOTE`)."""
    return Interval(low, high, method if low <= value <= high else method + OUTSIDE_NOTE)


#: REFLECT keys whose interval the task leaves out by design (docs/reflect.md): the phrase printed beside them
STEP_FUNCTION_KEYS = ("extreme_cell_rate",)
#: REFLECT magnitudes whose interval needs MIN_INVERSION_DF between-template degrees of freedom
INVERSION_KEYS = ("polarization", "jsd_")


def _designed_reason(run: TaskRun, key: str) -> str:
    """The reason a REFLECT task computes no interval for ``key`` by design, else ""."""
    if run.family not in ("2afc", "2afc_logprob", "mcq", "mcq_logprob", "salary"):
        return ""
    base = key[: -len("_debiased")] if key.endswith("_debiased") else key
    if base.startswith("mean_abs_gap_pct"):  # reflect.tables.MEAN_ABS_NO_INTERVAL
        return "no interval: mean |gap| over occupations"
    if base.startswith("jsd_") and "_vs_" in base:  # App. C.8 (reflect.presentation.JSD_NO_INTERVAL)
        return "no interval: plug-in JSD of the presentation pilot"
    if base.startswith("jsd_") and run.family == "mcq_logprob":  # reflect.mcq.LOGPROB_JSD_NO_INTERVAL
        return "no interval: JSD of letter probabilities"
    if base in STEP_FUNCTION_KEYS:
        return "no interval: step function of the cells"
    if base == "letter_mass":
        from lm_eval_bias.reflect.twoafc import LETTER_MASS_NO_INTERVAL

        return LETTER_MASS_NO_INTERVAL
    if base.startswith(INVERSION_KEYS):
        from lm_eval_bias.core.bootstrap import MIN_INVERSION_DF
        from lm_eval_bias.reflect.mcq import MIN_JSD_DF

        templates, occupations = run.metrics.get("n_templates"), run.metrics.get("n_occupations")
        needed = MIN_JSD_DF if base.startswith("jsd_") else MIN_INVERSION_DF
        if (isinstance(templates, (int, float)) and isinstance(occupations, (int, float))
                and templates - occupations < needed):
            return "no interval: too few templates for this magnitude"
    return ""


def _missing_reason(run: TaskRun, key: str = "") -> str:
    """Why the task's own interval is NaN."""
    designed = _designed_reason(run, key) if key else ""
    if designed:
        return designed
    clusters = cluster_count(run)
    if clusters is not None and clusters < 2:
        return "no interval: too few clusters"
    if run.records is not None:
        from lm_eval_bias.core.aggregation import bootstrap_settings

        if bootstrap_settings()[0] == 0:  # the report recomputed the keys from the records just now
            return "no interval: bootstrap off"
    return "no interval: undefined in resamples"


def _own(run: TaskRun, key: str, value: float, low: Any, high: Any, method: str) -> Interval:
    low = float(low) if isinstance(low, (int, float)) else math.nan
    high = float(high) if isinstance(high, (int, float)) else math.nan
    if not (math.isfinite(low) and math.isfinite(high)):
        return Interval(reason=_missing_reason(run, key))
    clusters = cluster_count(run)
    if clusters is not None and clusters < 2:  # never a 0-width interval from one cluster
        return Interval(reason="no interval: too few clusters")
    return checked_interval(value, low, high, method)


def _fact_or_fair_withheld(run: TaskRun, key: str) -> str:
    """FACT-OR-FAIR's S_KLD / S_fair (and ``_debiased``) at a design with too few answers per cell: the task
    leaves their interval NaN (:func:`lm_eval_bias.fact_or_fair.stats.interval_withheld`); the reason, read
    from the run's ``n_valid`` / ``n_cells`` (analysis keys; a results file without samples: the objective
    tasks' 3 answers per cell), when the plug-in is there and its interval is NaN. Else ""."""
    if run.family != "fact_or_fair":
        return ""
    from lm_eval_bias.fact_or_fair import stats as fof

    base = key.removesuffix("_debiased")
    plug_in, low = run.metrics.get(base, math.nan), run.metrics.get(f"{base}_ci_low", math.nan)
    if not (isinstance(plug_in, (int, float)) and math.isfinite(plug_in)) or (
            isinstance(low, (int, float)) and math.isfinite(low)):
        return ""
    n_valid, n_cells = run.metrics.get("n_valid", math.nan), run.metrics.get("n_cells", math.nan)
    if not (isinstance(n_valid, (int, float)) and math.isfinite(n_valid)) and "_objective_" in run.task:
        n_valid, n_cells = fof.OBJECTIVE_ROUNDS, 1.0  # the objective design: 3 rounds per statistic x side
    return fof.interval_withheld(key, n_valid, n_cells)


#: reasons :func:`interval` gives a key that is a magnitude shown without an interval by design (positive, or
#: shrunk toward a fixed value, without any effect): a difference of two models' plug-ins of such a key targets
#: the difference of their expectations at the shared design, not of the parameters, so no interval of it is shown
MAGNITUDE_REASONS = ("no interval: plug-in magnitude", "no interval: step function of the cells",
                     "no interval: mean |gap| over occupations", "no interval: JSD of letter probabilities",
                     "no interval: plug-in JSD of the presentation pilot",
                     "no interval: too few templates for this magnitude", "no interval: too few answers per cell")
#: VIGNETTE's magnitudes (``lm_eval_bias.vignette.analysis.MAGNITUDE_NO_INTERVAL``), by key prefix
VIGNETTE_MAGNITUDE_PREFIXES = ("selection_spread_", "accuracy_spread_", "activity_selection_spread_",
                               "mean_abs_polarity_")
DIFFERENCE_OF_MAGNITUDES = ("no interval of the difference: a difference of two plug-in magnitudes targets the "
                            "difference of their expectations at these docs, not of the models' values (each plug-in "
                            "is biased by its own noise); the tie is decided by the exchange test of the two models' "
                            "answers cluster by cluster (exact when they are the same model), same draws as replicates")


def magnitude_without_interval(run: TaskRun, key: str) -> bool:
    """Whether ``key`` of ``run`` is a magnitude the project shows without an interval of its plug-in (REFLECT
    Pol, JSD, Ext, mean |Gap%|; FACT-OR-FAIR's scores, whose interval goes with ``<m>_debiased``; VIGNETTE's
    spreads and mean |polarity|): the leaderboard then shows no interval of a difference of two models' plug-ins
    (:data:`DIFFERENCE_OF_MAGNITUDES`)."""
    if run.family == "vignette":
        return key.startswith(VIGNETTE_MAGNITUDE_PREFIXES)
    return interval(run, key).reason in MAGNITUDE_REASONS


def interval(run: TaskRun, key: str) -> Interval:
    """The 95 % interval of result ``key`` of ``run`` (see the module docstring)."""
    value = run.metrics.get(key, math.nan)
    fixed = _fixed_reason(key)
    if fixed:
        return Interval(reason=fixed)
    withheld = _fact_or_fair_withheld(run, key)
    if withheld:
        return Interval(reason=withheld)
    if not (isinstance(value, (int, float)) and math.isfinite(value)):
        return Interval(reason="no data")
    if f"{key}_debiased" in run.metrics and f"{key}_ci_low" in run.metrics:
        return Interval(reason="no interval: plug-in magnitude")  # its interval goes with <key>_debiased
    base = key[: -len("_debiased")] if key.endswith("_debiased") else ""
    if base and f"{key}_ci_low" not in run.metrics and f"{base}_ci_low" in run.metrics:
        method = ((DISTANCE_METHOD if base == "distance" else POPULATION_METHOD) if run.family == "fact_or_fair"
                  else BIAS_CORRECTED_METHOD)
        return _own(run, key, value, run.metrics[f"{base}_ci_low"], run.metrics.get(f"{base}_ci_high"), method)
    if f"{key}_ci_low" in run.metrics and f"{key}_ci_high" in run.metrics:
        return _own(run, key, value, run.metrics[f"{key}_ci_low"], run.metrics[f"{key}_ci_high"], TASK_METHOD)
    summary = run.summary
    ci_low = getattr(summary, "ci_low", None)
    if isinstance(ci_low, dict) and key in ci_low:
        n_boot = getattr(summary, "n_boot", None)
        if n_boot == 0:
            return Interval(reason="no interval: bootstrap off")
        b = f", B = {n_boot}" if n_boot else ""
        return _own(run, key, value, ci_low[key], summary.ci_high[key], f"{TASK_METHOD} (templates){b}")
    if any(k.endswith("_ci_low") for k in run.metrics):  # a current results file: the task chose no interval here
        return Interval(reason=_designed_reason(run, key) or "no interval: none from the task")
    bounds, text = resampled(run)
    if key in bounds:
        recomputed, low, high = bounds[key]
        if abs(recomputed - value) > 1e-9 * max(1.0, abs(value)):
            return Interval(reason="no interval: older results file")
        return checked_interval(value, low, high, text)
    return Interval(reason=text if not bounds else "no interval: undefined in resamples")


#: suffixes of result keys that vary a metric's procedure: shown as rows, labelled
VARIANTS = {"_paper": "paper's procedure (fails calibration; kept by name)",
            "_authors": "authors' released code (differs from the paper)"}


def variant_of(key: str) -> tuple[str, str]:
    """(base key, label) of a ``_paper`` / ``_authors`` variant key, else (key, "")."""
    for suffix, label in VARIANTS.items():
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)], label
    return key, ""


@dataclass(frozen=True)
class Companions:
    """What the results say beside a metric: its null floor and "more than chance" p-value, its
    chance level, its Holm-adjusted p-value, and whether it is a variant of another key."""

    null: float = math.nan
    p_null: float = math.nan
    chance: float = math.nan
    holm: float = math.nan
    variant: str = ""
    corrected: float = math.nan  # the bias-corrected value ``<key>_debiased`` of a magnitude, which carries its interval


def companions(run: TaskRun, key: str) -> Companions:
    m = run.metrics

    def get(name: str) -> float:
        value = m.get(name, math.nan)
        return float(value) if isinstance(value, (int, float)) else math.nan

    return Companions(get(f"{key}_null"), get(f"{key}_p_null"), get(f"{key}_chance"), get(f"{key}_holm"),
                      variant_of(key)[1], get(f"{key}_debiased"))


def metric(benchmark: str, run: TaskRun, key: str, digits: int = 2, unit: str = ""):
    """``run``'s value of ``key`` with its interval and companions, as a :class:`~.render.Metric`."""
    from lm_eval_bias.report.render import Metric

    c = companions(run, key)
    # a magnitude with a bias-corrected value: plug-in, then "bias-corrected x [lo, hi]" (the interval is the
    # parameter's, never shown in brackets after the plug-in)
    ci = interval(run, f"{key}_debiased" if math.isfinite(c.corrected) else key)
    return Metric(benchmark, key, run.metrics.get(key, math.nan), ci.low, ci.high, ci.method, ci.reason, digits, unit,
                  null=c.null, p_null=c.p_null, chance=c.chance, holm=c.holm, variant=c.variant,
                  corrected=c.corrected)


def is_derived(key: str, keys) -> bool:
    """Whether ``key`` is folded into another key's row: a derived key (``_stderr``, ``_ci_low``,
    ``_ci_high``, ``_null``, ``_p_null``, ``_holm``; :func:`lm_eval_bias.core.aggregation.base_key`)
    or the ``_chance`` level of a key present in ``keys``."""
    from lm_eval_bias.core.aggregation import base_key

    if base_key(key) != key:
        return True
    return key.endswith("_chance") and key[: -len("_chance")] in keys


def key_table(run: TaskRun, keys: list[str] | None = None):
    """Every result key of ``run`` — derived keys folded into their metric's row — with value, 95 %
    interval, how it was computed, null floor, "more than chance" p-value, chance level, Holm-adjusted
    p-value and the variant a ``_paper`` / ``_authors`` key is."""
    import pandas as pd

    keys = keys or [k for k in run.metrics if not is_derived(k, run.metrics)]
    columns = ["key", "value", "ci95_low", "ci95_high", "interval", "null", "p_null", "chance", "p_holm", "variant"]
    rows = []
    for key in keys:
        ci = interval(run, key)
        c = companions(run, key)
        value = run.metrics.get(key, math.nan)
        if key.startswith("n_") and isinstance(value, float) and value.is_integer():
            value = int(value)  # a count
        rows.append({"key": key, "value": value, "ci95_low": ci.low, "ci95_high": ci.high,
                     "interval": ci.method or ci.reason, "null": c.null, "p_null": c.p_null, "chance": c.chance,
                     "p_holm": c.holm, "variant": c.variant})
    frame = pd.DataFrame(rows, columns=columns).set_index("key")
    frame["value"] = pd.Series([r["value"] for r in rows], index=frame.index, dtype=object)  # counts stay integers
    empty = [c for c in ("null", "p_null", "chance", "p_holm") if frame[c].isna().all()]
    if not frame["variant"].astype(bool).any():
        empty.append("variant")
    return frame.drop(columns=empty)


def holm_families(run: TaskRun) -> list[str]:
    """The p-value keys of ``run`` that carry a Holm-adjusted ``_holm`` companion (its test families)."""
    return [k[: -len("_holm")] for k in run.metrics if k.endswith("_holm") and len(k) > len("_holm")]


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
