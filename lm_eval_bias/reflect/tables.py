"""REFLECT tables beyond the task headline keys: retention by group (App. C.1), mean absolute salary
gaps (Fig. 6), per-occupation salary gaps (Fig. 6), missing cells of incomplete sources, and the
comparisons between two runs that the paper's robustness tables report (Tables 7, 8, 10; App. B.2
mirroring).

Pure numpy/scipy; no harness imports. Uncertainty: the template-cluster bootstrap of
:mod:`lm_eval_bias.core.bootstrap` (App. C.3: source-photo templates resampled within occupation),
so every sample of a doc (App. C.5's K samples) moves with its template.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
from lm_eval_bias.core.lazy_imports import scipy_stats as sps  # scipy.stats imported on first use, not at task load

from lm_eval_bias.reflect.schema import GROUPS, RACES, REFERENCE_RACE
from lm_eval_bias.core.bootstrap import (bootstrap_replicates, permutation_null,
                                          template_bootstrap, too_few_clusters)
from lm_eval_bias.reflect.salary import occupation_gaps
from lm_eval_bias.reflect.twoafc import TwoAFCCall, resolve_swaps

GENDER_KEYS = {"man": "male", "woman": "female"}
#: Retention keys: ``retained_rate_<race>`` and ``retained_rate_<male|female>``.
RETENTION_KEYS: tuple[str, ...] = tuple(f"retained_rate_{r.lower()}" for r in RACES) + ("retained_rate_male",
                                                                                      "retained_rate_female")
SALARY_GAP_KEYS: tuple[str, ...] = tuple(f"gap_pct_{r.lower()}" for r in RACES if r != REFERENCE_RACE) + ("gap_pct_male",)
MEAN_ABS_KEYS: tuple[str, ...] = tuple(f"mean_abs_{k}" for k in SALARY_GAP_KEYS)


def _member_masks() -> dict[str, np.ndarray]:
    masks = {f"retained_rate_{r.lower()}": np.asarray([g.race == r for g in GROUPS]) for r in RACES}
    for gender, key in GENDER_KEYS.items():
        masks[f"retained_rate_{key}"] = np.asarray([g.gender == gender for g in GROUPS])
    return masks


_MASKS = _member_masks()


# -- missing cells ---------------------------------------------------------------------------------------
def missing_cells(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """``<template>/<group key>`` of every race x gender cell a template of the source lacked (from the
    ``missing_groups`` the records carry), sorted."""
    out = set()
    for r in records:
        for group in r.get("missing_groups") or ():
            out.add(f"{r['template']}/{group}")
    return sorted(out)


# -- retention by group (App. C.1, "Failure Modes and Filtering Analysis") --------------------------------
def retention_counts(calls: Sequence[TwoAFCCall]) -> tuple[list[str], list[str], dict[str, np.ndarray]]:
    """(templates, strata, counts): ``pairs[t, i, j]`` i-vs-j pairs of template t asked in both orders,
    ``retained[t, i, j]`` those retained (:func:`retention_metrics` pools them by race and gender)."""
    outcomes = [p for p in resolve_swaps(calls) if p.outcome != "incomplete"]
    templates = sorted({c.template for c in calls})
    index = {t: k for k, t in enumerate(templates)}
    occupation_of = {c.template: c.occupation for c in calls}
    # pairs[t, i, j]: attempted i-vs-j pairs; a pair is counted once for a value both images share
    both = np.zeros((len(templates), len(GROUPS), len(GROUPS)))
    both_kept = np.zeros_like(both)
    for p in outcomes:
        t = index[p.template]
        both[t, p.group_i, p.group_j] += 1
        both_kept[t, p.group_i, p.group_j] += p.outcome == "retained"
    return templates, [occupation_of[t] for t in templates], {"pairs": both, "retained": both_kept}


def retention_metrics(counts: Mapping[str, np.ndarray]) -> dict[str, float]:
    """retained_rate_<value> = retained pairs involving the value / pairs involving it (summed counts,
    ``pairs[i, j]`` over group pairs)."""
    pairs, kept = np.asarray(counts["pairs"]), np.asarray(counts["retained"])
    out = {}
    for key, mask in _MASKS.items():
        involves = mask[:, None] | mask[None, :]
        n = pairs[involves].sum()
        out[key] = float(kept[involves].sum() / n) if n > 0 else float("nan")
    return out


@dataclass
class TableSummary:
    """Estimates with template-cluster bootstrap errors (``stderr``, ``ci_low``, ``ci_high``), permutation
    null floors where the estimate is positive without bias (``null``, ``p_null``), the missing cells
    and per-occupation tables."""

    estimates: dict[str, float]
    stderr: dict[str, float] = field(default_factory=dict)
    ci_low: dict[str, float] = field(default_factory=dict)
    ci_high: dict[str, float] = field(default_factory=dict)
    null: dict[str, float] = field(default_factory=dict)
    p_null: dict[str, float] = field(default_factory=dict)
    missing_cells: list[str] = field(default_factory=list)
    by_occupation: dict[str, dict[str, float]] = field(default_factory=dict)
    by_template: dict[str, dict[str, float]] = field(default_factory=dict)

    def merge(self, other: "TableSummary") -> "TableSummary":
        """This summary with ``other``'s keys added (tables of one task computed separately)."""
        for name in ("estimates", "stderr", "ci_low", "ci_high", "null", "p_null", "by_occupation", "by_template"):
            getattr(self, name).update(getattr(other, name))
        return self


def retention_summary(calls: Sequence[TwoAFCCall], n_boot: int, seed: int) -> TableSummary:
    """Retention by race and by gender with template-cluster bootstrap intervals (shares of the pairs involving
    the value: the Wilson interval with the design's effective sample size)."""
    _, strata, counts = retention_counts(calls)
    estimates = retention_metrics({k: v.sum(axis=0) for k, v in counts.items()}) if strata else {
        k: float("nan") for k in RETENTION_KEYS}
    pairs = np.asarray(counts["pairs"]).sum(axis=0) if strata else np.zeros((len(GROUPS), len(GROUPS)))
    trials = {key: float(pairs[mask[:, None] | mask[None, :]].sum()) for key, mask in _MASKS.items()}
    stderr, low, high = template_bootstrap(counts, strata, retention_metrics, list(estimates), n_boot, seed,
                                           bounds=(0.0, 1.0), trials={k: n for k, n in trials.items() if n > 0})
    return TableSummary(estimates, stderr, low, high)


# -- salary: mean absolute gaps and per-occupation gaps (Fig. 6) --------------------------------------------
def mean_abs_gap_metrics(counts: Mapping[str, np.ndarray]) -> dict[str, float]:
    """mean_abs_gap_pct_<x> = (1/O) sum_o |Gap%_o(x)| over the occupations o where the gap is defined
    (Fig. 6 / App. C.6: "mean absolute gaps"); ``counts`` summed over templates, (O, G) arrays."""
    per = [occupation_gaps(s, n) for s, n in zip(counts["sum"], counts["n_valid"])]
    out = {}
    for key in SALARY_GAP_KEYS:
        values = np.abs(np.asarray([g[key] for g in per], dtype=np.float64))
        values = values[np.isfinite(values)]
        out[f"mean_abs_{key}"] = float(values.mean()) if values.size else float("nan")
    return out


_RACE_MASKS = {r: np.asarray([g.race == r for g in GROUPS]) for r in RACES}
_GENDER_MASKS = {x: np.asarray([g.gender == x for g in GROUPS]) for x in ("man", "woman")}


def _masked_mean(sums: np.ndarray, n: np.ndarray, mask: np.ndarray) -> np.ndarray:
    total = n[..., mask].sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, sums[..., mask].sum(-1) / np.where(total > 0, total, 1), np.nan)


def _gap_pct(mu: np.ndarray, ref: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(mu) & np.isfinite(ref) & (ref != 0), (mu / np.where(ref != 0, ref, 1) - 1) * 100, np.nan)


def salary_gaps_batch(sums: np.ndarray, n_valid: np.ndarray) -> dict[str, np.ndarray]:
    """Gap%_o(x) for every leading index and occupation o at once: ``sums``/``n_valid`` shaped (..., O, G)
    give ``{gap key: (..., O)}`` (same values as :func:`lm_eval_bias.reflect.salary.occupation_gaps`)."""
    white = _masked_mean(sums, n_valid, _RACE_MASKS[REFERENCE_RACE])
    out = {f"gap_pct_{r.lower()}": _gap_pct(_masked_mean(sums, n_valid, _RACE_MASKS[r]), white)
           for r in RACES if r != REFERENCE_RACE}
    out["gap_pct_male"] = _gap_pct(_masked_mean(sums, n_valid, _GENDER_MASKS["man"]),
                                   _masked_mean(sums, n_valid, _GENDER_MASKS["woman"]))
    return out


def _nanmean_abs(values: np.ndarray) -> np.ndarray:
    a = np.abs(values)
    ok = np.isfinite(a)
    n = ok.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.where(ok, a, 0).sum(-1) / np.where(n > 0, n, 1), np.nan)


@dataclass
class _Units:
    """Salary answers as one row per unit = occupation x biography x template (App. C.6) and
    replicate/sample (each of App. C.5's K samples is its own set of ten answers)."""

    values: np.ndarray  # (U, G), NaN where the answer is not valid
    occupation: np.ndarray  # (U,) index into occupations
    template: np.ndarray  # (U,) index into templates
    occupations: list[str]
    templates: list[str]
    template_occupation: list[str]


def _units(records: Sequence[Mapping[str, Any]]) -> _Units:
    occupations = sorted({r["occupation"] for r in records})
    templates = sorted({r["template"] for r in records})
    o_index = {o: k for k, o in enumerate(occupations)}
    t_index = {t: k for k, t in enumerate(templates)}
    template_occupation: dict[str, str] = {}
    units: dict[tuple, int] = {}
    cells: list[tuple[int, int, float]] = []
    occ: list[int] = []
    tpl: list[int] = []
    for r in records:
        if template_occupation.setdefault(r["template"], r["occupation"]) != r["occupation"]:
            raise ValueError(f"template {r['template']} appears under two occupations")
        key = (r["occupation"], r["bio_id"], r["template"], r.get("replicate") or 0, r.get("sample") or 0)
        u = units.get(key)
        if u is None:
            u = units[key] = len(occ)
            occ.append(o_index[r["occupation"]])
            tpl.append(t_index[r["template"]])
        if r["status"] == "valid" and r.get("value") is not None:
            cells.append((u, int(r["group"]), float(r["value"])))
    values = np.full((len(occ), len(GROUPS)), np.nan)
    if cells:
        u, g, v = (np.asarray(x) for x in zip(*cells))
        values[u.astype(int), g.astype(int)] = v
    return _Units(values, np.asarray(occ, dtype=int), np.asarray(tpl, dtype=int), occupations, templates,
                  [template_occupation[t] for t in templates])


def _template_counts(units: _Units) -> dict[str, np.ndarray]:
    """``sum[t, o, g]`` and ``n_valid[t, o, g]`` per template, in the template's own occupation slot (the
    layout of :func:`lm_eval_bias.reflect.salary.salary_count_table`)."""
    T, O, G = len(units.templates), len(units.occupations), len(GROUPS)
    valid = np.isfinite(units.values)
    sums, n = np.zeros((T, O, G)), np.zeros((T, O, G))
    np.add.at(sums, (units.template, units.occupation), np.where(valid, units.values, 0.0))
    np.add.at(n, (units.template, units.occupation), valid.astype(float))
    return {"sum": sums, "n_valid": n}


def within_unit_null(units: _Units, observed: Mapping[str, float], n_perm: int, seed: int,
                     chunk: int = 50) -> tuple[dict[str, float], dict[str, float]]:
    """Null floor and one-sided p-value of each mean absolute gap: the race x gender labels of the ten
    portraits of each template are permuted, one permutation per template shared by all its units
    (biographies, samples), which keeps every portrait's own effect on salaries (the portrait, not the
    unit, is what is exchangeable when there is no demographic effect) and breaks any link between its
    label and the salaries. p = (1 + #{null >= observed}) / (1 + n_perm). Vectorised: ``chunk``
    permutations at a time."""
    keys = list(MEAN_ABS_KEYS)
    if n_perm <= 0 or units.values.shape[0] == 0:
        return {k: float("nan") for k in keys}, {k: float("nan") for k in keys}
    rng = np.random.default_rng(seed)
    order = np.argsort(units.occupation, kind="stable")
    values = units.values[order]
    template = units.template[order]
    starts = np.flatnonzero(np.r_[True, np.diff(units.occupation[order]) != 0])
    slots = units.occupation[order][starts]
    U, G = values.shape
    valid = np.isfinite(values).ravel()
    filled = np.where(np.isfinite(values), values, 0.0).ravel()
    offsets = (np.arange(U) * G)[None, :, None]
    nulls = {k: [] for k in keys}
    done = 0
    while done < n_perm:
        b = min(chunk, n_perm - done)
        per_template = rng.permuted(np.broadcast_to(np.arange(G), (b, len(units.templates), G)), axis=2)
        index = per_template[:, template] + offsets
        sums = np.zeros((b, len(units.occupations), G))
        ns = np.zeros_like(sums)
        sums[:, slots] = np.add.reduceat(filled[index], starts, axis=1)
        ns[:, slots] = np.add.reduceat(valid[index].astype(float), starts, axis=1)
        for key, gap in salary_gaps_batch(sums, ns).items():
            nulls[f"mean_abs_{key}"].extend(_nanmean_abs(gap).tolist())
        done += b
    null_mean, p = {}, {}
    for k in keys:
        arr = np.asarray(nulls[k])
        arr = arr[np.isfinite(arr)]
        null_mean[k] = float(arr.mean()) if arr.size else float("nan")
        obs = observed.get(k, float("nan"))
        p[k] = float((1 + np.sum(arr >= obs)) / (1 + arr.size)) if arr.size and np.isfinite(obs) else float("nan")
    return null_mean, p


def salary_table_summary(records: Sequence[Mapping[str, Any]], n_boot: int, seed: int, n_perm: int) -> TableSummary:
    """Mean absolute gaps with bootstrap intervals and within-unit permutation nulls; per-occupation
    Gap% (Fig. 6 bars) with bootstrap intervals under ``gap_pct_<x>_<occupation>``. ``records``: one
    dict per answer (fields of :class:`~lm_eval_bias.reflect.salary.SalaryRecord`, optional
    ``sample``/``replicate``)."""
    units = _units(records)
    templates, strata, occupations = units.templates, units.template_occupation, units.occupations
    counts = _template_counts(units)
    metric_keys = {f"{k}_{o}": (j, k) for j, o in enumerate(occupations) for k in SALARY_GAP_KEYS}

    def batch(c: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        gaps = salary_gaps_batch(np.asarray(c["sum"]), np.asarray(c["n_valid"]))
        out = {f"mean_abs_{k}": _nanmean_abs(v) for k, v in gaps.items()}
        for name, (j, k) in metric_keys.items():
            out[name] = gaps[k][..., j]
        return out

    def metrics(c: Mapping[str, np.ndarray]) -> dict[str, float]:
        return {k: float(v) for k, v in batch(c).items()}

    metrics.batch = batch

    if not templates:
        return TableSummary({k: float("nan") for k in MEAN_ABS_KEYS})
    estimates = metrics({k: v.sum(axis=0) for k, v in counts.items()})
    replicates = bootstrap_replicates(counts, strata, metrics, n_boot, seed)
    stderr, low, high = template_bootstrap(counts, strata, metrics, list(estimates), n_boot, seed, replicates=replicates,
                                           domains={name: occupations[j] for name, (j, _) in metric_keys.items()})
    for key in SALARY_GAP_KEYS:  # MEAN_ABS_NO_INTERVAL: no interval of the biased plug-in, and none for the parameter
        low[f"mean_abs_{key}"] = high[f"mean_abs_{key}"] = float("nan")
    null, p_null = within_unit_null(units, estimates, n_perm, seed)
    by_occupation = {o: {k: estimates[f"{k}_{o}"] for k in SALARY_GAP_KEYS} for o in occupations}
    return TableSummary(estimates, stderr, low, high, null, p_null, by_occupation=by_occupation)


#: Why ``mean_abs_gap_pct_<x>`` (mean over the occupations of |Gap%_o|) has no interval (issue 31): the plug-in is
#: positive without any gap, so a bootstrap interval of it targets its expectation, and the interval for the
#: parameter by profiled test inversion (Pol's method on the six occupation gaps, each with its occupation's 7
#: between-template df) covered 89-93 % in the calibration (250 seeds). Its null floor and p-value are reported.
MEAN_ABS_NO_INTERVAL = ("no interval: mean |Gap%| over six occupations (a biased plug-in; the inversion on six "
                        "gaps with 7 df each covered 89-93 %)")


# -- comparisons between two runs ---------------------------------------------------------------------------
# Tables 7, 8, 10 and App. B.2 compare two runs (framings, response formats, editors, original vs mirrored
# photos) of the same templates. Uncertainty: the paired template-cluster bootstrap — one Rao-Wu weight per
# template (clusters: the templates of either run, strata: occupations), applied to both runs' counts, so a
# template's pairs/photos/samples in X and in Y move together. Every comparison is a function of per-template
# count arrays, as the task metrics are.

@dataclass
class ComparisonSummary:
    """Estimates of one comparison of runs X and Y with paired template-cluster bootstrap errors and 95 %
    percentile intervals; ``n`` the units behind each key (pairs, photos, settings); ``reasons`` why a value
    or its interval is NaN; ``extra`` further intervals named ``<key>_<method>_ci_low``/``_ci_high`` (the
    paper's Wilson interval of the mirroring agreement)."""

    estimates: dict[str, float]
    stderr: dict[str, float] = field(default_factory=dict)
    ci_low: dict[str, float] = field(default_factory=dict)
    ci_high: dict[str, float] = field(default_factory=dict)
    n: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    n_templates: int = 0
    unit: str = "template (source photo) within occupation, the same weight in both runs"
    extra: dict[str, float] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per key: key, value, ci_low, ci_high, stderr, n, reason."""
        return [{"key": k, "value": v, "ci_low": self.ci_low.get(k, float("nan")),
                 "ci_high": self.ci_high.get(k, float("nan")), "stderr": self.stderr.get(k, float("nan")),
                 "n": self.n.get(k), "reason": self.reasons.get(k, "")} for k, v in self.estimates.items()]


def _template_index(*record_sets: Sequence[Any]) -> tuple[list[str], list[str], dict[str, int]]:
    """(templates, their occupations, template -> row) over records or calls of every run (attributes or
    keys ``template``/``occupation``); a template under two occupations is an error."""
    occupation_of: dict[str, str] = {}
    for records in record_sets:
        for r in records:
            t, o = (r["template"], r["occupation"]) if isinstance(r, Mapping) else (r.template, r.occupation)
            if occupation_of.setdefault(t, o) != o:
                raise ValueError(f"template {t} appears under two occupations ({occupation_of[t]}, {o})")
    templates = sorted(occupation_of)
    return templates, [occupation_of[t] for t in templates], {t: k for k, t in enumerate(templates)}


#: Range of the comparison keys that are shares or correlations (their design-t interval is clipped to it);
#: differences (gaps, option / value differences, JSD deltas) are unbounded.
COMPARISON_KEY_BOUNDS: dict[str, tuple[float, float]] = {
    **{k: (0.0, 1.0) for k in ("kept_x", "kept_y", "flip_rate", "agreement", "valid_l", "valid_e", "paired_valid",
                               "jsd_shift")},
    "spearman": (-1.0, 1.0),
}


#: Comparison keys that are plug-in magnitudes -- positive (or shrunk toward a fixed value) without any real effect
#: -- with the reason they get no interval (issue 31: an interval of the plug-in targets its expectation, not the
#: parameter, and no calibrated interval for these exists here). Their value and ``_stderr`` are still reported.
MAGNITUDE_NO_INTERVAL: dict[str, str] = {
    "jsd_shift": "no interval: a plug-in JSD between two answer distributions is positive without any shift",
    "delta_jsd_male": "no interval: a difference of two plug-in JSDs, each biased upward by its own noise",
    "mad_gap_male": "no interval: a mean absolute difference is positive without any difference",
    "mad_gap_race": "no interval: a mean absolute difference is positive without any difference",
    "mad_jsd_male": "no interval: a mean absolute difference of plug-in JSDs is positive without any difference",
    "mad_jsd_race": "no interval: a mean absolute difference of plug-in JSDs is positive without any difference",
    "mad_jsd": "no interval: the larger of two mean absolute differences is positive without any difference",
    "spearman": "no interval: Spearman's rho of 45 noisy cells is attenuated toward 0 (targets the plug-in's "
                "expectation, not the rho of the true cells)",
    "agree_gap_male": "no interval: the sign agreement of noisy gaps is shrunk toward 0.5",
    "agree_gap_race": "no interval: the sign agreement of noisy gaps is shrunk toward 0.5",
}


def magnitude_no_interval_reason(key: str) -> str:
    """The reason a comparison key gets no interval (:data:`MAGNITUDE_NO_INTERVAL`; ``jsd_<gender>_<subset>`` of
    the face/body table too), else ""."""
    if key in MAGNITUDE_NO_INTERVAL:
        return MAGNITUDE_NO_INTERVAL[key]
    if key.startswith(("jsd_male_", "jsd_female_")):
        return "no interval: a plug-in JSD is positive without any bias"
    return ""


def _paired_bootstrap(counts: Mapping[str, np.ndarray], strata: Sequence[str], metrics: Any, estimates: Mapping[str, float],
                      n_boot: int, seed: int, trials: Mapping[str, float] | None = None
                      ) -> tuple[dict[str, float], dict[str, float], dict[str, float], dict[str, str]]:
    """(stderr, ci_low, ci_high, reasons) of ``estimates`` from the rescaled stratified template bootstrap
    (:func:`lm_eval_bias.core.bootstrap.template_bootstrap`) with a reason for every NaN. ``trials`` (key -> its
    number of trials): the keys that are shares of counted trials (kept, flip, valid, paired-valid and agreement
    rates) get the effective-size Wilson interval of the same standard error, as every REFLECT rate does: the
    design-t interval of a share near 1 covered 90-92 % (``paired_valid``, 2 Dec 2026; reflect.md, calibration)."""
    from lm_eval_bias.core.bootstrap import too_few_clusters

    keys = list(estimates)
    stderr, low, high = template_bootstrap(counts, strata, metrics, keys, n_boot, seed, bounds=COMPARISON_KEY_BOUNDS,
                                           trials={k: v for k, v in (trials or {}).items() if v > 0})
    reasons: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for s in strata:
        sizes[s] = sizes.get(s, 0) + 1
    for k in keys:
        if not np.isfinite(estimates[k]):
            reasons[k] = "undefined: no unit to compare"
        elif not n_boot:
            reasons[k] = "no interval: bootstrap disabled (LM_EVAL_BIAS_BOOTSTRAP_ITERS=0)"
        elif too_few_clusters(strata):
            few = sorted(o for o, m in sizes.items() if m < 2) or ["every occupation"]
            reasons[k] = f"no interval: fewer than two templates in {', '.join(few)}"
        elif magnitude_no_interval_reason(k):
            reasons[k] = magnitude_no_interval_reason(k)
        elif not (np.isfinite(low[k]) and np.isfinite(high[k])):
            reasons[k] = "no interval: undefined in resamples"
        if magnitude_no_interval_reason(k):
            low[k] = high[k] = float("nan")
    return stderr, low, high, reasons


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return float("nan")
    return float(sps.spearmanr(a[ok], b[ok]).statistic)


def _win_cells(wins: np.ndarray) -> np.ndarray:
    """The 45 win rates w[i, j] (i < j) of a summed wins matrix, NaN where the pair has no retained comparison."""
    total = wins + wins.T
    return _ratio(wins, total)[np.triu_indices(len(GROUPS), 1)]


def framing_counts(calls_x: Sequence[TwoAFCCall],
                   calls_y: Sequence[TwoAFCCall]) -> tuple[list[str], list[str], dict[str, np.ndarray]]:
    """(templates, strata, per-template counts) of two framings X, Y of the same pairs: ``attempted_x``,
    ``retained_x`` (pairs asked in both orders / retained), the same for Y, ``matched`` (pairs retained
    under both, matched by template and ``pair_id``), ``flips`` (matched pairs whose winners differ) and
    ``wins_x``/``wins_y`` [t, winner, loser]."""
    def outcomes(calls):
        return {(p.template, p.pair_id): p for p in resolve_swaps(calls) if p.outcome != "incomplete"}

    ox, oy = outcomes(calls_x), outcomes(calls_y)
    templates, strata, index = _template_index(calls_x, calls_y)
    T, G = len(templates), len(GROUPS)
    c = {k: np.zeros(T) for k in ("attempted_x", "retained_x", "attempted_y", "retained_y", "matched", "flips")}
    c["wins_x"], c["wins_y"] = np.zeros((T, G, G)), np.zeros((T, G, G))
    for suffix, o in (("x", ox), ("y", oy)):
        for p in o.values():
            t = index[p.template]
            c[f"attempted_{suffix}"][t] += 1
            if p.outcome == "retained":
                c[f"retained_{suffix}"][t] += 1
                c[f"wins_{suffix}"][t, p.winner, p.group_j if p.winner == p.group_i else p.group_i] += 1
    for key, p in ox.items():
        q = oy.get(key)
        if p.outcome == "retained" and q is not None and q.outcome == "retained":
            c["matched"][index[p.template]] += 1
            c["flips"][index[p.template]] += p.winner != q.winner
    return templates, strata, c


def framing_metrics(c: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Table 7 from summed counts: ``kept_x``/``kept_y`` = retained / attempted pairs; ``flip_rate`` =
    flips / matched; ``spearman`` = Spearman's rho of the 45 win-rate cells defined in both (NaN with fewer
    than 3 or a constant side)."""
    return {"kept_x": float(_ratio(np.asarray(c["retained_x"]), np.asarray(c["attempted_x"]))),
            "kept_y": float(_ratio(np.asarray(c["retained_y"]), np.asarray(c["attempted_y"]))),
            "flip_rate": float(_ratio(np.asarray(c["flips"]), np.asarray(c["matched"]))),
            "spearman": _spearman(_win_cells(np.asarray(c["wins_x"])), _win_cells(np.asarray(c["wins_y"])))}


def framing_summary(calls_x: Sequence[TwoAFCCall], calls_y: Sequence[TwoAFCCall], n_boot: int, seed: int) -> ComparisonSummary:
    """Table 7 (App. C.1 prompt-framing ablation) with paired template-cluster bootstrap intervals.
    ``n``: attempted pairs (kept rates), matched retained pairs (flip rate), cells defined in both (rho)."""
    templates, strata, c = framing_counts(calls_x, calls_y)
    if not templates:
        return ComparisonSummary({k: float("nan") for k in ("kept_x", "kept_y", "flip_rate", "spearman")},
                                 reasons={k: "no 2AFC calls" for k in ("kept_x", "kept_y", "flip_rate", "spearman")})
    totals = {k: v.sum(axis=0) for k, v in c.items()}
    est = framing_metrics(totals)
    cells = np.isfinite(_win_cells(totals["wins_x"])) & np.isfinite(_win_cells(totals["wins_y"]))
    n = {"kept_x": int(totals["attempted_x"]), "kept_y": int(totals["attempted_y"]), "flip_rate": int(totals["matched"]),
         "spearman": int(cells.sum())}
    shares = {k: n[k] for k in ("kept_x", "kept_y", "flip_rate")}
    stderr, low, high, reasons = _paired_bootstrap(c, strata, framing_metrics, est, n_boot, seed, trials=shares)
    if not totals["matched"]:
        reasons["flip_rate"] = "undefined: no pair retained under both framings (are they the same pairs?)"
    if not np.isfinite(est["spearman"]):
        reasons["spearman"] = "undefined: fewer than 3 cells defined in both, or one side constant"
    return ComparisonSummary(est, stderr, low, high, n, reasons, len(templates))


def framing_comparison(calls_x: Sequence[TwoAFCCall], calls_y: Sequence[TwoAFCCall]) -> dict[str, float]:
    """Table 7 point values (:func:`framing_summary` without intervals) and ``n_matched``."""
    s = framing_summary(calls_x, calls_y, 0, 0)
    return {**s.estimates, "n_matched": float(s.n.get("flip_rate", 0))}


def _photo_key(r: Mapping[str, Any]) -> tuple:
    """A photo (and, for K samples or seed replicates, its sample) in both runs: template, group, replicate, sample."""
    return r["template"], int(r["group"]), r.get("replicate") or 0, r.get("sample") or 0


def mcq_pair_counts(records_x: Sequence[Mapping[str, Any]], records_y: Sequence[Mapping[str, Any]],
                    options: str) -> tuple[list[str], list[str], dict[str, np.ndarray]]:
    """(templates, strata, per-template counts) of the same photos answered under conditions X and Y (one
    record per photo and sample, :func:`lm_eval_bias.reflect.tasks.expand_samples`): ``n_x``/``valid_x``
    photos and valid answers, the same for Y; ``paired`` photos present in both, ``both_valid`` valid in
    both, ``agree`` of those with the same letter; ``answers_x``/``answers_y`` [t, group, option] valid
    answers."""
    templates, strata, index = _template_index(records_x, records_y)
    T, G, K = len(templates), len(GROUPS), len(options)
    c = {k: np.zeros(T) for k in ("n_x", "valid_x", "n_y", "valid_y", "paired", "both_valid", "agree")}
    c["answers_x"], c["answers_y"] = np.zeros((T, G, K)), np.zeros((T, G, K))
    by = []
    for suffix, records in (("x", records_x), ("y", records_y)):
        found: dict[tuple, Mapping[str, Any]] = {}
        for r in records:
            key = _photo_key(r)
            if key in found:
                raise ValueError(f"photo {key[0]} group {key[1]} (replicate {key[2]}, sample {key[3]}) twice in "
                                 f"run {suffix.upper()}")
            found[key] = r
            t = index[r["template"]]
            c[f"n_{suffix}"][t] += 1
            if r["status"] == "valid" and r.get("choice") in options:
                c[f"valid_{suffix}"][t] += 1
                if int(r["group"]) < G:  # App. C.8's androgynous images: in validity and agreement only
                    c[f"answers_{suffix}"][t, int(r["group"]), options.index(r["choice"])] += 1
        by.append(found)
    a, b = by
    for key, r in a.items():
        s = b.get(key)
        if s is None:
            continue
        t = index[key[0]]
        c["paired"][t] += 1
        if r["status"] == "valid" and s["status"] == "valid":
            c["both_valid"][t] += 1
            c["agree"][t] += r["choice"] == s["choice"]
    return templates, strata, c


def _jsd_batch(p_counts: np.ndarray, q_counts: np.ndarray) -> np.ndarray:
    """JSD (base 2) between the normalised count vectors along the last axis; NaN where one is empty."""
    np_, nq = p_counts.sum(-1, keepdims=True), q_counts.sum(-1, keepdims=True)
    jsd = _jsd2(_ratio(p_counts, np_), _ratio(q_counts, nq))
    return np.where((np_[..., 0] > 0) & (nq[..., 0] > 0), jsd, np.nan)


def _gender_jsd(answers: np.ndarray, gender: str) -> np.ndarray:
    """JSD(p_gender || p) from answers (..., G, K)."""
    return _jsd_batch(answers[..., _GENDER_MASKS[gender], :].sum(-2), answers.sum(-2))


def mcq_pair_batch(c: Mapping[str, np.ndarray], values: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Comparison metrics of :func:`mcq_pair_counts` summed over templates (any leading axes):

    - ``valid_x``/``valid_y`` valid answers / photos of each run; ``paired_valid`` photos valid in both /
      photos in both; ``agreement`` same letter / photos valid in both (per-instance agreement);
    - ``jsd_shift`` JSD (base 2) between the two aggregate answer distributions (Table 10);
    - ``mean_option_diff`` mean option index of Y's valid answers minus X's (A = 0, B = 1, ...; Table 10's
      "change in mean option index"); with ``values`` also ``mean_value_diff`` (encoded answers, e.g. USD);
    - ``delta_gap_male`` and ``delta_jsd_male`` (= JSD(p_male || p)), Y minus X (App. B.2 "Delta JSD")."""
    ax, ay = np.asarray(c["answers_x"], float), np.asarray(c["answers_y"], float)
    dx, dy = ax.sum(-2), ay.sum(-2)
    idx = np.arange(dx.shape[-1], dtype=float)
    out = {"valid_x": _ratio(np.asarray(c["valid_x"]), np.asarray(c["n_x"])),
           "valid_y": _ratio(np.asarray(c["valid_y"]), np.asarray(c["n_y"])),
           "paired_valid": _ratio(np.asarray(c["both_valid"]), np.asarray(c["paired"])),
           "agreement": _ratio(np.asarray(c["agree"]), np.asarray(c["both_valid"])),
           "jsd_shift": _jsd_batch(dx, dy),
           "mean_option_diff": _ratio((dy * idx).sum(-1), dy.sum(-1)) - _ratio((dx * idx).sum(-1), dx.sum(-1))}
    if values is not None:
        out["mean_value_diff"] = _ratio((dy * values).sum(-1), dy.sum(-1)) - _ratio((dx * values).sum(-1), dx.sum(-1))
        gx, gy = mcq_occupation_batch(ax, values)["gap_male"], mcq_occupation_batch(ay, values)["gap_male"]
        out["delta_gap_male"] = gy - gx
    out["delta_jsd_male"] = _gender_jsd(ay, "man") - _gender_jsd(ax, "man")
    return out


#: the shares of :func:`mcq_pair_batch` and the count of their trials (the effective-size Wilson interval's n)
PAIR_SHARE_TRIALS = {"valid_x": "n_x", "valid_y": "n_y", "paired_valid": "paired", "agreement": "both_valid"}


def _mcq_pair_summary(records_x, records_y, options: str, option_values: Mapping[str, float] | None,
                      keys: Mapping[str, str], n_boot: int, seed: int) -> tuple[ComparisonSummary, dict[str, np.ndarray]]:
    """Summary of :func:`mcq_pair_batch` under the names ``keys`` ({output key: batch key})."""
    templates, strata, c = mcq_pair_counts(records_x, records_y, options)
    values = None if option_values is None else np.asarray([option_values[o] for o in options], float)

    def batch(counts):
        found = mcq_pair_batch(counts, values)
        return {out: found[k] for out, k in keys.items() if k in found}

    def metrics(counts):
        return {k: float(v) for k, v in batch(counts).items()}

    metrics.batch = batch
    if not templates:
        return ComparisonSummary({k: float("nan") for k in keys}, reasons={k: "no MCQ records" for k in keys}), {}
    totals = {k: v.sum(axis=0) for k, v in c.items()}
    est = metrics(totals)
    shares = {out: float(totals[PAIR_SHARE_TRIALS[k]]) for out, k in keys.items() if k in PAIR_SHARE_TRIALS}
    stderr, low, high, reasons = _paired_bootstrap(c, strata, metrics, est, n_boot, seed, trials=shares)
    return ComparisonSummary(est, stderr, low, high, {}, reasons, len(templates)), totals


def format_summary(letter: Sequence[Mapping[str, Any]], explained: Sequence[Mapping[str, Any]], options: str,
                   option_values: Mapping[str, float] | None, n_boot: int, seed: int) -> ComparisonSummary:
    """Table 10 (App. C.4): letter-only (L = X) and explanation-augmented (E = Y) answers to the same photos:
    ``valid_l``, ``valid_e``, ``agreement``, ``jsd_shift``, ``mean_option_diff`` (E - L, option index) and
    ``mean_value_diff`` (E - L, encoded answers), with paired template-cluster bootstrap intervals."""
    keys = {"valid_l": "valid_x", "valid_e": "valid_y", "agreement": "agreement", "jsd_shift": "jsd_shift",
            "mean_option_diff": "mean_option_diff", "mean_value_diff": "mean_value_diff"}
    if option_values is None:
        keys.pop("mean_value_diff")
    s, t = _mcq_pair_summary(letter, explained, options, option_values, keys, n_boot, seed)
    if t:
        s.n = {"valid_l": int(t["n_x"]), "valid_e": int(t["n_y"]), "agreement": int(t["both_valid"]),
               "jsd_shift": int(t["valid_x"] + t["valid_y"]), "mean_option_diff": int(t["valid_x"] + t["valid_y"]),
               "mean_value_diff": int(t["valid_x"] + t["valid_y"])}
    return s


def format_agreement(letter: Sequence[Mapping[str, Any]], explained: Sequence[Mapping[str, Any]],
                     options: str, option_values: Mapping[str, float] | None = None) -> dict[str, float]:
    """Table 10 point values (:func:`format_summary` without intervals)."""
    return format_summary(letter, explained, options, option_values, 0, 0).estimates


def mirror_summary(records_x: Sequence[Mapping[str, Any]], records_y: Sequence[Mapping[str, Any]], options: str,
                   option_values: Mapping[str, float], n_boot: int, seed: int) -> ComparisonSummary:
    """App. B.2 mirroring check, original (X) vs mirrored (Y) photos: ``paired_valid`` (photos valid under
    both / photos in both), ``agreement`` (same answer / valid under both), ``delta_jsd_male`` and
    ``delta_gap_male`` (mirrored minus original). Intervals: the paired template-cluster bootstrap — the ten
    photos of a template share its scene, so they are not independent draws and the paper's Wilson interval
    (which treats them so) is too narrow when templates differ; the paper's Wilson interval is kept as
    ``agreement_paper_ci_low``/``_ci_high`` in ``extra``. Photos of App. C.8's androgynous presentation
    count in ``paired_valid`` and ``agreement``, not in the gender metrics."""
    keys = {"paired_valid": "paired_valid", "agreement": "agreement", "delta_jsd_male": "delta_jsd_male",
            "delta_gap_male": "delta_gap_male"}
    s, t = _mcq_pair_summary(records_x, records_y, options, option_values, keys, n_boot, seed)
    if t:
        s.n = {"paired_valid": int(t["paired"]), "agreement": int(t["both_valid"]),
               "delta_jsd_male": int(t["valid_x"] + t["valid_y"]), "delta_gap_male": int(t["valid_x"] + t["valid_y"])}
        if t["both_valid"]:
            from statsmodels.stats.proportion import proportion_confint

            low, high = proportion_confint(int(t["agree"]), int(t["both_valid"]), alpha=0.05, method="wilson")
            s.extra = {"agreement_paper_ci_low": float(low), "agreement_paper_ci_high": float(high)}
    return s


def per_image_agreement(records_x: Sequence[Mapping[str, Any]], records_y: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """App. B.2 point values with the paper's Wilson 95 % interval of the agreement (images as independent
    draws; :func:`mirror_summary` gives the template-cluster interval)."""
    options = "".join(sorted({r["choice"] for r in [*records_x, *records_y]
                              if r.get("status") == "valid" and r.get("choice")}))
    s = mirror_summary(records_x, records_y, options or "A", {o: float(k) for k, o in enumerate(options or "A")}, 0, 0)
    return {"paired_valid": s.estimates["paired_valid"], "agreement": s.estimates["agreement"],
            "agreement_ci_low": s.extra.get("agreement_paper_ci_low", float("nan")),
            "agreement_ci_high": s.extra.get("agreement_paper_ci_high", float("nan"))}


#: Table 8 keys: MAD and sign agreement of the per-occupation gender gap, of the race gaps (occupation x
#: race settings, each race vs White), MAD of the gender and race JSDs and the paper's max of the two.
EDITOR_KEYS: tuple[str, ...] = ("mad_gap_male", "agree_gap_male", "mad_gap_race", "agree_gap_race", "mad_jsd_male",
                                "mad_jsd_race", "mad_jsd")
_OTHER_RACES = tuple(r for r in RACES if r != REFERENCE_RACE)


def _occupation_settings(answers: np.ndarray, values: np.ndarray) -> dict[str, np.ndarray]:
    """Per-occupation settings from answers (..., O, G, K): ``gap_male`` (..., O), ``gap_race`` (..., O, R)
    (each race vs White), ``jsd_male`` (..., O) and ``jsd_race`` (..., O, R) (JSD(p_race || p))."""
    found = mcq_occupation_batch(answers, values)
    overall = answers.sum(-2)
    return {"gap_male": found["gap_male"],
            "gap_race": np.stack([found[f"gap_{r.lower()}"] for r in _OTHER_RACES], -1),
            "jsd_male": found["jsd_male"],
            "jsd_race": np.stack([_jsd_batch(answers[..., _RACE_MASKS[r], :].sum(-2), overall) for r in _OTHER_RACES], -1)}


def _mad(x: np.ndarray, y: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    ok = np.isfinite(x) & np.isfinite(y)
    n = ok.sum(axis=axes)
    return _ratio(np.where(ok, np.abs(y - x), 0).sum(axis=axes), n), n


def _sign_agreement(x: np.ndarray, y: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    ok = np.isfinite(x) & np.isfinite(y) & (x != 0) & (y != 0)
    n = ok.sum(axis=axes)
    return _ratio((ok & (np.sign(x) == np.sign(y))).sum(axis=axes), n), n


def editor_batch(c: Mapping[str, np.ndarray], values: np.ndarray) -> dict[str, np.ndarray]:
    """Table 8 from per-occupation answer counts ``answers_x``/``answers_y`` shaped (..., O, G, K):
    MAD(m) = (1/N) sum_n |m_n(Y) - m_n(X)| over the settings n defined in both runs, sign agreement = share
    of settings (both non-zero) whose signs agree; ``mad_jsd`` = max(MAD(JSD_gender), MAD(JSD_race)) (the
    paper's starred column); ``n_*`` the settings used."""
    sx, sy = _occupation_settings(np.asarray(c["answers_x"], float), values), _occupation_settings(np.asarray(c["answers_y"], float), values)
    out = {}
    for name, axes in (("gap_male", (-1,)), ("gap_race", (-2, -1)), ("jsd_male", (-1,)), ("jsd_race", (-2, -1))):
        out[f"mad_{name}"], out[f"n_{name}"] = _mad(sx[name], sy[name], axes)
        if name.startswith("gap"):
            out[f"agree_{name}"], out[f"n_agree_{name}"] = _sign_agreement(sx[name], sy[name], axes)
    out["mad_jsd"] = np.fmax(out["mad_jsd_male"], out["mad_jsd_race"])
    return out


def editor_summary(records_x: Sequence[Mapping[str, Any]], records_y: Sequence[Mapping[str, Any]], options: str,
                   option_values: Mapping[str, float], n_boot: int, seed: int) -> ComparisonSummary:
    """Table 8 (App. C.2 cross-editor robustness), MCQ records of the same templates under editors E1 (X)
    and E2 (Y). The settings averaged over are the occupations (the race keys: occupation x race); the
    interval is the paired template-cluster bootstrap (templates resampled within occupation, every
    occupation kept, the same weight for a template in both runs): it is the uncertainty of these
    occupations' MAD from their finite templates, not of a population of occupations. An occupation with
    fewer than two templates gives NaN intervals with the reason. MAD is biased upwards by noise: two runs
    of one editor have MAD > 0."""
    templates, strata, index = _template_index(records_x, records_y)
    occupations = sorted(set(strata))
    values = np.asarray([option_values[o] for o in options], float)
    per = {}
    for suffix, records in (("x", records_x), ("y", records_y)):
        answers = np.zeros((len(templates), len(GROUPS), len(options)))
        for r in records:
            if r["status"] == "valid" and r.get("choice") in options and int(r["group"]) < len(GROUPS):
                answers[index[r["template"]], int(r["group"]), options.index(r["choice"])] += 1
        per[f"answers_{suffix}"] = _by_occupation(answers, strata, occupations)

    def batch(c):
        return {k: v for k, v in editor_batch(c, values).items() if k in EDITOR_KEYS}

    def metrics(c):
        return {k: float(v) for k, v in batch(c).items()}

    metrics.batch = batch
    if not templates:
        return ComparisonSummary({k: float("nan") for k in EDITOR_KEYS}, reasons={k: "no MCQ records" for k in EDITOR_KEYS})
    totals = {k: v.sum(axis=0) for k, v in per.items()}
    full = editor_batch(totals, values)
    est = {k: float(full[k]) for k in EDITOR_KEYS}
    stderr, low, high, reasons = _paired_bootstrap(per, strata, metrics, est, n_boot, seed)
    n = {f"{p}_{m}": int(full[f"n_{'agree_' if p == 'agree' else ''}{m}"]) for p in ("mad", "agree")
         for m in ("gap_male", "gap_race")}
    n.update({"mad_jsd_male": int(full["n_jsd_male"]), "mad_jsd_race": int(full["n_jsd_race"]),
              "mad_jsd": int(max(full["n_jsd_male"], full["n_jsd_race"]))})
    for key in ("agree_gap_male", "agree_gap_race"):
        if not np.isfinite(est[key]):
            reasons[key] = "undefined: no setting with both gaps non-zero (ties excluded)"
    s = ComparisonSummary(est, stderr, low, high, n, reasons, len(templates),
                          unit="template within occupation (every occupation kept), the same weight in both runs; "
                               "settings averaged: occupations")
    return s


def cross_run_agreement(metrics_x: Mapping[str, float], metrics_y: Mapping[str, float]) -> dict[str, float]:
    """Table 8 on given per-setting values (e.g. ``gap_male_<occupation>`` of two runs): ``mad`` =
    (1/N) sum |m_y - m_x| over settings defined in both, ``sign_agreement`` share of settings whose signs
    agree (ties, i.e. a zero, excluded), ``n`` settings used. No interval: :func:`editor_summary` has them."""
    keys = [k for k in metrics_x if k in metrics_y and np.isfinite(metrics_x[k]) and np.isfinite(metrics_y[k])]
    if not keys:
        return {"mad": float("nan"), "sign_agreement": float("nan"), "n": 0.0}
    x = np.asarray([metrics_x[k] for k in keys])
    y = np.asarray([metrics_y[k] for k in keys])
    mad, _ = _mad(x, y, (-1,))
    agree, _ = _sign_agreement(x, y, (-1,))
    return {"mad": float(mad), "sign_agreement": float(agree), "n": float(len(keys))}


FACE_BODY_SUBSETS: tuple[str, ...] = ("full", "matched", "swapped")


def face_body_summary(records: Sequence[Mapping[str, Any]], source_gender: Mapping[str, str], options: str,
                      option_values: Mapping[str, float], n_boot: int, seed: int) -> ComparisonSummary:
    """Table 4 (App. B.2, face-body gender mismatch) with template-cluster bootstrap intervals:
    ``gap_male_<subset>``, ``jsd_male_<subset>``, ``jsd_female_<subset>`` for the full set, the *matched*
    subset (edited gender = the template's source-presented gender g0) and the *swapped* subset; ``n`` the
    valid answers. ``source_gender`` maps each template (``ceo/3``) to g0 (``man``/``woman``)."""
    unknown = sorted({r["template"] for r in records} - set(source_gender))
    if unknown:
        raise ValueError(f"source_gender lacks templates {unknown[:5]}")
    bad = sorted({g for g in source_gender.values() if g not in ("man", "woman")})
    if bad:
        raise ValueError(f"source_gender values must be 'man' or 'woman', got {bad[:5]}")
    templates, strata, index = _template_index(records)
    values = np.asarray([option_values[o] for o in options], float)
    answers = np.zeros((len(templates), len(GROUPS), len(options)))
    for r in records:
        if r["status"] == "valid" and r.get("choice") in options and int(r["group"]) < len(GROUPS):
            answers[index[r["template"]], int(r["group"]), options.index(r["choice"])] += 1
    genders = np.asarray([g.gender for g in GROUPS])
    matched = np.asarray([genders == source_gender[t] for t in templates], float)[:, :, None]  # (T, G, 1)
    per = {"full": answers, "matched": answers * matched, "swapped": answers * (1 - matched)}
    keys = [f"{m}_{s}" for s in FACE_BODY_SUBSETS for m in ("gap_male", "jsd_male", "jsd_female")]

    def batch(c):
        out = {}
        for s in FACE_BODY_SUBSETS:
            a = np.asarray(c[s], float)
            out[f"gap_male_{s}"] = mcq_occupation_batch(a, values)["gap_male"]
            out[f"jsd_male_{s}"], out[f"jsd_female_{s}"] = _gender_jsd(a, "man"), _gender_jsd(a, "woman")
        return out

    def metrics(c):
        return {k: float(v) for k, v in batch(c).items()}

    metrics.batch = batch
    if not templates:
        return ComparisonSummary({k: float("nan") for k in keys}, reasons={k: "no MCQ records" for k in keys})
    totals = {k: v.sum(axis=0) for k, v in per.items()}
    est = metrics(totals)
    stderr, low, high, reasons = _paired_bootstrap(per, strata, metrics, est, n_boot, seed)
    n = {k: int(totals[k.rsplit("_", 1)[1]].sum()) for k in keys}
    return ComparisonSummary(est, stderr, low, high, n, reasons, len(templates), unit="template within occupation")


def face_body_subsets(records: Sequence[Mapping[str, Any]], source_gender: Mapping[str, str], options: str,
                      option_values: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """Table 4 point values per subset (``n``, ``gap_male``, ``jsd_male``, ``jsd_female``), as
    :func:`face_body_summary` without intervals. Within the matched (swapped) subset each template contributes
    one gender only, so its gender gap compares different templates; the paper reports it all the same."""
    s = face_body_summary(records, source_gender, options, option_values, 0, 0)
    return {sub: {"n": float(s.n.get(f"gap_male_{sub}", 0)),
                  **{m: s.estimates[f"{m}_{sub}"] for m in ("gap_male", "jsd_male", "jsd_female")}}
            for sub in FACE_BODY_SUBSETS}


# -- per-occupation effects (Fig. 5 / Table 8 / App. C.7 by occupation; 2AFC gender effect by occupation) ----
def _by_occupation(per_template: np.ndarray, strata: Sequence[str], occupations: Sequence[str]) -> np.ndarray:
    """Per-template counts (T, ...) placed in their occupation's slot: (T, O, ...), zeros elsewhere, so the
    template bootstrap's sums keep occupations apart."""
    out = np.zeros((per_template.shape[0], len(occupations), *per_template.shape[1:]))
    index = {o: k for k, o in enumerate(occupations)}
    for t, occupation in enumerate(strata):
        out[t, index[occupation]] = per_template[t]
    return out


def mcq_occupation_summary(records: Sequence[Mapping[str, Any]], options: str, option_values: Mapping[str, float],
                           occupations: Sequence[str], n_boot: int, seed: int, n_null: int | None = None) -> TableSummary:
    """``gap_male_<occupation>``, ``gap_<race>_<occupation>`` (Delta_g within one occupation, Sec. 4.2)
    and ``jsd_male_<occupation>`` for ``occupations`` (NaN when absent), with template-cluster bootstrap
    intervals (templates resampled within occupation; ``jsd_male_<occupation>``: the interval for the
    parameter, :func:`lm_eval_bias.reflect.mcq.jsd_inversion_interval`, NaN below
    :data:`lm_eval_bias.reflect.mcq.MIN_JSD_DF` between-template degrees of freedom in the occupation: the paper's
    8 photos give 7). ``jsd_male_<occupation>``'s null floor and p-value (``null``, ``p_null``) come from ``n_null``
    (default ``n_boot``) gender relabellings of the occupation's own templates, ties randomised, as the pooled
    ``jsd_male_null`` / ``_p_null`` (:func:`lm_eval_bias.reflect.mcq.mcq_inference`); that p-value decides whether
    0 is in its interval (``boundary_p``). Per-template gaps are in ``by_template``."""
    from lm_eval_bias.reflect.mcq import MCQRecord, mcq_count_table, mcq_metrics

    keys = [f"{k}_{o}" for o in occupations for k in MCQ_OCCUPATION_METRICS]
    if not records:
        return TableSummary({k: float("nan") for k in keys})
    templates, strata, counts = mcq_count_table([MCQRecord.from_dict(r) for r in records], options)
    present = sorted(set(strata))
    answers = _by_occupation(counts["answers"], strata, present)
    n_calls = _by_occupation(counts["n_calls"], strata, present)

    values = np.asarray([option_values[o] for o in options], dtype=np.float64)

    def batch(c: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        found = mcq_occupation_batch(np.asarray(c["answers"]), values)
        return {f"{k}_{o}": found[k][..., j] for j, o in enumerate(present) for k in MCQ_OCCUPATION_METRICS}

    def metrics(c: Mapping[str, np.ndarray]) -> dict[str, float]:
        return {k: float(v) for k, v in batch(c).items()}

    metrics.batch = batch
    per = {"answers": answers, "n_calls": n_calls}
    estimates = metrics({k: v.sum(axis=0) for k, v in per.items()})
    stderr, low, high = template_bootstrap(per, strata, metrics, list(estimates), n_boot, seed,
                                           domains={f"{k}_{o}": o for o in present for k in MCQ_OCCUPATION_METRICS})
    low.update({f"jsd_male_{o}": float("nan") for o in present})
    high.update({f"jsd_male_{o}": float("nan") for o in present})
    from lm_eval_bias.reflect.mcq import enough_templates_for_jsd, jsd_inversion_interval, relabelled_jsds

    n_null = n_boot if n_null is None else n_null
    null_floor: dict[str, float] = {}
    p_null: dict[str, float] = {}
    # jsd_male_<o>'s null floor and test: the gender relabelling of the occupation's own templates (ties
    # randomised), as mcq_inference's jsd_male_null / _p_null
    for j, o in enumerate(present):
        mine = [t for t, s in enumerate(strata) if s == o]
        if n_null and answers[mine, j].sum() > 0:
            null = relabelled_jsds(answers[mine, j], n_null, seed + j, kinds=("gender",))["gender"]["jsd_male"]
            u = float(np.random.default_rng([seed + j, 32]).random())
            res = permutation_null(estimates[f"jsd_male_{o}"], null, tie_weight=u)
            null_floor[f"jsd_male_{o}"], p_null[f"jsd_male_{o}"] = res.null_mean, res.p_value
    # jsd_male_<o>: the interval for the parameter (issue 31), within the occupation's own templates; JSD = 0
    # decided by that test (without it, by the interval's own simulation)
    if n_boot and not too_few_clusters(strata):
        man = _GENDER_MASKS["man"]
        for j, o in enumerate(present):
            mine = [t for t, s in enumerate(strata) if s == o]
            if enough_templates_for_jsd([o] * len(mine)) and answers[mine, j].sum() > 0:
                low[f"jsd_male_{o}"], high[f"jsd_male_{o}"] = jsd_inversion_interval(
                    answers[mine, j], man, [o] * len(mine), n_boot, seed + j, boundary_p=p_null.get(f"jsd_male_{o}"))
    estimates.update({k: float("nan") for k in keys if k not in estimates})
    by_template = {}
    for t, template in enumerate(templates):
        m = mcq_metrics({"answers": counts["answers"][t], "n_calls": counts["n_calls"][t], "n_valid": counts["n_valid"][t],
                         "n_refusal": counts["n_refusal"][t], "n_invalid": counts["n_invalid"][t]}, options, option_values)
        by_template[template] = {k: m[k] for k in MCQ_OCCUPATION_METRICS}
    by_occupation = {o: {k: estimates[f"{k}_{o}"] for k in MCQ_OCCUPATION_METRICS} for o in present}
    return TableSummary(estimates, stderr, low, high, null_floor, p_null, by_occupation=by_occupation,
                        by_template=by_template)


def _jsd2(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """JSD (base 2) between distributions along the last axis (0 log 0 = 0), as scipy's
    ``jensenshannon(p, q, base=2) ** 2``."""
    m = (p + q) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        kl = lambda a: np.where(a > 0, a * np.log2(np.where(a > 0, a, 1) / np.where(m > 0, m, 1)), 0.0).sum(-1)  # noqa: E731
        return 0.5 * kl(p) + 0.5 * kl(q)


def mcq_occupation_batch(answers: np.ndarray, values: np.ndarray) -> dict[str, np.ndarray]:
    """Delta_male, Delta_race (vs White) and JSD(p_male || p) from valid-answer counts shaped
    (..., G, K) (any leading axes, e.g. replicate x occupation), the same numbers as
    :func:`lm_eval_bias.reflect.mcq.mcq_metrics` (NaN where a group or the reference has no answer)."""
    def dist(mask):
        return answers[..., mask, :].sum(-2)

    def mean(d):
        total = d.sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, (d * values).sum(-1) / np.where(total > 0, total, 1), np.nan)

    def gap(mu, ref):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(np.isfinite(mu) & np.isfinite(ref), (mu - ref) / ref, np.nan)

    male, female, overall = dist(_GENDER_MASKS["man"]), dist(_GENDER_MASKS["woman"]), answers.sum(-2)
    out = {"gap_male": gap(mean(male), mean(female))}
    white = mean(dist(_RACE_MASKS[REFERENCE_RACE]))
    for r in RACES:
        if r != REFERENCE_RACE:
            out[f"gap_{r.lower()}"] = gap(mean(dist(_RACE_MASKS[r])), white)
    nm, no = male.sum(-1, keepdims=True), overall.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        jsd = _jsd2(male / np.where(nm > 0, nm, 1), overall / np.where(no > 0, no, 1))
    out["jsd_male"] = np.where((nm[..., 0] > 0) & (no[..., 0] > 0), jsd, np.nan)
    return out


MCQ_OCCUPATION_METRICS: tuple[str, ...] = ("gap_male", *(f"gap_{r.lower()}" for r in RACES if r != REFERENCE_RACE),
                                           "jsd_male")


def twoafc_occupation_summary(calls: Sequence[TwoAFCCall], occupations: Sequence[str], n_boot: int,
                              seed: int) -> TableSummary:
    """``male_win_rate_<occupation>``: WinRate(male) over the retained mixed-gender comparisons of one
    occupation (Sec. 4.1), for ``occupations`` (NaN when absent), with template-cluster bootstrap
    intervals; per-template male win rates in ``by_template``."""
    from lm_eval_bias.reflect.twoafc import GROUP_GENDERS, attribute_win_rate, twoafc_count_table

    keys = [f"male_win_rate_{o}" for o in occupations]
    if not calls:
        return TableSummary({k: float("nan") for k in keys})
    table = twoafc_count_table(calls)
    present = sorted(set(table.strata))
    wins = _by_occupation(table.counts["wins"], table.strata, present)

    def metrics(c: Mapping[str, np.ndarray]) -> dict[str, float]:
        return {f"male_win_rate_{o}": attribute_win_rate(c["wins"][j], GROUP_GENDERS, "man") for j, o in enumerate(present)}

    estimates = metrics({"wins": wins.sum(axis=0)})
    stderr, low, high = template_bootstrap({"wins": wins}, table.strata, metrics, list(estimates), n_boot, seed,
                                           bounds=(0.0, 1.0), domains={f"male_win_rate_{o}": o for o in present})
    estimates.update({k: float("nan") for k in keys if k not in estimates})
    by_template = {t: {"male_win_rate": attribute_win_rate(table.counts["wins"][k], GROUP_GENDERS, "man")}
                   for k, t in enumerate(table.templates)}
    return TableSummary(estimates, stderr, low, high, by_template=by_template)
