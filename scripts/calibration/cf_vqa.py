"""Calibration of the Counterfactual VQA intervals and permutation null floors at the paper's design.

Design (paper Sec. 3.3 and 4.2): 1,609 image pairs in 5 categories (sizes 360 / 300 / 320 / 310 / 319;
the paper gives no per-category count), each asked under 3 option orders; human consistency on ~30 %
of the pairs (App. D.2), five workers each. ``quick`` shrinks to 200 pairs.

Model (per pair p, with pair effects; per run r):
- a preferred option (uniform over the four presented letters); in each run the b+ answer is the
  preferred option with probability 0.8, else a uniform letter (option-order noise);
- the b- answer flips to another option with probability f_p = logistic(alpha + w_p), w_p ~ N(0, 1)
  (the attribute effect, heterogeneous across pairs; alpha = -0.4), else copies b+;
- refusals: each side refuses with probability rho_p,side (rho_p ~ Beta(1, 12); b+ x 1.5), invalid
  and truncated responses with probabilities 1 % and 2 % per side (statuses, for the rates);
- confidence: a pair level ~ U{0.6, 0.7, 0.8, 0.9} plus a side/run jitter of 0 / +0.05 / -0.1,
  clipped to the grid {0.5, ..., 0.95} (self-reported confidences are coarse, Sec. 3.4).

Interval rows: coverage of the 95 % percentile interval of :func:`lm_eval_bias.cf_vqa.stats.pair_summary`
and :func:`~lm_eval_bias.cf_vqa.stats.response_rates` (the functions ``summarize`` calls). Truth: the
population value, the metric on one simulated design of 200,000 pairs (CC-AUC and SR-AUC are plug-in
integrals whose finite-sample bias at 1,609 pairs is far below their standard error).

Test rows: rejection rate at 5 % of ``<m>_p_null`` when the two sides are unrelated: each side has its
own preferred option, refusal propensity and confidence level (per-pair heterogeneity kept, the link
between the two images of a pair removed), and -- heterogeneity that leaves the null true -- each
category has its own letter preference (the preferred option is drawn from a category-specific
distribution, the same for both images: a position / category effect, not a link between the two
images) and its own refusal level. Per-category tests (five per metric, the pooled rate over the
categories) and the family-wise row "any category Holm p < 0.05" (the Holm family of the task) are
included, at :data:`TEST_SEEDS` seeds (n_boot permutations each, as the task). The
p-values are the task's randomised permutation p-values (ties with the observation weighted by a
uniform U, :func:`lm_eval_bias.cf_vqa.stats.null_p_value`), exact under this null. Null-floor rows: the
mean of ``<m>_null`` under that null against the mean estimate. Interval
rows also cover every category's consistency (pooled coverage over the five categories), as the report
shows them all.

``python -m scripts.calibration.cf_vqa [--quick]`` prints the rows.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from lm_eval_bias.cf_vqa import stats
from lm_eval_bias.core.multiplicity import adjust
from scripts.calibration import rate_row

BENCHMARK = "cf_vqa"
CATEGORY_SIZES = {"Demography": 360, "Culture": 300, "Environment": 320, "Behavior": 310, "Aesthetic": 319}
RUNS = 3
ALPHA = -0.4
GRID = np.array([0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
INTERVAL_KEYS = ("consistency", "cc_auc", "sr_auc", "refusal_asymmetry_rate", "human_consistency",
                 "consistency_minus_human")
RATE_KEYS = ("refusal_rate", "invalid_rate", "truncated_rate")
CATEGORY_ROW = "Culture"
#: Seeds of the test rows (at least; ``quick`` keeps ``n_seeds``): the Monte Carlo SE of a 5 % rejection
#: rate is 0.77 points at 811 seeds (1.96 SE = 1.5), against 1.38 at 250, where an exact test lands
#: outside the 4-6 % band in about half of the rows (the rows at .016 / .036 / .064 of the 250-seed run
#: of 26 Nov; 1,500 further seeds at 99 permutations gave .051 / .056 / .047, p-values uniform).
TEST_SEEDS = 811


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def _sizes(quick: bool) -> dict[str, int]:
    if not quick:
        return CATEGORY_SIZES
    return {c: 40 for c in CATEGORY_SIZES}


#: the null's category-level heterogeneity: letter preference per category (the preferred option of
#: each image is drawn from it) and refusal multiplier per category
CATEGORY_LETTERS = np.array([[0.55, 0.15, 0.15, 0.15], [0.25, 0.25, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4],
                             [0.4, 0.4, 0.1, 0.1], [0.15, 0.15, 0.15, 0.55]])
CATEGORY_REFUSAL = np.array([1.0, 2.0, 0.5, 1.0, 1.5])


def simulate(rng, sizes: dict[str, int], linked: bool = True):
    """(grid, per-pair strata, per-pair status counts) of one simulated run of the design. Unlinked
    (the null): each image draws its own preferred option from its category's letter distribution
    (:data:`CATEGORY_LETTERS`) and its own refusal propensity (times :data:`CATEGORY_REFUSAL`)."""
    cats = np.concatenate([[c] * n for c, n in sizes.items()])
    n = len(cats)
    cat_index = np.concatenate([[i] * m for i, m in enumerate(sizes.values())])
    flip = _logistic(ALPHA + rng.normal(0, 1, n))
    if linked:
        pref_p = rng.integers(0, 4, n)
        pref_m = pref_p
    else:
        cumulative = CATEGORY_LETTERS.cumsum(1)[cat_index]
        pref_p = (rng.random(n)[:, None] > cumulative).sum(1)
        pref_m = (rng.random(n)[:, None] > cumulative).sum(1)
    rho_p = rng.beta(1, 12, n) * 1.5
    rho_m = rho_p / 1.5 if linked else rng.beta(1, 12, n)
    if not linked:
        rho_p = np.clip(rho_p * CATEGORY_REFUSAL[cat_index] / 1.5, 0, 0.9)
        rho_m = np.clip(rho_m * CATEGORY_REFUSAL[cat_index], 0, 0.9)
    level_p = rng.choice([1, 2, 3, 4], n)
    level_m = level_p if linked else rng.choice([1, 2, 3, 4], n)

    def answers(pref):
        keep = rng.random((n, RUNS)) < 0.8
        return np.where(keep, pref[:, None], rng.integers(0, 4, (n, RUNS)))

    a = answers(pref_p)
    if linked:
        other = (a + rng.integers(1, 4, (n, RUNS))) % 4
        b = np.where(rng.random((n, RUNS)) < flip[:, None], other, a)
    else:
        b = answers(pref_m)
    ref_a = rng.random((n, RUNS)) < rho_p[:, None]
    ref_b = rng.random((n, RUNS)) < rho_m[:, None]
    jitter = np.array([0, 1, -1])
    conf_a = GRID[np.clip(level_p[:, None] + rng.choice(jitter, (n, RUNS)), 0, len(GRID) - 1)]
    conf_b = GRID[np.clip(level_m[:, None] + rng.choice(jitter, (n, RUNS)), 0, len(GRID) - 1)]
    lp = np.where(ref_a, stats.REFUSED, a)
    lm = np.where(ref_b, stats.REFUSED, b)
    cp, cm = np.where(ref_a, 0.0, conf_a), np.where(ref_b, 0.0, conf_b)
    human = np.where(rng.random(n) < 0.3, rng.binomial(5, 1 - 0.6 * flip) / 5.0, np.nan)
    grid = np.unique(np.concatenate([[0.0, 1.0], cp.ravel(), cm.ravel()]))
    names = tuple(sizes)
    g = stats.PairGrid(tuple(f"p{i}" for i in range(n)), names, np.array([names.index(c) for c in cats]), lp, lm,
                       lp == lm, np.searchsorted(grid, cp), np.searchsorted(grid, cm), grid, human, True)
    statuses = rng.choice(4, size=(n, 2 * RUNS), p=[0.97, 0.0, 0.01, 0.02])
    counts = {"responses": np.full(n, 2.0 * RUNS), "refusal": (ref_a.sum(1) + ref_b.sum(1)).astype(float),
              "invalid": (statuses == 2).sum(1).astype(float), "truncated": (statuses == 3).sum(1).astype(float)}
    return g, cats, counts


def population_truth(seed: int = 777, n_pairs: int = 200_000) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    per = n_pairs // len(CATEGORY_SIZES)
    g, cats, counts = simulate(rng, {c: per for c in CATEGORY_SIZES})
    truth = {k: float(v[0]) for k, v in stats.grid_metrics(g).items()}
    truth["consistency_minus_human"] = truth["consistency_with_human"] - truth["human_consistency"]
    total = counts["responses"].sum()
    truth.update({f"{k}_rate": float(counts[k].sum() / total) for k in stats.RATE_NAMES})
    for name in CATEGORY_SIZES:
        members = stats._subgrid(g, np.flatnonzero(g.stratum == g.strata.index(name)))
        truth[f"consistency_{name.lower()}"] = float(stats.grid_metrics(members)["consistency"][0])
    return truth


def _row(quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note="") -> dict[str, Any]:
    return rate_row(BENCHMARK, quantity, kind, design, dgp, truth, estimates, hits, n_seeds, n_boot, seed, note)


def run(n_seeds: int, n_boot: int, quick: bool, seed: int = 20261123) -> list[dict]:
    sizes = _sizes(quick)
    design = f"{sum(sizes.values())} pairs in 5 categories x {RUNS} option orders x 2 images"
    truth = population_truth(n_pairs=20_000 if quick else 200_000)
    est = {k: [] for k in (*INTERVAL_KEYS, *RATE_KEYS, f"consistency_{CATEGORY_ROW.lower()}")}
    hits = {k: [] for k in est}
    null_p = {k: [] for k in stats.NULL_METRICS}
    null_p_category = {k: [] for k in stats.NULL_METRICS}
    null_any_holm = {k: [] for k in stats.NULL_METRICS}
    category_hits, category_est = [], []
    null_est = {k: [] for k in stats.NULL_METRICS}
    null_floor = {k: [] for k in stats.NULL_METRICS}
    for s in range(seed, seed + n_seeds):
        rng = np.random.default_rng(s)
        g, cats, counts = simulate(rng, sizes)
        out = stats.pair_summary(g, n_boot, 0, s, categories=None)
        rates = stats.response_rates(cats.tolist(), counts, n_boot, s)[None]
        for key in INTERVAL_KEYS:
            est[key].append(out[None][key])
            hits[key].append(out[None][f"{key}_ci_low"] <= truth[key] <= out[None][f"{key}_ci_high"])
        for key in RATE_KEYS:
            est[key].append(rates[key])
            hits[key].append(rates[f"{key}_ci_low"] <= truth[key] <= rates[f"{key}_ci_high"])
        cat_key = f"consistency_{CATEGORY_ROW.lower()}"
        cat = out[CATEGORY_ROW]
        est[cat_key].append(cat["consistency"])
        hits[cat_key].append(cat["consistency_ci_low"] <= truth[cat_key] <= cat["consistency_ci_high"])
        for name in sizes:
            category_est.append(out[name]["consistency"])
            category_hits.append(out[name]["consistency_ci_low"] <= truth[f"consistency_{name.lower()}"]
                                 <= out[name]["consistency_ci_high"])
    test_seeds = n_seeds if quick else max(n_seeds, TEST_SEEDS)
    for s in range(seed, seed + test_seeds):
        g0, _, _ = simulate(np.random.default_rng(10_000_000 + s), sizes, linked=False)
        summary0 = stats.pair_summary(g0, 0, n_boot, s, categories=None)
        out0 = summary0[None]
        for key in stats.NULL_METRICS:
            null_p[key].append(out0[f"{key}_p_null"] < 0.05)
            null_est[key].append(out0[key])
            null_floor[key].append(out0[f"{key}_null"])
            per_category = [summary0[name][f"{key}_p_null"] for name in sizes]
            null_p_category[key].extend(p < 0.05 for p in per_category)
            null_any_holm[key].append(bool(np.any(np.asarray(adjust(per_category)) < 0.05)))
    dgp = (f"b- flips with p = logistic({ALPHA} + N(0,1)) per pair; b+ = pair's preferred option w.p. 0.8 per run; "
           "refusal ~ Beta(1,12) per pair (b+ x1.5); invalid 1 %, truncated 2 %; coarse confidences")
    rows = []
    for key in est:
        note = "one category (pairs resampled within it)" if key.startswith("consistency_") and key != "consistency_minus_human" else ""
        rows.append(_row(key, "interval", design, dgp, truth[key], est[key], hits[key], n_seeds, n_boot, seed, note))
    rows.append(_row("consistency_<category> (all five categories)", "interval", design, dgp, float(np.mean(
        [truth[f"consistency_{name.lower()}"] for name in sizes])), category_est, category_hits, n_seeds, n_boot, seed,
        "coverage pooled over the five categories (pairs resampled within each)"))
    null_dgp = ("the two images unrelated: own preferred option, refusal propensity and confidence level per side; "
                "category-specific letter preferences and refusal levels")
    permutation = "b- responses permuted across pairs within category; randomised p (ties weighted U)"
    for key in stats.NULL_METRICS:
        rows.append(_row(f"{key}_p_null", "test", design, null_dgp, math.nan, null_est[key], null_p[key], test_seeds,
                         n_boot, seed, permutation))
        rows.append(_row(f"{key}_<category>_p_null (each of 5 categories)", "test", design, null_dgp, math.nan,
                         null_est[key], null_p_category[key], test_seeds, n_boot, seed,
                         "rejection pooled over the five per-category tests"))
        rows.append(_row(f"{key}_<category>_p_null_holm: any category Holm p < 0.05", "test", design, null_dgp,
                         math.nan, null_est[key], null_any_holm[key], test_seeds, n_boot, seed,
                         "family-wise: the task's Holm family of five categories"))
        rows.append(_row(f"{key}_null", "null_floor", design, null_dgp, float(np.mean(null_est[key])),
                         null_floor[key], [], test_seeds, n_boot, seed, "mean null floor vs mean estimate (truth column)"))
    return rows


def exactness_check(n_seeds: int = 1500, n_perm: int = 99, first_seed: int = 50_000_000) -> dict[str, dict[str, float]]:
    """The permutation tests' p-values under the calibration null (:func:`simulate`, ``linked=False``) on
    ``n_seeds`` fresh designs: per test (pooled and per category, Cons / CC-AUC / SR-AUC) the rejection
    rate at 5 % and the Kolmogorov-Smirnov p of uniformity (``scipy.stats.kstest``). The randomised p
    is exact at any number of permutations, so 99 keep this cheap (~0.15 s a seed). The 26 Nov run
    (defaults): pooled 0.051 / 0.056 / 0.047, per category 0.045-0.057, every KS p >= 0.096."""
    from scipy.stats import kstest

    names = [None, *CATEGORY_SIZES]
    p = {(scope, k): [] for scope in names for k in stats.NULL_METRICS}
    for s in range(first_seed, first_seed + n_seeds):
        g0, _, _ = simulate(np.random.default_rng(s), CATEGORY_SIZES, linked=False)
        out = stats.pair_summary(g0, 0, n_perm, s)
        for scope, k in p:
            p[(scope, k)].append(out[scope][f"{k}_p_null"])
    return {f"{k}" + ("" if scope is None else f"_{scope.lower()}"): {
        "rejection": float(np.mean(np.asarray(v) < 0.05)), "ks_p": float(kstest(v, "uniform").pvalue)}
        for (scope, k), v in p.items()}


if __name__ == "__main__":
    import time

    quick = "--quick" in sys.argv
    start = time.time()
    if "--exactness" in sys.argv:  # python -m scripts.calibration.cf_vqa --exactness [--quick]
        for key, value in exactness_check(30 if quick else 1500).items():
            print(f"{key:32s} rejection={value['rejection']:.4f} ks_p={value['ks_p']:.3f}")
        print(f"{time.time() - start:.0f} s")
        sys.exit(0)
    table = run(20 if quick else 200, 200 if quick else 1000, quick)
    for r in table:
        print(f"{r['quantity']:32s} {r['kind']:10s} truth={r['truth']:.4f} mean={r['mean_estimate']:.4f} "
              f"cov={r['coverage']:.3f} rej={r['rejection_rate']:.3f} met={r['target_met']}")
    print(f"{time.time() - start:.0f} s")
