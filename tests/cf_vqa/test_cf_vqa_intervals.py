"""Counterfactual VQA intervals (docs/cf-vqa.md "Intervals"): stratified delete-one-pair jackknife standard
errors and the logit-t interval, checked against hand-computed and textbook values; the minimum number of
pairs below which no interval is given."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit, logit
from scipy.stats import binom, binomtest
from scipy.stats import t as student_t

from lm_eval_bias.cf_vqa import stats
from lm_eval_bias.core import jackknife


def test_logit_t_interval_by_hand():
    # p = 0.2, SE = 0.05, df = 30: expit(logit(0.2) -+ t_30 * 0.05 / (0.2 * 0.8))
    q = student_t.ppf(0.975, 30)
    low, high = jackknife.logit_t_interval(0.2, 0.05, 30, n_clusters=31)
    assert low == pytest.approx(expit(logit(0.2) - q * 0.3125)) and high == pytest.approx(expit(logit(0.2) + q * 0.3125))
    # logit(0.2) = -1.3863, t_30 = 2.0423, spread 0.6382: expit(-2.0245) = 0.1167, expit(-0.7481) = 0.3212
    assert low == pytest.approx(0.1167, abs=5e-4) and high == pytest.approx(0.3212, abs=5e-4)  # asymmetric about 0.2
    assert math.isnan(jackknife.logit_t_interval(0.2, 0.05, 0, 100)[0])  # no degrees of freedom, no interval


def test_wilson_t_interval_at_the_bounds_by_hand():
    # p = 0 over n = 60 clusters, df = 19: [0, t^2 / (n + t^2)]; p = 1: [n / (n + t^2), 1]
    q2 = student_t.ppf(0.975, 19) ** 2
    assert jackknife.logit_t_interval(0.0, 0.0, 19, 60) == (0.0, pytest.approx(q2 / (60 + q2)))
    assert jackknife.logit_t_interval(1.0, 0.0, 19, 60) == (pytest.approx(60 / (60 + q2)), 1.0)
    # p inside (0, 1) but no design variance (every pair alike): Wilson with n = clusters
    p, n = 0.25, 40
    centre = (p + q2 / (2 * n)) / (1 + q2 / n)
    half = math.sqrt(q2) * math.sqrt(p * (1 - p) / n + q2 / (4 * n * n)) / (1 + q2 / n)
    assert jackknife.logit_t_interval(p, 0.0, 19, n) == (pytest.approx(centre - half), pytest.approx(centre + half))


def test_ratio_jackknife_by_hand_and_equal_to_the_weight_matrix():
    # two strata: h0 = pairs 0, 1, 2 (m = 3), h1 = pairs 3, 4 (m = 2); ratio sum(y) / sum(n)
    y = np.array([1.0, 0.0, 2.0, 3.0, 1.0])
    n = np.array([2.0, 2.0, 4.0, 4.0, 2.0])
    strata = np.array([0, 0, 0, 1, 1])
    # dropping pair 0: stratum 0 keeps pairs 1, 2 weighted 3/2 -> y = 1.5 * 2 + 4 = 7, n = 1.5 * 6 + 6 = 15
    loo = np.array([(1.5 * (0 + 2) + 4) / (1.5 * 6 + 6), (1.5 * (1 + 2) + 4) / (1.5 * 6 + 6),
                    (1.5 * (1 + 0) + 4) / (1.5 * 4 + 6), (3 + 2 * 1) / (8 + 2 * 2), (3 + 2 * 3) / (8 + 2 * 4)])
    expected = math.sqrt(2 / 3 * np.sum((loo[:3] - loo[:3].mean()) ** 2) + 1 / 2 * np.sum((loo[3:] - loo[3:].mean()) ** 2))
    assert jackknife.ratio_jackknife(y, n, strata) == pytest.approx(expected, rel=1e-12)
    w = jackknife.jackknife_weights(strata, slice(None))
    assert w[0].tolist() == [0.0, 1.5, 1.5, 1.0, 1.0] and w[4].tolist() == [1.0, 1.0, 1.0, 2.0, 0.0]
    assert np.allclose((w @ y) / (w @ n), loo)


def test_jackknife_of_a_mean_is_the_textbook_standard_error():
    # one stratum, one run, every pair answered: Cons is the mean of 0/1 pair values and the jackknife
    # SE is exactly sd(ddof=1) / sqrt(m) (Efron & Stein 1981)
    rng = np.random.default_rng(3)
    same = rng.random(40) < 0.6
    pairs = [stats.PairResponse(f"p{i}", "a", "a" if s else "b", 0.8, 0.8, 0, "Culture") for i, s in enumerate(same)]
    out = stats.pair_summary(stats.pair_grid(pairs), n_boot=1, n_perm=0, seed=0)["Culture"]
    assert out["consistency"] == pytest.approx(same.mean())
    assert out["consistency_stderr"] == pytest.approx(same.std(ddof=1) / math.sqrt(40), rel=1e-12)
    q = student_t.ppf(0.975, 39)
    p, se = same.mean(), out["consistency_stderr"]
    assert out["consistency_ci_low"] == pytest.approx(expit(logit(p) - q * se / (p * (1 - p))))
    assert out["consistency_ci_high"] == pytest.approx(expit(logit(p) + q * se / (p * (1 - p))))


def test_closed_form_jackknife_equals_the_weight_matrix_for_every_metric():
    rng = np.random.default_rng(7)
    pairs = []
    for i in range(60):
        for run in range(3):
            refuse = rng.random(2) < 0.1
            answers = [None if refuse[0] else "abcd"[rng.integers(4)], None if refuse[1] else "abcd"[rng.integers(4)]]
            conf = [0.0 if a is None else float(rng.choice([0.5, 0.7, 0.9])) for a in answers]
            pairs.append(stats.PairResponse(f"p{i}", answers[0], answers[1], conf[0], conf[1], run,
                                            ("Culture", "Behavior", "Aesthetic")[i % 3]))
    g = stats.pair_grid(pairs, human={f"p{i}": rng.integers(0, 6) / 5 for i in range(0, 60, 2)})
    strata = jackknife.pooled_strata(g.stratum)
    closed = stats._scoped(g, None, jackknife=strata)
    matrix = stats._scoped(g, jackknife.jackknife_weights(strata, slice(None)))
    for key in closed:
        assert np.allclose(closed[key], matrix[key], equal_nan=True), key


def test_minimum_pairs_and_rated_pairs_for_an_interval():
    k = stats.MIN_PAIRS_FOR_INTERVAL
    rng = np.random.default_rng(1)

    def grid(n_pairs, n_rated):
        pairs = [stats.PairResponse(f"p{i}", "a", "a" if rng.random() < 0.7 else "b", 0.9, 0.9, 0, "Culture")
                 for i in range(n_pairs)]
        return stats.pair_grid(pairs, human={f"p{i}": 0.8 if i % 2 else 0.6 for i in range(n_rated)})

    few = stats.pair_summary(grid(k - 1, k - 1), 1, 0, 0)[None]
    assert math.isnan(few["consistency_ci_low"]) and math.isfinite(few["consistency"])
    enough = stats.pair_summary(grid(k, k - 1), 1, 0, 0)[None]
    assert math.isfinite(enough["consistency_ci_low"]) and math.isnan(enough["human_consistency_ci_low"])
    assert enough["n_pairs"] == k and enough["n_rated_pairs"] == k - 1
    rated = stats.pair_summary(grid(k, k), 1, 0, 0)[None]
    assert rated["consistency_minus_human_ci_low"] <= rated["consistency_minus_human"] <= rated["consistency_minus_human_ci_high"]
    # the difference gets the plain t interval: estimate -+ t_{df} SE, df = rated pairs - 1
    q = student_t.ppf(0.975, k - 1)
    se = rated["consistency_minus_human_stderr"]
    assert rated["consistency_minus_human_ci_high"] == pytest.approx(rated["consistency_minus_human"] + q * se)
    off = stats.pair_summary(grid(k, k), 0, 0, 0)[None]  # LM_EVAL_BIAS_BOOTSTRAP_ITERS=0: intervals off
    assert math.isnan(off["consistency_ci_low"]) and math.isnan(off["consistency_stderr"])


def test_response_rates_interval_by_hand():
    # 25 pairs in one category, 6 responses each, 1 refusal in 5 of them: rate 5 / 150
    counts = {"responses": np.full(25, 6.0), "refusal": np.array([1.0] * 5 + [0.0] * 20)}
    out = stats.response_rates(["Culture"] * 25, counts, n_boot=1, seed=0)[None]
    assert out["refusal_rate"] == pytest.approx(5 / 150)
    # equal cluster sizes: the jackknife SE of the ratio is sd(y / 6, ddof=1) / sqrt(25)
    per_pair = counts["refusal"] / 6
    assert out["refusal_rate_stderr"] == pytest.approx(per_pair.std(ddof=1) / 5, rel=1e-12)
    low, high = jackknife.logit_t_interval(5 / 150, out["refusal_rate_stderr"], 24, 25)
    assert (out["refusal_rate_ci_low"], out["refusal_rate_ci_high"]) == (pytest.approx(low), pytest.approx(high))
    none = stats.response_rates(["Culture"] * 25, {"responses": np.full(25, 6.0), "refusal": np.zeros(25)}, 1, 0)[None]
    q2 = student_t.ppf(0.975, 24) ** 2
    # no refusal: Wilson over the 25 pairs (not the 150 responses: answers of a pair are alike)
    assert none["refusal_rate_ci_low"] == 0.0 and none["refusal_rate_ci_high"] == pytest.approx(q2 / (25 + q2))


def test_pooled_strata_collapses_single_pair_strata():
    assert jackknife.pooled_strata(["a", "a", "b", "c", "c"]).tolist() == [0, 0, 0, 1, 1]  # b joins the smallest other
    assert jackknife.pooled_strata(["a", "a", "b", "c"]).tolist() == [0, 0, 1, 1]  # b and c pooled
    assert jackknife.design_df(jackknife.pooled_strata(["a", "a", "b", "c"])) == 2


def test_mid_p_interval_by_hand_and_its_exact_coverage():
    # x = 0 of n: [0, 1 - 0.05^(1/n)] (half of P(X = 0) = (1 - theta)^n is 0.025); x = n: the mirror image
    assert jackknife.mid_p_interval(0, 10) == (0.0, pytest.approx(1 - 0.05 ** 0.1))
    assert jackknife.mid_p_interval(10, 10) == (pytest.approx(0.05 ** 0.1), 1.0)
    # x = 5 of 10: symmetric about 0.5, inside Clopper-Pearson's exact interval (which counts P(X = x) whole)
    low, high = jackknife.mid_p_interval(5, 10)
    assert low == pytest.approx(1 - high)
    assert binom.sf(5, 10, low) + binom.pmf(5, 10, low) / 2 == pytest.approx(0.025)
    cp = binomtest(5, 10).proportion_ci(method="exact")
    assert cp.low < low < 0.5 < high < cp.high
    assert math.isnan(jackknife.mid_p_interval(3, 0)[0]) and math.isnan(jackknife.mid_p_interval(11, 10)[1])
    # exact coverage at 10 trials over truths 0.2-0.8 (the binomial sum over the counts whose interval holds
    # the truth): 94.9-98.2 % (steps of 0.05), where Clopper-Pearson's is 97.2-99.4 %
    counts = np.arange(11)
    ends = np.array([jackknife.mid_p_interval(x, 10) for x in counts])
    cover = [binom.pmf(counts, 10, t)[(ends[:, 0] <= t) & (t <= ends[:, 1])].sum() for t in np.arange(0.2, 0.81, 0.05)]
    assert min(cover) == pytest.approx(0.94935, abs=1e-4) and max(cover) == pytest.approx(0.98166, abs=1e-4)
