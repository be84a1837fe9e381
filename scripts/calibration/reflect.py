"""Calibration of the REFLECT statistics (issue 14): seeded models with known truth at the paper's sizes.

Designs (REFLECT Sec. 4, App. C.3, C.6): 6 occupations x 8 source photos = 48 templates, 10 groups
(5 races x 2 genders). Every simulated model gives each counterfactual image (template t, group g) an
idiosyncratic "portrait" effect on top of its group effect, so that images are not interchangeable
even without bias; the statistics are the ones the tasks call (``twoafc_summary``, ``mcq_summary``,
``portrait_permutation_tests`` / ``cluster_robust_tests`` / ``salary_summary``).

- 2AFC: 45 pairs x 2 orders per template; P(choose the image shown as A) = logistic(u_A - u_B + 0.3)
  (position bias), u = group effect + portrait effect ~ N(0, 0.5^2); 5 % refusals. Truths from the
  expected retained wins of 20,000 simulated templates. Three models: no bias, a moderate bias (no cell
  extreme: Ext's truth 0) and a strong bias (13 of 45 cells beyond 0.9, 8 of them near it: Ext's truth
  0.289), so that Pol's and Ext's default intervals are checked at the boundary and away from it.

Row roles (``role``): "default" for what the tasks report by default, "paper" for the paper's procedures
kept by name (the percentile intervals of plug-in magnitudes ``<m>_ci_low_paper``, the unit-clustered
salary tests ``p_*_paper``), "diagnostic" for family-wise error rates without the Holm adjustment.
- MCQ (6 salary bins): one call per image, answer ~ softmax(base + occupation shift + group shift +
  portrait effect ~ N(0, 0.5^2) per option); 5 % refusals. Truths from 20,000 simulated templates.
- Salary: 50 biographies per occupation; answer = base_o (1 + group + portrait + biography + noise),
  portrait effect sd 0 / 1 % / 3 % of salary, biography sd 20 %, noise sd 10 %.

``python -m scripts.calibration.reflect [--quick]`` prints the table.
"""

from __future__ import annotations

import math
import time
import zlib
from typing import Any

import numpy as np

from lm_eval_bias.reflect.schema import GROUPS, OCCUPATIONS, RACES
from lm_eval_bias.reflect import mcq as mcq_stats
from lm_eval_bias.reflect import salary as salary_stats
from lm_eval_bias.reflect import twoafc as twoafc_stats

BENCHMARK = "reflect"
RACE_KEYS = [r.lower() for r in RACES]
IS_MAN = np.asarray([g.gender == "man" for g in GROUPS])
RACE_OF = np.asarray([RACES.index(g.race) for g in GROUPS])


def group_effects(man: float, race: dict[str, float]) -> np.ndarray:
    """Additive effect per group: ``man`` for men plus the race's effect."""
    return np.asarray([man * IS_MAN[k] + race.get(RACE_KEYS[RACE_OF[k]], 0.0) for k in range(len(GROUPS))])


def _templates(n_per_occupation: int):
    return [(o, f"{o}/{k}") for o in OCCUPATIONS for k in range(n_per_occupation)]


# --------------------------------------------------------------------------------------------------
# 2AFC
# --------------------------------------------------------------------------------------------------
POSITION_BIAS, REFUSAL = 0.3, 0.05


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def simulate_2afc(rng, beta: np.ndarray, portrait_sd: float, n_per_occupation: int = 8) -> list:
    calls = []
    iu, ju = np.triu_indices(10, k=1)
    for occupation, template in _templates(n_per_occupation):
        u = beta + rng.normal(0.0, portrait_sd, 10)
        for a_idx, b_idx, order in ((iu, ju, "AB"), (ju, iu, "BA")):
            p_a = _logistic(u[a_idx] - u[b_idx] + POSITION_BIAS)
            chose_a = rng.random(p_a.size) < p_a
            refused = rng.random(p_a.size) < REFUSAL
            for k in range(p_a.size):
                pair = f"{min(a_idx[k], b_idx[k])}-{max(a_idx[k], b_idx[k])}"
                if refused[k]:
                    calls.append(twoafc_stats.TwoAFCCall(template, occupation, pair, order, int(a_idx[k]), int(b_idx[k]),
                                                         "refusal", None))
                else:
                    calls.append(twoafc_stats.TwoAFCCall(template, occupation, pair, order, int(a_idx[k]), int(b_idx[k]),
                                                         "valid", "A" if chose_a[k] else "B"))
    return calls


def truth_2afc(beta: np.ndarray, portrait_sd: float, n: int = 20_000, seed: int = 99) -> dict[str, float]:
    """Win rates and Pol of the population: expected retained wins summed over many templates."""
    rng = np.random.default_rng(seed)
    u = beta[None, :] + rng.normal(0.0, portrait_sd, (n, 10))
    d = u[:, :, None] - u[:, None, :]                                     # d[t, i, j] = u_i - u_j
    # i wins a retained comparison: chosen as A in AB (i shown first) and as B in BA (j shown first)
    wins = (_logistic(d + POSITION_BIAS) * (1.0 - _logistic(-d + POSITION_BIAS))).sum(axis=0)
    np.fill_diagonal(wins, 0.0)
    return {k: float(v[0]) for k, v in twoafc_stats.wins_metrics_batch(wins[None]).items()}


# --------------------------------------------------------------------------------------------------
# MCQ
# --------------------------------------------------------------------------------------------------
MCQ_BASE = np.asarray([-1.0, 0.0, 0.5, 0.5, 0.0, -1.0])
MCQ_SLOPE = np.linspace(-1.0, 1.0, 6)  # a group effect b shifts the logits by b * slope (higher bins)


def _mcq_probs(rng, beta: np.ndarray, portrait_sd: float, n_templates: int, occupation_shift: np.ndarray):
    logits = (MCQ_BASE[None, None, :] + occupation_shift[:, None, :] + beta[None, :, None] * MCQ_SLOPE[None, None, :]
              + rng.normal(0.0, portrait_sd, (n_templates, 10, 6)))
    z = np.exp(logits - logits.max(axis=2, keepdims=True))
    return z / z.sum(axis=2, keepdims=True)


def simulate_mcq(rng, beta: np.ndarray, portrait_sd: float, n_per_occupation: int = 8) -> list:
    templates = _templates(n_per_occupation)
    occ_shift = {o: np.random.default_rng(zlib.crc32(o.encode())).normal(0.0, 0.3, 6) for o in OCCUPATIONS}
    probs = _mcq_probs(rng, beta, portrait_sd, len(templates), np.stack([occ_shift[o] for o, _ in templates]))
    records = []
    for t, (occupation, template) in enumerate(templates):
        for g in range(10):
            if rng.random() < REFUSAL:
                records.append(mcq_stats.MCQRecord(template, occupation, g, "refusal", None))
            else:
                records.append(mcq_stats.MCQRecord(template, occupation, g, "valid", "ABCDEF"[rng.choice(6, p=probs[t, g])]))
    return records


def truth_mcq(beta: np.ndarray, portrait_sd: float, n: int = 20_000, seed: int = 98) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    occ = np.stack([np.random.default_rng(zlib.crc32(o.encode())).normal(0.0, 0.3, 6) for o in OCCUPATIONS])
    shift = occ[np.arange(n) % len(OCCUPATIONS)]
    expected = _mcq_probs(rng, beta, portrait_sd, n, shift).sum(axis=0)     # expected answers per group
    return mcq_stats.mcq_metrics({"answers": expected, "n_calls": 1.0, "n_valid": 1.0, "n_refusal": 0.0, "n_invalid": 0.0},
                                 mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD)


# --------------------------------------------------------------------------------------------------
# Salary
# --------------------------------------------------------------------------------------------------
SALARY_BASE = {o: 50_000 + 20_000 * k for k, o in enumerate(OCCUPATIONS)}


def simulate_salary(rng, beta: np.ndarray, portrait_sd: float, n_per_occupation: int = 8, n_bios: int = 50) -> list:
    records = []
    bio_effect = {o: rng.normal(0.0, 0.2, n_bios) for o in OCCUPATIONS}
    for occupation, template in _templates(n_per_occupation):
        portrait = rng.normal(0.0, portrait_sd, 10)
        noise = rng.normal(0.0, 0.1, (n_bios, 10))
        values = SALARY_BASE[occupation] * (1.0 + beta[None, :] + portrait[None, :] + bio_effect[occupation][:, None] + noise)
        for b in range(n_bios):
            for g in range(10):
                records.append(salary_stats.SalaryRecord(template, occupation, f"b{b}", g, "valid", float(values[b, g])))
    return records


def truth_salary(beta: np.ndarray) -> dict[str, float]:
    mu = 1.0 + beta
    white = mu[RACE_OF == RACES.index("White")].mean()
    out = {f"gap_pct_{r}": (mu[RACE_OF == k].mean() / white - 1.0) * 100 for k, r in enumerate(RACE_KEYS) if r != "white"}
    out["gap_pct_male"] = (mu[IS_MAN].mean() / mu[~IS_MAN].mean() - 1.0) * 100
    return out


# --------------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------------
def _row(quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note="", role="default") -> dict[str, Any]:
    hits = np.asarray(hits, dtype=np.float64)
    hits = hits[~np.isnan(hits)]
    rate = float(hits.mean()) if hits.size else float("nan")
    coverage = rate if kind == "interval" else float("nan")
    rejection = rate if kind == "test" else float("nan")
    mc = 1.96 * math.sqrt(0.05 * 0.95 / max(n_seeds, 1))  # Monte Carlo error of a 5 % rate
    if kind == "interval" and np.isfinite(coverage):
        met = bool(0.93 - mc <= coverage <= 0.97 + mc)
    elif kind == "test" and np.isfinite(rejection):
        met = bool(0.04 - mc <= rejection <= 0.06 + mc) if "power" not in note else None
    else:
        met = None
    return {"benchmark": BENCHMARK, "quantity": quantity, "kind": kind, "design": design, "dgp": dgp,
            "truth": float(truth), "mean_estimate": float(np.nanmean(estimates)) if len(estimates) else float("nan"),
            "coverage": coverage, "rejection_rate": rejection, "n_seeds": n_seeds, "n_boot": n_boot, "seed": seed,
            "target_met": met, "note": note, "role": role}


def _covers(low, high, truth) -> float:
    if not (np.isfinite(low) and np.isfinite(high)):
        return float("nan")
    return float(low <= truth <= high)


#: the magnitudes of the 2AFC tasks: default interval = boundary-aware bias-corrected (``<m>_ci_low``),
#: the paper's percentile interval of the plug-in = ``<m>_ci_low_paper`` (role "paper")
MAGNITUDES = ("polarization", "extreme_cell_rate")


def run_2afc(n_seeds: int, n_boot: int, n_per_occupation: int, seed: int = 0) -> list[dict]:
    design = f"{6 * n_per_occupation} templates x 45 pairs x 2 orders"
    rows = []
    effects = {"no bias": (group_effects(0.0, {}), 0.5),
               "bias (man +0.3, White +0.3, Black -0.2, Latino +0.1, Middle Eastern -0.2 logits)":
                   (group_effects(0.3, {"white": 0.3, "black": -0.2, "latino": 0.1, "middle_eastern": -0.2}), 0.5),
               # strong enough that some cells are extreme (w > 0.9): Ext's truth is 13/45, several cells near 0.9
               "strong bias (man +0.5, White +1, Black -1, Latino +0.5, Middle Eastern -0.5 logits)":
                   (group_effects(0.5, {"white": 1.0, "black": -1.0, "latino": 0.5, "middle_eastern": -0.5}), 0.5)}
    for dgp, (beta, sd) in effects.items():
        dgp_text = f"{dgp}; portrait effect sd {sd} logit, position bias 0.3, 5 % refusals"
        truth = truth_2afc(beta, sd)
        keys = list(twoafc_stats.WIN_RATE_KEYS) + list(MAGNITUDES)
        paper = [f"{m}_paper" for m in MAGNITUDES]
        est = {k: [] for k in keys + ["polarization_debiased", "polarization_null", "extreme_cell_rate_null"]}
        cover = {k: [] for k in keys + paper}
        tests = {k: [] for k in ("p_male_win_rate", "p_win_rate_white", "polarization_p_null", "extreme_cell_rate_p_null",
                                 "any raw", "any holm")}
        strong = dgp.startswith("strong")
        for s in range(seed, seed + n_seeds):
            summary = twoafc_stats.twoafc_summary(simulate_2afc(np.random.default_rng([s, 1, zlib.crc32(dgp.encode()) % 1000]), beta, sd,
                                                                n_per_occupation), n_boot=n_boot, seed=s, n_null=n_boot)
            d = summary.derived
            for k in keys:
                est[k].append(summary.estimates[k])
                cover[k].append(_covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
            for m in MAGNITUDES:
                est[f"{m}_null"].append(d[f"{m}_null"])
                cover[f"{m}_paper"].append(_covers(d[f"{m}_ci_low_paper"], d[f"{m}_ci_high_paper"], truth[m]))
            est["polarization_debiased"].append(d["polarization_debiased"])
            for k in ("p_male_win_rate", "p_win_rate_white", "polarization_p_null", "extreme_cell_rate_p_null"):
                tests[k].append(d[k] < 0.05)
            tests["any raw"].append(min(d[f"p_{k}"] for k in twoafc_stats.WIN_RATE_KEYS) < 0.05)
            tests["any holm"].append(min(d[f"p_{k}_holm"] for k in twoafc_stats.WIN_RATE_KEYS) < 0.05)
        args = (n_seeds, n_boot, seed)
        null = dgp == "no bias"
        for k in keys:
            if (null or strong) and k not in ("male_win_rate", "win_rate_white", *MAGNITUDES):
                continue
            if k in MAGNITUDES:
                how = "bias-corrected basic" if twoafc_stats.MAGNITUDE_METHODS[k] == "basic" else "percentile"
                note = (f"boundary-aware {how} interval (default _ci_low/_ci_high): lower end 0 unless "
                        f"{k}_p_null < 0.05")
                if k == "polarization":
                    note += f"; mean polarization_debiased = {np.nanmean(est['polarization_debiased']):.4f}"
            else:
                note = "rescaled (Rao-Wu) template bootstrap, percentile interval"
            rows.append(_row(k, "interval", design, dgp_text, truth[k], est[k], cover[k], *args, note=note))
        for m in MAGNITUDES:
            rows.append(_row(f"{m}_ci_low_paper/_ci_high_paper", "interval", design, dgp_text, truth[m], est[m],
                             cover[f"{m}_paper"], *args, role="paper",
                             note="the paper's percentile interval of the plug-in (targets its expectation, biased upward)"))
        if null:
            rows.append(_row("polarization", "null_floor", design, dgp_text, 0.0, est["polarization"], [], *args,
                             note=f"plug-in Pol without bias; mean polarization_null = {np.nanmean(est['polarization_null']):.4f}"))
            rows.append(_row("extreme_cell_rate", "null_floor", design, dgp_text, 0.0, est["extreme_cell_rate"], [], *args))
            for k in ("p_male_win_rate", "p_win_rate_white", "polarization_p_null", "extreme_cell_rate_p_null"):
                rows.append(_row(k, "test", design, dgp_text, float("nan"), [], tests[k], *args,
                                 note="within-template permutation of group labels"))
            rows.append(_row("any of 6 win-rate tests, raw p < 0.05", "test", design, dgp_text, float("nan"), [],
                             tests["any raw"], *args, role="diagnostic",
                             note="family-wise error without adjustment (not a target)"))
            rows.append(_row("any of 6 win-rate tests, Holm p < 0.05", "test", design, dgp_text, float("nan"), [],
                             tests["any holm"], *args, note="family-wise error with p_<key>_holm (target <= 5 %)"))
            rows[-1]["target_met"] = bool(np.mean(tests["any holm"]) <= 0.06 + 1.96 * math.sqrt(0.0475 / n_seeds))
    return rows


def run_mcq(n_seeds: int, n_boot: int, n_per_occupation: int, seed: int = 0) -> list[dict]:
    design = f"{6 * n_per_occupation} templates x 10 photos x 1 call, 6 salary bins"
    rows = []
    effects = {"no bias": group_effects(0.0, {}),
               "bias (man +0.3, Black -0.3, White +0.2 on the slope towards higher bins)":
                   group_effects(0.3, {"black": -0.3, "white": 0.2})}
    options, values = mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD
    jsd = ("jsd_male", "jsd_black")
    for dgp, beta in effects.items():
        dgp_text = f"{dgp}; portrait effect sd 0.5 per option logit, 5 % refusals"
        truth = truth_mcq(beta, 0.5)
        keys = ["gap_male", "gap_black", *jsd]
        est = {k: [] for k in keys + [f"{k}{x}" for k in jsd for x in ("_debiased", "_null")]}
        cover = {k: [] for k in keys + [f"{k}_paper" for k in jsd]}
        tests = {f"{k}_p_null": [] for k in jsd}
        for s in range(seed, seed + n_seeds):
            records = simulate_mcq(np.random.default_rng([s, 2, zlib.crc32(dgp.encode()) % 1000]), beta, 0.5, n_per_occupation)
            summary = mcq_stats.mcq_summary(records, options, values, n_boot=n_boot, seed=s, n_null=n_boot)
            d = summary.derived
            for k in keys:
                est[k].append(summary.estimates[k])
                cover[k].append(_covers(summary.ci_low[k], summary.ci_high[k], truth[k]))
            for k in jsd:
                est[f"{k}_debiased"].append(d[f"{k}_debiased"])
                est[f"{k}_null"].append(d[f"{k}_null"])
                cover[f"{k}_paper"].append(_covers(d[f"{k}_ci_low_paper"], d[f"{k}_ci_high_paper"], truth[k]))
                tests[f"{k}_p_null"].append(d[f"{k}_p_null"] < 0.05)
        args = (n_seeds, n_boot, seed)
        null = dgp == "no bias"
        for k in keys:
            if k.startswith("jsd"):
                note = ("boundary-aware bias-corrected interval (default _ci_low/_ci_high): basic interval, lower end 0 "
                        f"unless {k}_p_null < 0.05; mean {k}_debiased = {np.nanmean(est[f'{k}_debiased']):.5f}")
            else:
                note = "rescaled (Rao-Wu) template bootstrap, percentile interval"
            rows.append(_row(k, "interval", design, dgp_text, truth[k], est[k], cover[k], *args, note=note))
        for k in jsd:
            rows.append(_row(f"{k}_ci_low_paper/_ci_high_paper", "interval", design, dgp_text, truth[k], est[k],
                             cover[f"{k}_paper"], *args, role="paper", note="percentile interval of the plug-in JSD"))
        if null:
            for k in jsd:
                rows.append(_row(k, "null_floor", design, dgp_text, 0.0, est[k], [], *args,
                                 note=f"plug-in JSD without bias; mean {k}_null = {np.nanmean(est[f'{k}_null']):.4f}"))
                rows.append(_row(f"{k}_p_null", "test", design, dgp_text, float("nan"), [], tests[f"{k}_p_null"], *args,
                                 note="within-template permutation of the photos' group labels"))
    return rows


def run_salary(n_seeds: int, n_boot: int, n_per_occupation: int, n_bios: int, seed: int = 0,
               portrait_sds: tuple[float, ...] = (0.0, 0.01, 0.03), coverage: bool = True) -> list[dict]:
    design = f"{6 * n_per_occupation} templates x 10 portraits x {n_bios} biographies ({6 * n_per_occupation * 10 * n_bios} answers)"
    rows = []
    args = (n_seeds, n_boot, seed)
    for sd in portrait_sds:
        dgp = f"no bias; per-portrait effect sd {sd:.0%} of salary, biography sd 20 %, noise sd 10 %"
        hits: dict[str, list] = {}
        for s in range(seed, seed + n_seeds):
            records = simulate_salary(np.random.default_rng([s, 3, int(sd * 1000)]), np.zeros(10), sd, n_per_occupation, n_bios)
            p = {**salary_stats.portrait_permutation_tests(records, n_boot, s), **salary_stats.cluster_robust_tests(records)}
            for k, v in p.items():
                hits.setdefault(k, []).append(v < 0.05)
            per_occ = {}
            for o in OCCUPATIONS:
                sub = [r for r in records if r.occupation == o]
                for k, v in salary_stats.portrait_permutation_tests(sub, n_boot, s).items():
                    per_occ[f"{o}|{k}"] = v
            from lm_eval_bias.core.bootstrap import holm

            hits.setdefault("any raw", []).append(min(per_occ.values()) < 0.05)
            hits.setdefault("any holm", []).append(min(holm(per_occ).values()) < 0.05)
        for k in (*salary_stats.TEST_KEYS, *salary_stats.PAPER_TEST_KEYS):
            note = "paper's unit-clustered test (App. C.6)" if k.endswith("_paper") else \
                "within-template permutation of portrait labels (Freedman-Lane)"
            rows.append(_row(k, "test", design, dgp, float("nan"), [], hits[k], *args, note=note,
                             role="paper" if k.endswith("_paper") else "default"))
        rows.append(_row("any of 18 per-occupation tests, raw p < 0.05", "test", design, dgp, float("nan"), [],
                         hits["any raw"], *args, role="diagnostic",
                         note="family-wise error without adjustment (not a target; the policy is Holm)"))
        rows.append(_row("any of 18 per-occupation tests, Holm p < 0.05", "test", design, dgp, float("nan"), [],
                         hits["any holm"], *args, note="family-wise error with the _holm columns (target <= 5 %)"))
        rows[-1]["target_met"] = bool(np.mean(hits["any holm"]) <= 0.06 + 1.96 * math.sqrt(0.0475 / n_seeds))
    if not coverage:
        return rows
    beta = group_effects(0.02, {"black": -0.03, "asian": 0.01})
    truth = truth_salary(beta)
    dgp = "bias (man +2 %, Black -3 %, Asian +1 %); per-portrait effect sd 3 %, biography sd 20 %, noise sd 10 %"
    est, cover = {"gap_pct_male": [], "gap_pct_black": []}, {"gap_pct_male": [], "gap_pct_black": []}
    for s in range(seed, seed + n_seeds):
        records = simulate_salary(np.random.default_rng([s, 4]), beta, 0.03, n_per_occupation, n_bios)
        templates, strata, _, counts = salary_stats.salary_count_table(records)
        estimates = salary_stats.salary_metrics({k: v.sum(axis=0) for k, v in counts.items()})
        from lm_eval_bias.core.bootstrap import template_bootstrap

        _, low, high = template_bootstrap(counts, strata, salary_stats.salary_metrics, list(est), n_boot, s)
        for k in est:
            est[k].append(estimates[k])
            cover[k].append(_covers(low[k], high[k], truth[k]))
    for k in est:
        rows.append(_row(k, "interval", design, dgp, truth[k], est[k], cover[k], *args,
                         note="rescaled (Rao-Wu) template bootstrap, percentile interval (salary_summary's)"))
    return rows


def run(n_seeds: int, n_boot: int, quick: bool) -> list[dict]:
    """All REFLECT calibration rows (module docstring). ``quick`` shrinks seeds and resamples, not the
    designs' structure (4 templates per occupation, 10 biographies)."""
    if quick:
        n_seeds, n_boot = min(n_seeds, 4), min(n_boot, 50)
        per_occ, n_bios = 4, 10
    else:
        per_occ, n_bios = 8, 50
    return (run_2afc(n_seeds, n_boot, per_occ) + run_mcq(n_seeds, n_boot, per_occ)
            + run_salary(n_seeds, n_boot, per_occ, n_bios))


def _print(rows: list[dict]) -> None:
    for r in rows:
        value = r["coverage"] if r["kind"] == "interval" else r["rejection_rate"] if r["kind"] == "test" else r["mean_estimate"]
        print(f"{r['quantity'][:48]:48s} {r['kind']:10s} {value:7.3f}  truth={r['truth']:.4f} mean={r['mean_estimate']:.4f} "
              f"met={r['target_met']}  | {r['dgp'][:60]} | {r['note']}")


if __name__ == "__main__":
    import sys

    quick = "--quick" in sys.argv
    n_seeds = int(next((a.split("=")[1] for a in sys.argv if a.startswith("--seeds=")), 200))
    started = time.time()
    rows = run(n_seeds, 1000, quick)
    _print(rows)
    print(f"{time.time() - started:.0f} s")
