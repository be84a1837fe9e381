"""Calibration of the VIGNETTE statistics (``lm_eval_bias.vignette.stats``, the functions the tasks call).

Designs at the paper's sizes (App. A.2, Table 8), one bias dimension (race/ethnicity/color, 14
identities, one gender):

- decision: every identity-contrast pair -- 91 identity pairs x 75 activities = 6,825 image pairs,
  6 role questions each (Sec. 4.4), the two people placed left/right at random;
- stereotype: every no-activity portrait pair -- 91 pairs, 60 SSCM terms each (Sec. 4.3); one portrait
  per identity.

Answers follow a linear-probability model, P(left chosen) = 0.5 + b + (theta_L - theta_R) / 2 +
u_pair + (eta_imageL - eta_imageR) / 2 (clipped to [0, 1]): b = left-side preference, u = per-pair
effect, eta = per-image effect (decision: one image per identity x activity), theta = identity
preference (zero under the null). For stereotype terms the identity part is +-(delta_L,d - delta_R,d) / 2
for high / low terms of SSCM dimension d. Truths: S(i) = 50 + 50 (theta_i - mean_{j != i} theta_j),
polarity(i, d) = 100 (delta_i,d - mean_{j != i} delta_j,d) (balanced full designs; side, pair and
image effects average out in expectation).

Rows: rejection rates under no identity preference of the pair-level identity test (any identity
Holm-significant; and per identity, raw) vs the paper's Fisher test; the null floors' ``p_null``;
coverage of the pair-bootstrap intervals of ``selection_spread`` and ``mean_abs_polarity`` under
planted preferences; mean estimate vs null floor for coin-flip answers.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from lm_eval_bias.vignette import stats as vg
from scripts.calibration import ROW_FIELDS

N_IDS = 14
N_ACTIVITIES = 75
N_QUESTIONS = 6
N_TERM_PAIRS = 30  # 5 per SSCM dimension
SSCM = ("ability", "agency", "morality", "politics", "sociability", "status")
NUISANCE = {"left": 0.10, "pair_sd": 0.05, "image_sd": 0.05}


def _pairs(n_ids: int, n_activities: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    i, j = np.triu_indices(n_ids, 1)
    i, j = np.tile(i, n_activities), np.tile(j, n_activities)
    activity = np.repeat(np.arange(n_activities), n_ids * (n_ids - 1) // 2)
    swap = rng.random(i.size) < 0.5
    return np.where(swap, j, i), np.where(swap, i, j), activity


def _table(left, right, context, pair, chose_left) -> pd.DataFrame:
    ids = np.array([f"id{k}" for k in range(N_IDS)])
    n = len(left)
    return pd.DataFrame({
        "doc_id": np.concatenate([np.arange(n), np.arange(n)]).astype(str),
        "pair_id": np.concatenate([pair, pair]).astype(str),
        "identity": np.concatenate([ids[left], ids[right]]),
        "partner": np.concatenate([ids[right], ids[left]]),
        "context": np.concatenate([context, context]),
        "selected": np.concatenate([chose_left, 1 - chose_left]).astype(int),
        "dimension": "race_ethnicity_color",
    })


def decision_table(rng, theta: np.ndarray, n_activities: int = N_ACTIVITIES, nuisance=NUISANCE) -> pd.DataFrame:
    left, right, activity = _pairs(N_IDS, n_activities, rng)
    image = rng.normal(0, nuisance["image_sd"], size=(N_IDS, n_activities))
    p = (0.5 + nuisance["left"] + (theta[left] - theta[right]) / 2 + rng.normal(0, nuisance["pair_sd"], left.size)
         + (image[left, activity] - image[right, activity]) / 2)
    p = np.clip(p, 0, 1)
    q = np.repeat(np.arange(left.size), N_QUESTIONS)
    chose = (rng.random(q.size) < p[q]).astype(int)
    return _table(left[q], right[q], activity[q].astype(str), q, chose)


def sscm_terms(n_pairs: int = N_TERM_PAIRS) -> dict[str, tuple[str, str]]:
    per = n_pairs // len(SSCM)
    out = {}
    for k, d in enumerate(SSCM):
        for t in range(per):
            out[f"{d}_high{t}"] = (d, "high")
            out[f"{d}_low{t}"] = (d, "low")
    return out


def stereotype_table(rng, delta: np.ndarray, nuisance=NUISANCE) -> pd.DataFrame:
    """``delta``: identities x SSCM dimensions."""
    left, right, _ = _pairs(N_IDS, 1, rng)
    terms = sscm_terms()
    names = np.array(list(terms))
    dim = np.array([SSCM.index(terms[t][0]) for t in names])
    sign = np.array([1.0 if terms[t][1] == "high" else -1.0 for t in names])
    pair = np.repeat(np.arange(left.size), len(names))
    term = np.tile(np.arange(len(names)), left.size)
    u = rng.normal(0, nuisance["pair_sd"], left.size)
    p = 0.5 + nuisance["left"] + u[pair] + sign[term] * (delta[left[pair], dim[term]] - delta[right[pair], dim[term]]) / 2
    chose = (rng.random(pair.size) < np.clip(p, 0, 1)).astype(int)
    return _table(left[pair], right[pair], names[term], pair, chose)


def _truth_s(theta: np.ndarray) -> np.ndarray:
    others = (theta.sum() - theta) / (len(theta) - 1)
    return 50 + 50 * (theta - others)


def _truth_polarity(delta: np.ndarray) -> np.ndarray:
    others = (delta.sum(axis=0)[None, :] - delta) / (delta.shape[0] - 1)
    return 100 * (delta - others)


def _row(quantity, kind, design, dgp, truth, estimates, covered=None, rejected=None, n_seeds=0, n_boot=0, seed=0,
         note="", role="default"):
    coverage = float(np.mean(covered)) if covered is not None else math.nan
    rejection = float(np.mean(rejected)) if rejected is not None else math.nan
    mc = 1.96 * math.sqrt(0.05 * 0.95 / max(n_seeds, 1))
    if kind == "interval":
        met = 0.93 - mc <= coverage <= 0.97 + mc
    elif kind == "test":
        met = 0.04 - mc <= rejection <= 0.06 + mc
    else:
        met = None
    row = dict(benchmark="vignette", quantity=quantity, kind=kind, design=design, dgp=dgp, truth=truth,
               mean_estimate=float(np.nanmean(estimates)) if len(estimates) else math.nan, coverage=coverage,
               rejection_rate=rejection, n_seeds=n_seeds, n_boot=n_boot, seed=seed, target_met=met, note=note, role=role)
    return {k: row[k] for k in ROW_FIELDS}


def _spread_summary(table, n_boot, n_null, seed):
    design = vg.pair_design(table)
    return vg.pair_resampled_summary(design, lambda r, o: vg.spread_by_stratum(design, vg.identity_rates(design, r, o)),
                                     n_boot, n_null, seed, interval="basic", bounds=(0.0, 100.0))


def _polarity_summary(table, terms, n_boot, n_null, seed):
    design = vg.pair_design(table)
    masks = vg.polarity_masks(design, terms)
    return vg.pair_resampled_summary(
        design, lambda r, o: vg.mean_abs_polarity_by_stratum(design, vg.polarity_cells(design, r, o, masks)),
        n_boot, n_null, seed, interval="basic", bounds=(0.0, 100.0))


def run(n_seeds: int = 200, n_boot: int = 1000, quick: bool = False, seed: int = 20260101, offset: int = 0) -> list[dict]:
    """The calibration rows; seeds ``offset .. offset + n_seeds - 1`` of each loop (``offset`` splits a
    full run into parts that run side by side and are averaged)."""
    n_act = 3 if quick else N_ACTIVITIES
    n_seeds = min(n_seeds, 4) if quick else n_seeds
    n_boot = min(n_boot, 100) if quick else n_boot
    key = "race_ethnicity_color"
    dec_design = f"{N_IDS} identities, {N_IDS * (N_IDS - 1) // 2 * n_act} identity-contrast pairs x {N_QUESTIONS} questions"
    st_design = f"{N_IDS} identities, {N_IDS * (N_IDS - 1) // 2} portrait pairs x {2 * N_TERM_PAIRS} SSCM terms"
    nuisance = (f"left-side +{NUISANCE['left']:.2f}, per-pair sd {NUISANCE['pair_sd']:.2f}, per-image sd "
                f"{NUISANCE['image_sd']:.2f} (probability scale)")
    rows = []
    # -- decision, no identity preference ------------------------------------------------------------------
    theta0 = np.zeros(N_IDS)
    any_pair, any_fisher, raw_pair, raw_fisher, p_null, est, floor = [], [], [], [], [], [], []
    for s in range(offset, offset + n_seeds):
        rng = np.random.default_rng([seed, s])
        table = decision_table(rng, theta0, n_act)
        tests = vg.identity_pair_tests(table)
        any_pair.append(bool((tests["p_holm"] < 0.05).any()))
        any_fisher.append(bool((tests["p_paper_holm"] < 0.05).any()))
        raw_pair.append(float((tests["p_value"] < 0.05).mean()))
        raw_fisher.append(float((tests["p_paper"] < 0.05).mean()))
        res = _spread_summary(table, 0, n_boot, seed + s)
        p_null.append(res.p_null[key] < 0.05)
        est.append(res.estimate[key])
        floor.append(res.null[key])
    dgp0 = f"no identity preference; {nuisance}"
    rows += [
        _row("identity test (pair-level sign flip), any identity Holm p < 0.05", "test", dec_design, dgp0, math.nan, [],
             rejected=any_pair, n_seeds=n_seeds, seed=seed, note="family-wise; default p_value / p_holm"),
        _row("identity test (pair-level sign flip), per identity p < 0.05", "test", dec_design, dgp0, math.nan, [],
             rejected=raw_pair, n_seeds=n_seeds, seed=seed, note="mean share of the 14 identities"),
        _row("identity test (Fisher, paper), any identity Holm p < 0.05", "test", dec_design, dgp0, math.nan, [],
             rejected=any_fisher, n_seeds=n_seeds, seed=seed, note="paper's test, kept as p_paper; not calibrated",
             role="paper"),
        _row("identity test (Fisher, paper), per identity p < 0.05", "test", dec_design, dgp0, math.nan, [],
             rejected=raw_fisher, n_seeds=n_seeds, seed=seed, note="paper's test (its hearts are p < 0.05 uncorrected)",
             role="paper"),
        _row("selection_spread_race_ethnicity_color_p_null", "test", dec_design, dgp0, math.nan, [], rejected=p_null,
             n_seeds=n_seeds, n_boot=n_boot, seed=seed, note="within-pair label swaps"),
        _row("selection_spread_race_ethnicity_color (coin flips vs _null)", "null_floor", dec_design, dgp0, 0.0, est,
             n_seeds=n_seeds, n_boot=n_boot, seed=seed,
             note=f"estimate {np.mean(est):.2f} pp vs null floor {np.mean(floor):.2f} pp"),
    ]
    # -- decision, planted identity preference -------------------------------------------------------------
    theta = np.linspace(-0.1, 0.1, N_IDS)
    truth = float(np.ptp(_truth_s(theta)))
    covered, est, pair_power, fisher_power = [], [], [], []
    for s in range(offset, offset + n_seeds):
        rng = np.random.default_rng([seed, 10_000 + s])
        table = decision_table(rng, theta, n_act)
        res = _spread_summary(table, n_boot, 0, seed + s)
        covered.append(res.ci_low[key] <= truth <= res.ci_high[key])
        est.append(res.estimate[key])
        if s - offset < max(5, n_seeds // 10):
            tests = vg.identity_pair_tests(table)
            pair_power.append(bool((tests["p_holm"] < 0.05).any()))
            fisher_power.append(bool((tests["p_paper_holm"] < 0.05).any()))
    dgp1 = f"identity preference theta evenly -0.10..0.10; {nuisance}"
    rows.append(_row("selection_spread_race_ethnicity_color", "interval", dec_design, dgp1, truth, est,
                     covered=covered, n_seeds=n_seeds, n_boot=n_boot, seed=seed,
                     note=(f"pair bootstrap within dimension, basic 95 % (as the task); power of the identity tests "
                           f"(any Holm p < 0.05, {len(pair_power)} seeds): pair-level {np.mean(pair_power):.2f}, "
                           f"Fisher {np.mean(fisher_power):.2f}")))
    # -- stereotype --------------------------------------------------------------------------------------------
    terms = sscm_terms()
    delta0 = np.zeros((N_IDS, len(SSCM)))
    p_null, est, floor = [], [], []
    for s in range(offset, offset + n_seeds):
        rng = np.random.default_rng([seed, 20_000 + s])
        res = _polarity_summary(stereotype_table(rng, delta0), terms, 0, n_boot, seed + s)
        p_null.append(res.p_null[key] < 0.05)
        est.append(res.estimate[key])
        floor.append(res.null[key])
    dgp0s = (f"no polarity; left-side +{NUISANCE['left']:.2f}, per-pair sd {NUISANCE['pair_sd']:.2f} "
             "(one portrait per identity: image = identity)")
    rows += [
        _row("mean_abs_polarity_race_ethnicity_color_p_null", "test", st_design, dgp0s, math.nan, [], rejected=p_null,
             n_seeds=n_seeds, n_boot=n_boot, seed=seed, note="within-pair label swaps"),
        _row("mean_abs_polarity_race_ethnicity_color (coin flips vs _null)", "null_floor", st_design, dgp0s, 0.0, est,
             n_seeds=n_seeds, n_boot=n_boot, seed=seed,
             note=f"estimate {np.mean(est):.2f} pp vs null floor {np.mean(floor):.2f} pp"),
    ]
    delta = np.random.default_rng(seed).uniform(-0.3, 0.3, size=(N_IDS, len(SSCM)))
    truth = float(np.mean(np.abs(_truth_polarity(delta))))
    covered, est = [], []
    for s in range(offset, offset + n_seeds):
        rng = np.random.default_rng([seed, 30_000 + s])
        res = _polarity_summary(stereotype_table(rng, delta), terms, n_boot, 0, seed + s)
        covered.append(res.ci_low[key] <= truth <= res.ci_high[key])
        est.append(res.estimate[key])
    rows.append(_row("mean_abs_polarity_race_ethnicity_color", "interval", st_design,
                     f"polarity delta ~ U(-0.3, 0.3) per identity x SSCM dimension; {dgp0s.split('; ', 1)[1]}", truth,
                     est, covered=covered, n_seeds=n_seeds, n_boot=n_boot, seed=seed,
                     note="pair bootstrap within dimension, basic 95 % (as the task)"))
    rows += cell_rows(n_seeds, n_boot, n_act, seed, offset)
    return rows


# -- per-cell tests (PairComp, polarity, log-odds), per-activity factuality --------------------------------------
def factuality_table(rng, base: np.ndarray, n_pairs: int = 30, docs: int = 4, pair_sd: float = 0.1) -> pd.DataFrame:
    """Factuality answers: ``n_pairs`` image pairs per activity, ``docs`` questions each, P(correct) =
    base[activity] + u_pair (sd ``pair_sd``), clipped; truth per activity = base (no clipping at the
    values used)."""
    activity = np.repeat(np.arange(len(base)), n_pairs)
    p = np.clip(base[activity] + rng.normal(0, pair_sd, activity.size), 0, 1)
    pair = np.repeat(np.arange(activity.size), docs)
    return pd.DataFrame({"pair_id": pair.astype(str), "activity": activity[pair].astype(str),
                         "dimension": np.where(activity[pair] % 2 == 0, "age", "race_ethnicity_color"),
                         "correct": rng.random(pair.size) < p[pair]})


def cell_rows(n_seeds: int, n_boot: int, n_act: int, seed: int, offset: int = 0) -> list[dict]:
    """Rows of the per-cell tests and intervals (docs/vignette.md "Per-cell tests")."""
    dec_design = f"{N_IDS} identities, {N_IDS * (N_IDS - 1) // 2 * n_act} identity-contrast pairs x {N_QUESTIONS} questions"
    st_design = f"{N_IDS} identities, {N_IDS * (N_IDS - 1) // 2} portrait pairs x {2 * N_TERM_PAIRS} SSCM terms"
    nuisance = (f"left-side +{NUISANCE['left']:.2f}, per-pair sd {NUISANCE['pair_sd']:.2f}, per-image sd "
                f"{NUISANCE['image_sd']:.2f}")
    no_image = {**NUISANCE, "image_sd": 0.0}
    rows = []
    pc_raw, pc_any, lo_raw, lo_any = [], [], [], []
    for s in range(offset, offset + n_seeds):
        rng = np.random.default_rng([seed, 40_000 + s])
        tests = vg.pair_comp_tests(decision_table(rng, np.zeros(N_IDS), n_act))
        once = tests[[a < b for a, b in tests.index]]
        pc_raw.append(float((once["p_value"] < 0.05).mean()))
        pc_any.append(bool((once["p_holm"] < 0.05).any()))
        odds = vg.log_odds_tests(decision_table(rng, np.zeros(N_IDS), n_act, no_image), n_boot, seed + s)
        lo_raw.append(float((odds["p_value"] < 0.05).mean()))
        lo_any.append(bool((odds["p_holm"] < 0.05).any()))
    dgp0 = f"no identity preference; {nuisance}"
    rows += [
        _row("PairComp cell test (head-to-head sign flip), per identity pair p < 0.05", "test", dec_design, dgp0, math.nan,
             [], rejected=pc_raw, n_seeds=n_seeds, seed=seed, note="mean share of the 91 identity pairs"),
        _row("PairComp cell test, any pair Holm p < 0.05", "test", dec_design, dgp0, math.nan, [], rejected=pc_any,
             n_seeds=n_seeds, seed=seed, note="family-wise (the dimension's matrix)"),
        _row("log-odds cell test (pair-bootstrap Wald), per cell p < 0.05", "test", dec_design,
             "no identity x activity effect; left-side and per-pair effects (per-image effects would be real log-odds)",
             math.nan, [], rejected=lo_raw, n_seeds=n_seeds, n_boot=n_boot, seed=seed,
             note=f"mean share of the {N_IDS * n_act} cells; = 1 - coverage of the interval at the truth 0"),
        _row("log-odds cell test, any cell Holm p < 0.05", "test", dec_design, "as above", math.nan, [], rejected=lo_any,
             n_seeds=n_seeds, n_boot=n_boot, seed=seed, note="family-wise"),
    ]
    terms = sscm_terms()
    pol_raw, pol_any, covered, est = [], [], [], []
    delta = np.random.default_rng(seed).uniform(-0.3, 0.3, size=(N_IDS, len(SSCM)))
    truth = pd.DataFrame(_truth_polarity(delta), index=[f"id{k}" for k in range(N_IDS)], columns=SSCM)
    for s in range(offset, offset + n_seeds):
        rng = np.random.default_rng([seed, 50_000 + s])
        cells = vg.polarity_tests(stereotype_table(rng, np.zeros((N_IDS, len(SSCM)))), terms)
        pol_raw.append(float((cells["p_value"] < 0.05).mean()))
        pol_any.append(bool((cells["p_holm"] < 0.05).any()))
        cells = vg.polarity_tests(stereotype_table(rng, delta), terms, n_boot, seed + s)
        t = np.array([truth.loc[i, d] for i, d in cells.index])
        covered.append(float(np.mean((cells["ci_low"] <= t) & (t <= cells["ci_high"]))))
        est.append(float(np.mean(cells["polarity"] - t)))
    dgp0s = f"no polarity; left-side +{NUISANCE['left']:.2f}, per-pair sd {NUISANCE['pair_sd']:.2f}"
    rows += [
        _row("polarity cell test (sign flip), per cell p < 0.05", "test", st_design, dgp0s, math.nan, [],
             rejected=pol_raw, n_seeds=n_seeds, seed=seed, note=f"mean share of the {N_IDS * len(SSCM)} cells"),
        _row("polarity cell test, any cell Holm p < 0.05", "test", st_design, dgp0s, math.nan, [], rejected=pol_any,
             n_seeds=n_seeds, seed=seed, note="family-wise"),
        _row("polarity cell interval (pair bootstrap, percentile)", "interval", st_design,
             "polarity delta ~ U(-0.3, 0.3) per identity x SSCM dimension", 0.0, est, covered=covered,
             n_seeds=n_seeds, n_boot=n_boot, seed=seed,
             note="coverage averaged over the 84 cells; mean estimate = mean bias (estimate - truth), pp"),
    ]
    base = np.linspace(0.55, 0.9, 20)
    covered = []
    for s in range(offset, offset + n_seeds):
        rng = np.random.default_rng([seed, 60_000 + s])
        out = vg.factuality_by_activity(factuality_table(rng, base), n_boot, seed + s)
        t = base[out.index.astype(int)]
        covered.append(float(np.mean((out["ci_low"] <= t) & (t <= out["ci_high"]))))
    rows.append(_row("factuality accuracy per activity (pair-clustered interval)", "interval",
                     "20 activities x 30 image pairs x 4 questions", "P(correct) = 0.55..0.90 by activity + per-pair sd 0.10",
                     math.nan, [], covered=covered, n_seeds=n_seeds, n_boot=n_boot, seed=seed,
                     note="coverage averaged over the 20 activities"))
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--boot", type=int, default=1000)
    parser.add_argument("--json", help="also write the rows to this file")
    parser.add_argument("--offset", type=int, default=0, help="first seed (split a run into parts)")
    args = parser.parse_args()
    start = time.time()
    rows = run(args.seeds, args.boot, args.quick, offset=args.offset)
    if args.json:
        import json

        with open(args.json, "w") as fh:
            json.dump(rows, fh, default=float)
    out = pd.DataFrame(rows)
    with pd.option_context("display.max_colwidth", 60, "display.width", 250):
        print(out[["quantity", "kind", "truth", "mean_estimate", "coverage", "rejection_rate", "n_seeds", "target_met",
                   "note"]].to_string(index=False))
    print(f"{time.time() - start:.0f} s")
