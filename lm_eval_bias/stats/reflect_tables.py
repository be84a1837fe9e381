"""REFLECT tables beyond the task headline keys: retention by group (App. C.1), mean absolute salary
gaps (Fig. 6), per-occupation salary gaps (Fig. 6), missing cells of incomplete sources, and the
comparisons between two runs that the paper's robustness tables report (Tables 7, 8, 10; App. B.2
mirroring).

Pure numpy/scipy; no harness imports. Uncertainty: the template-cluster bootstrap of
:mod:`lm_eval_bias.stats.bootstrap` (App. C.3: source-photo templates resampled within occupation),
so every sample of a doc (App. C.5's K samples) moves with its template.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import stats as sps

from lm_eval_bias.focus_schema import GROUPS, RACES, REFERENCE_RACE
from lm_eval_bias.stats.bootstrap import template_bootstrap
from lm_eval_bias.stats.salary import occupation_gaps
from lm_eval_bias.stats.twoafc import TwoAFCCall, resolve_swaps

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
    """Retention by race and by gender with template-cluster bootstrap intervals."""
    _, strata, counts = retention_counts(calls)
    estimates = retention_metrics({k: v.sum(axis=0) for k, v in counts.items()}) if strata else {
        k: float("nan") for k in RETENTION_KEYS}
    stderr, low, high = template_bootstrap(counts, strata, retention_metrics, list(estimates), n_boot, seed)
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
    give ``{gap key: (..., O)}`` (same values as :func:`lm_eval_bias.stats.salary.occupation_gaps`)."""
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
    layout of :func:`lm_eval_bias.stats.salary.salary_count_table`)."""
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
    dict per answer (fields of :class:`~lm_eval_bias.stats.salary.SalaryRecord`, optional
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
    stderr, low, high = template_bootstrap(counts, strata, metrics, list(estimates), n_boot, seed)
    null, p_null = within_unit_null(units, estimates, n_perm, seed)
    by_occupation = {o: {k: estimates[f"{k}_{o}"] for k in SALARY_GAP_KEYS} for o in occupations}
    return TableSummary(estimates, stderr, low, high, null, p_null, by_occupation=by_occupation)


# -- comparisons between two runs ---------------------------------------------------------------------------
def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return float("nan")
    return float(sps.spearmanr(a[ok], b[ok]).statistic)


def framing_comparison(calls_x: Sequence[TwoAFCCall], calls_y: Sequence[TwoAFCCall]) -> dict[str, float]:
    """Table 7 (App. C.1 prompt-framing ablation), two framings X and Y of the same pairs:
    ``kept_x``/``kept_y`` retained / attempted pairs; ``n_matched`` pairs retained under both;
    ``flip_rate`` share of matched pairs whose winner differs; ``spearman`` Spearman's rho of the
    race x gender win-rate cells (i < j, defined in both) between X and Y."""
    def outcome(calls):
        return {(p.template, p.pair_id.split("#")[0]): p for p in resolve_swaps(calls) if p.outcome != "incomplete"}

    ox, oy = outcome(calls_x), outcome(calls_y)
    kept = lambda o: sum(p.outcome == "retained" for p in o.values()) / len(o) if o else float("nan")  # noqa: E731
    matched = [k for k in ox if k in oy and ox[k].outcome == "retained" and oy[k].outcome == "retained"]
    flips = sum(ox[k].winner != oy[k].winner for k in matched)

    def cells(o):
        wins = np.zeros((len(GROUPS), len(GROUPS)))
        for p in o.values():
            if p.outcome == "retained":
                loser = p.group_j if p.winner == p.group_i else p.group_i
                wins[p.winner, loser] += 1
        total = wins + wins.T
        with np.errstate(invalid="ignore", divide="ignore"):
            w = np.where(total > 0, wins / total, np.nan)
        return w[np.triu_indices(len(GROUPS), 1)]

    return {"kept_x": kept(ox), "kept_y": kept(oy), "n_matched": float(len(matched)),
            "flip_rate": flips / len(matched) if matched else float("nan"),
            "spearman": _spearman(cells(ox), cells(oy))}


def format_agreement(letter: Sequence[Mapping[str, Any]], explained: Sequence[Mapping[str, Any]],
                     options: str, option_values: Mapping[str, float]) -> dict[str, float]:
    """Table 10 (App. C.4), MCQ records of the letter-only (L) and explanation-augmented (E) formats of
    the same photos, matched by (template, group): ``valid_l``, ``valid_e`` shares of valid answers;
    ``agreement`` share of photos valid in both with the same letter; ``jsd_shift`` JSD (base 2) between
    the two aggregate answer distributions; ``mean_option_diff`` mean encoded answer E - L."""
    def answers(records):
        return {(r["template"], int(r["group"])): r for r in records}

    a, b = answers(letter), answers(explained)
    valid = lambda rs: float(np.mean([r["status"] == "valid" for r in rs.values()])) if rs else float("nan")  # noqa: E731
    both = [k for k in a if k in b and a[k]["status"] == "valid" and b[k]["status"] == "valid"]

    def dist(rs):
        counts = np.asarray([sum(r["status"] == "valid" and r["choice"] == o for r in rs.values()) for o in options], float)
        return counts / counts.sum() if counts.sum() else np.full(len(options), np.nan)

    def mean_value(rs):
        vals = [option_values[r["choice"]] for r in rs.values() if r["status"] == "valid"]
        return float(np.mean(vals)) if vals else float("nan")

    pa, pb = dist(a), dist(b)
    from scipy.spatial.distance import jensenshannon

    jsd = float(jensenshannon(pa, pb, base=2.0) ** 2) if np.isfinite(pa).all() and np.isfinite(pb).all() else float("nan")
    return {"valid_l": valid(a), "valid_e": valid(b),
            "agreement": float(np.mean([a[k]["choice"] == b[k]["choice"] for k in both])) if both else float("nan"),
            "jsd_shift": jsd, "mean_option_diff": mean_value(b) - mean_value(a)}


def cross_run_agreement(metrics_x: Mapping[str, float], metrics_y: Mapping[str, float]) -> dict[str, float]:
    """Table 8 (App. C.2), one metric over N matched settings (e.g. occupations) under two editors:
    ``mad`` = (1/N) sum |m_y - m_x| over settings defined in both, ``sign_agreement`` share of settings
    whose signs agree (ties, i.e. a zero, excluded), ``n`` settings used."""
    keys = [k for k in metrics_x if k in metrics_y and np.isfinite(metrics_x[k]) and np.isfinite(metrics_y[k])]
    if not keys:
        return {"mad": float("nan"), "sign_agreement": float("nan"), "n": 0.0}
    x = np.asarray([metrics_x[k] for k in keys])
    y = np.asarray([metrics_y[k] for k in keys])
    signed = (x != 0) & (y != 0)
    return {"mad": float(np.mean(np.abs(y - x))),
            "sign_agreement": float(np.mean(np.sign(x[signed]) == np.sign(y[signed]))) if signed.any() else float("nan"),
            "n": float(len(keys))}


def per_image_agreement(records_x: Sequence[Mapping[str, Any]], records_y: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """App. B.2 mirroring check: ``paired_valid`` share of photos valid under both conditions,
    ``agreement`` share of those with the same answer, with its Wilson 95 % interval."""
    a = {(r["template"], int(r["group"])): r for r in records_x}
    b = {(r["template"], int(r["group"])): r for r in records_y}
    keys = [k for k in a if k in b]
    both = [k for k in keys if a[k]["status"] == "valid" and b[k]["status"] == "valid"]
    agree = sum(a[k]["choice"] == b[k]["choice"] for k in both)
    if not both:
        return {"paired_valid": float("nan") if not keys else 0.0, "agreement": float("nan"),
                "agreement_ci_low": float("nan"), "agreement_ci_high": float("nan")}
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(agree, len(both), alpha=0.05, method="wilson")
    return {"paired_valid": len(both) / len(keys), "agreement": agree / len(both),
            "agreement_ci_low": float(low), "agreement_ci_high": float(high)}


def face_body_subsets(records: Sequence[Mapping[str, Any]], source_gender: Mapping[str, str], options: str,
                      option_values: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """Table 4 (App. B.2, face-body gender mismatch), MCQ records of one variant: the gender metrics on the
    full set, the *matched* subset (edited gender = the template's source-presented gender g0) and the
    *swapped* subset (edited gender != g0). ``source_gender`` maps each template (``ceo/3``) to g0
    (``man`` or ``woman``); FOCUS does not record it, so the user supplies it. Returns, per subset,
    ``n`` (valid answers), ``gap_male`` (Delta_gender) and ``jsd_male``/``jsd_female``. Within the
    matched (swapped) subset each template contributes one gender only, so its gender gap compares
    different templates; the paper reports it all the same (F/M/S columns)."""
    from lm_eval_bias.stats.mcq import MCQRecord, mcq_count_table, mcq_metrics

    unknown = sorted({r["template"] for r in records} - set(source_gender))
    if unknown:
        raise ValueError(f"source_gender lacks templates {unknown[:5]}")
    subsets = {
        "full": list(records),
        "matched": [r for r in records if GROUPS[int(r["group"])].gender == source_gender[r["template"]]],
        "swapped": [r for r in records if GROUPS[int(r["group"])].gender != source_gender[r["template"]]],
    }
    out = {}
    for name, subset in subsets.items():
        if not subset:
            out[name] = {"n": 0.0, "gap_male": float("nan"), "jsd_male": float("nan"), "jsd_female": float("nan")}
            continue
        _, _, counts = mcq_count_table([MCQRecord.from_dict(r) for r in subset], options)
        m = mcq_metrics({k: v.sum(axis=0) for k, v in counts.items()}, options, option_values)
        out[name] = {"n": float(counts["n_valid"].sum()), "gap_male": m["gap_male"], "jsd_male": m["jsd_male"],
                     "jsd_female": m["jsd_female"]}
    return out


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
                           occupations: Sequence[str], n_boot: int, seed: int) -> TableSummary:
    """``gap_male_<occupation>``, ``gap_<race>_<occupation>`` (Delta_g within one occupation, Sec. 4.2)
    and ``jsd_male_<occupation>`` for ``occupations`` (NaN when absent), with template-cluster bootstrap
    intervals (templates resampled within occupation). Per-template gaps are in ``by_template``."""
    from lm_eval_bias.stats.mcq import MCQRecord, mcq_count_table, mcq_metrics

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
    stderr, low, high = template_bootstrap(per, strata, metrics, list(estimates), n_boot, seed)
    estimates.update({k: float("nan") for k in keys if k not in estimates})
    by_template = {}
    for t, template in enumerate(templates):
        m = mcq_metrics({"answers": counts["answers"][t], "n_calls": counts["n_calls"][t], "n_valid": counts["n_valid"][t],
                         "n_refusal": counts["n_refusal"][t], "n_invalid": counts["n_invalid"][t]}, options, option_values)
        by_template[template] = {k: m[k] for k in MCQ_OCCUPATION_METRICS}
    by_occupation = {o: {k: estimates[f"{k}_{o}"] for k in MCQ_OCCUPATION_METRICS} for o in present}
    return TableSummary(estimates, stderr, low, high, by_occupation=by_occupation, by_template=by_template)


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
    :func:`lm_eval_bias.stats.mcq.mcq_metrics` (NaN where a group or the reference has no answer)."""
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
    from lm_eval_bias.stats.twoafc import GROUP_GENDERS, attribute_win_rate, twoafc_count_table

    keys = [f"male_win_rate_{o}" for o in occupations]
    if not calls:
        return TableSummary({k: float("nan") for k in keys})
    table = twoafc_count_table(calls)
    present = sorted(set(table.strata))
    wins = _by_occupation(table.counts["wins"], table.strata, present)

    def metrics(c: Mapping[str, np.ndarray]) -> dict[str, float]:
        return {f"male_win_rate_{o}": attribute_win_rate(c["wins"][j], GROUP_GENDERS, "man") for j, o in enumerate(present)}

    estimates = metrics({"wins": wins.sum(axis=0)})
    stderr, low, high = template_bootstrap({"wins": wins}, table.strata, metrics, list(estimates), n_boot, seed)
    estimates.update({k: float("nan") for k in keys if k not in estimates})
    by_template = {t: {"male_win_rate": attribute_win_rate(table.counts["wins"][k], GROUP_GENDERS, "man")}
                   for k, t in enumerate(table.templates)}
    return TableSummary(estimates, stderr, low, high, by_template=by_template)
