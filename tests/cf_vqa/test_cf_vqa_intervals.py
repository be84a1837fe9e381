"""Counterfactual VQA intervals (docs/cf-vqa.md "Intervals"): stratified delete-one-pair jackknife standard
errors, the logit-t interval and (response-status rates) the Wilson interval at the effective sample size,
checked against hand-computed and textbook values; the minimum number of
pairs below which no interval is given."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit, logit
from scipy.stats import binom, binomtest, norm
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


def _wilson_by_hand(p, n, q):
    centre = (p + q * q / (2 * n)) / (1 + q * q / n)
    half = q * math.sqrt(p * (1 - p) / n + q * q / (4 * n * n)) / (1 + q * q / n)
    return centre - half, centre + half


def test_effective_n_wilson_interval_by_hand():
    # p = 0.05, SE = 0.025, df = 19, 120 units: n_eff = 0.0475 / 0.000625 = 76 (design effect 1.58);
    # Korn & Graubard's df adjustment (t_119 / t_19)^2 = (1.98010 / 2.09302)^2 = 0.89501 -> n* = 68.020
    z, t19, t119 = norm.ppf(0.975), student_t.ppf(0.975, 19), student_t.ppf(0.975, 119)
    low, high = jackknife.effective_n_wilson_interval(0.05, 0.025, 19, 120, 20)
    n_star = 76.0 * (t119 / t19) ** 2
    assert n_star == pytest.approx(68.020, abs=1e-3)
    assert (low, high) == (pytest.approx(_wilson_by_hand(0.05, n_star, z)[0]), pytest.approx(_wilson_by_hand(0.05, n_star, z)[1]))
    # z^2 / n* = 3.8415 / 68.020 = 0.05648: centre (0.05 + 0.02824) / 1.05648 = 0.07406, half
    # 1.95996 sqrt(0.0475 / 68.020 + 3.8415 / 18507) / 1.05648 = 0.05584 -> [0.0182, 0.1299]
    assert low == pytest.approx(0.0182, abs=5e-4) and high == pytest.approx(0.1299, abs=5e-4)
    # not the t-Wilson interval at n_eff (t_19 for z and no t_{n-1}): that one is [0.0180, 0.1310]
    assert high < _wilson_by_hand(0.05, 76.0, t19)[1] - 5e-4
    # a design effect below 1 is taken as 1: n_eff capped at the 120 units before the df adjustment
    capped = jackknife.effective_n_wilson_interval(0.05, 0.01, 19, 120, 20)
    expected = _wilson_by_hand(0.05, 120.0 * (t119 / t19) ** 2, z)
    assert capped == (pytest.approx(expected[0]), pytest.approx(expected[1]))
    # uncapped (R survey's form, VIGNETTE's domain shares): n_eff = 0.0475 / 0.0001 = 475 -> n* = 425.13
    uncapped = jackknife.effective_n_wilson_interval(0.05, 0.01, 19, 120, 20, cap_at_units=False)
    assert 475.0 * (t119 / t19) ** 2 == pytest.approx(425.13, abs=1e-2)
    expected = _wilson_by_hand(0.05, 475.0 * (t119 / t19) ** 2, z)
    assert uncapped == (pytest.approx(expected[0]), pytest.approx(expected[1]))
    assert uncapped[1] - uncapped[0] < capped[1] - capped[0]
    # below the cap the two agree
    assert jackknife.effective_n_wilson_interval(0.05, 0.025, 19, 120, 20, cap_at_units=False) == (low, high)
    # fewer units than df + 1 (never at Counterfactual VQA: units outnumber pairs): the factor (t_{n-1} / t_df)^2
    # would exceed 1 and is capped at it -- 5 units over 19 df keep n_eff itself
    few = jackknife.effective_n_wilson_interval(0.4, math.sqrt(0.24 / 5), 19, 5, 5)
    assert (student_t.ppf(0.975, 4) / t19) ** 2 > 1
    assert few == (pytest.approx(_wilson_by_hand(0.4, 5.0, z)[0]), pytest.approx(_wilson_by_hand(0.4, 5.0, z)[1]))
    # narrower than the logit-t interval of the same SE at a handful of events (the reason it is used)
    logit_low, logit_high = jackknife.logit_t_interval(0.05, 0.025, 19, 20)
    assert high - low < logit_high - logit_low
    # at 0 (no design effect to estimate): the t-Wilson interval over the clusters, as logit-t
    assert jackknife.effective_n_wilson_interval(0.0, 0.0, 19, 120, 20) == jackknife.wilson_t_interval(0.0, 20, 19)
    assert math.isnan(jackknife.effective_n_wilson_interval(0.05, 0.025, 0, 120, 20)[0])
    assert math.isnan(jackknife.effective_n_wilson_interval(0.05, 0.025, 19, 0, 20)[0])
    assert math.isnan(jackknife.effective_n_wilson_interval(0.05, float("nan"), 19, 120, 20)[0])


def test_response_rates_interval_by_hand():
    # 25 pairs in one category, 6 responses each, 1 refusal in 5 of them: rate 5 / 150
    counts = {"responses": np.full(25, 6.0), "refusal": np.array([1.0] * 5 + [0.0] * 20)}
    out = stats.response_rates(["Culture"] * 25, counts, n_boot=1, seed=0)[None]
    assert out["refusal_rate"] == pytest.approx(5 / 150)
    # equal cluster sizes: the jackknife SE of the ratio is sd(y / 6, ddof=1) / sqrt(25)
    per_pair = counts["refusal"] / 6
    assert out["refusal_rate_stderr"] == pytest.approx(per_pair.std(ddof=1) / 5, rel=1e-12)
    q = student_t.ppf(0.975, 24)
    z, df_adjustment = norm.ppf(0.975), (student_t.ppf(0.975, 149) / q) ** 2
    # SE 0.013608: n_eff = (1/30)(29/30) / SE^2 = 174 > 150 responses, capped at n = 150, then
    # Korn & Graubard's (t_149 / t_24)^2 = (1.9760 / 2.0639)^2: Wilson with z at 150 x 0.9166 = 137.5
    assert out["refusal_rate_stderr"] == pytest.approx(0.013608, abs=1e-6)
    assert 150.0 * df_adjustment == pytest.approx(137.5, abs=0.1)
    low, high = _wilson_by_hand(5 / 150, 150.0 * df_adjustment, z)
    assert (out["refusal_rate_ci_low"], out["refusal_rate_ci_high"]) == (pytest.approx(low), pytest.approx(high))
    # the same 5 refusals in two pairs (3 + 2): a design effect above 1, n_eff = p (1 - p) / SE^2 < 150
    clustered = stats.response_rates(["Culture"] * 25, {"responses": np.full(25, 6.0),
                                                        "refusal": np.array([3.0, 2.0] + [0.0] * 23)}, 1, 0)[None]
    se = (np.array([3.0, 2.0] + [0.0] * 23) / 6).std(ddof=1) / 5
    n_eff = (1 / 30) * (29 / 30) / se ** 2
    assert clustered["refusal_rate_stderr"] == pytest.approx(se, rel=1e-12) and 30 < n_eff < 60
    low, high = _wilson_by_hand(5 / 150, n_eff * df_adjustment, z)
    assert (clustered["refusal_rate_ci_low"], clustered["refusal_rate_ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert clustered["refusal_rate_ci_high"] > out["refusal_rate_ci_high"]  # clustering widens it
    none = stats.response_rates(["Culture"] * 25, {"responses": np.full(25, 6.0), "refusal": np.zeros(25)}, 1, 0)[None]
    q2 = q ** 2
    # no refusal: Wilson over the 25 pairs (not the 150 responses: answers of a pair are alike)
    assert none["refusal_rate_ci_low"] == 0.0 and none["refusal_rate_ci_high"] == pytest.approx(q2 / (25 + q2))


def test_status_shares_of_pair_summary_use_the_effective_sample_size():
    # 24 pairs x 1 run: side a refuses in pairs 0-3, side b also in pairs 0-1 -> 6 empty answers of 48,
    # 2 one-sided refusals of 24 pair-runs; Cons and the AUCs keep the logit-t interval
    pairs = [stats.PairResponse(f"p{i}", None if i < 4 else "a", None if i < 2 else "a", 0.0 if i < 4 else 0.9,
                                0.0 if i < 2 else 0.9, 0, "Culture") for i in range(24)]
    out = stats.pair_summary(stats.pair_grid(pairs), 1, 0, 0)[None]
    assert out["empty_answer_rate"] == pytest.approx(6 / 48) and out["refusal_asymmetry_rate"] == pytest.approx(2 / 24)
    for key, units in (("empty_answer_rate", 48.0), ("refusal_asymmetry_rate", 24.0)):
        expected = jackknife.effective_n_wilson_interval(out[key], out[f"{key}_stderr"], 23, units, 24)
        assert (out[f"{key}_ci_low"], out[f"{key}_ci_high"]) == (pytest.approx(expected[0]), pytest.approx(expected[1]))
    # empty answers: per-pair shares 1 (x2), 0.5 (x2), 0 (x20): SE = sd / sqrt(24), n_eff = p (1 - p) / SE^2
    se = np.array([1.0, 1.0, 0.5, 0.5] + [0.0] * 20).std(ddof=1) / math.sqrt(24)
    assert out["empty_answer_rate_stderr"] == pytest.approx(se, rel=1e-9)
    n_eff = 0.125 * 0.875 / se ** 2
    assert n_eff < 48
    wilson = _wilson_by_hand(0.125, n_eff * (student_t.ppf(0.975, 47) / student_t.ppf(0.975, 23)) ** 2, norm.ppf(0.975))
    assert (out["empty_answer_rate_ci_low"], out["empty_answer_rate_ci_high"]) == (pytest.approx(wilson[0]),
                                                                                   pytest.approx(wilson[1]))
    cons = jackknife.logit_t_interval(out["consistency"], out["consistency_stderr"], 23, 24)
    assert (out["consistency_ci_low"], out["consistency_ci_high"]) == (pytest.approx(cons[0]), pytest.approx(cons[1]))


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


def test_design_effect_and_boundary_interval_by_hand():
    # Kish's design effect: SE^2 / (p (1 - p) / n); p = 0.05, SE = 0.025, 120 units -> 0.000625 / 0.000395833 = 1.5789
    assert jackknife.design_effect(0.05, 0.025, 120) == pytest.approx(0.000625 / (0.0475 / 120))
    assert jackknife.design_effect(0.05, 0.025, 120) == pytest.approx(1.5789, abs=1e-4)
    for p, se, n in ((0.0, 0.01, 120), (1.0, 0.01, 120), (0.05, 0.0, 120), (0.05, float("nan"), 120), (0.05, 0.01, 0)):
        assert math.isnan(jackknife.design_effect(p, se, n))
    z, t19, t119 = norm.ppf(0.975), student_t.ppf(0.975, 19), student_t.ppf(0.975, 119)
    factor = (t119 / t19) ** 2
    # a share of 1 over 120 units in 20 clusters: with no borrowed design effect, Wilson-t over the 20 clusters
    assert jackknife.boundary_interval(1.0, 20, 19) == jackknife.wilson_t_interval(1.0, 20, 19)
    assert jackknife.boundary_interval(1.0, 20, 19, n_units=120, borrowed_design_effect=float("nan")) == \
        jackknife.wilson_t_interval(1.0, 20, 19)
    # borrowed design effect 1.5: Wilson with z at 120 / 1.5 x (t_119 / t_19)^2 = 80 x 0.89501 = 71.60 units:
    # [n* / (n* + z^2), 1] = [71.60 / 75.44, 1] = [0.9491, 1]
    low, high = jackknife.boundary_interval(1.0, 20, 19, n_units=120, borrowed_design_effect=1.5)
    assert low == pytest.approx(80 * factor / (80 * factor + z * z)) and high == 1.0
    assert low == pytest.approx(0.9491, abs=5e-4)
    # narrower than the clusters' [20 / (20 + t_19^2), 1] = [0.8203, 1], wider than the units' at deff 1
    assert jackknife.wilson_t_interval(1.0, 20, 19)[0] == pytest.approx(0.8203, abs=5e-4)
    at_one = jackknife.boundary_interval(1.0, 20, 19, n_units=120, borrowed_design_effect=0.7)  # deff < 1 taken as 1
    assert at_one[0] == pytest.approx(120 * factor / (120 * factor + z * z)) and at_one[0] > low
    # a rate of 0: [0, z^2 / (n* + z^2)]
    assert jackknife.boundary_interval(0.0, 20, 19, n_units=120, borrowed_design_effect=1.5) == \
        (0.0, pytest.approx(z * z / (80 * factor + z * z)))
    # the two callers route their bounds through it; inside (0, 1) the borrowed value is not used
    assert jackknife.logit_t_interval(1.0, 0.0, 19, 20, n_units=120, borrowed_design_effect=1.5) == (low, high)
    assert jackknife.effective_n_wilson_interval(1.0, 0.0, 19, 120, 20, borrowed_design_effect=1.5) == (low, high)
    assert jackknife.logit_t_interval(0.2, 0.05, 30, 31, n_units=120, borrowed_design_effect=1.5) == \
        jackknife.logit_t_interval(0.2, 0.05, 30, 31)
    assert jackknife.effective_n_wilson_interval(0.05, 0.025, 19, 120, 20, borrowed_design_effect=9.0) == \
        jackknife.effective_n_wilson_interval(0.05, 0.025, 19, 120, 20)


def test_a_category_at_a_bound_borrows_the_design_effect_of_all_pairs():
    # two categories of 25 pairs x 2 runs: Culture answers alike in every run (Cons 1), Behavior differs in
    # one run of pairs 0-4 (Cons 0.9 there). The response rates' counterpart is the next test.
    pairs = []
    for cat in ("Culture", "Behavior"):
        for i in range(25):
            for run in range(2):
                flip = cat == "Behavior" and i < 5 and run == 0
                pairs.append(stats.PairResponse(f"{cat}{i}", "a", "b" if flip else "a", 0.9, 0.9, run, cat))
    summary = stats.pair_summary(stats.pair_grid(pairs), 1, 0, 0)
    overall, culture, behavior = summary[None], summary["Culture"], summary["Behavior"]
    assert culture["consistency"] == 1.0 and behavior["consistency"] == pytest.approx(0.9)
    assert overall["consistency"] == pytest.approx(0.95) and overall["n_pair_runs"] == 100
    deff = jackknife.design_effect(overall["consistency"], overall["consistency_stderr"], overall["n_pair_runs"])
    assert stats.scope_design_effects(overall)["consistency"] == pytest.approx(deff)
    # stratified jackknife: only Behavior varies (per-pair Cons 0.5 x5, 1 x20), so its SE is the textbook SE of
    # that mean, and over all pairs (two equal strata) half of it
    x = np.array([0.5] * 5 + [1.0] * 20)
    se_behavior = x.std(ddof=1) / 5
    assert behavior["consistency_stderr"] == pytest.approx(se_behavior, rel=1e-9)
    assert overall["consistency_stderr"] == pytest.approx(se_behavior / 2, rel=1e-9)
    assert deff == pytest.approx((se_behavior / 2) ** 2 * 100 / (0.95 * 0.05))
    # Culture at Cons 1: Wilson with z at its 50 pair-runs / max(1, deff) x Korn & Graubard's factor (df 24)
    expected = jackknife.boundary_interval(1.0, 25, 24, n_units=50, borrowed_design_effect=deff)
    assert (culture["consistency_ci_low"], culture["consistency_ci_high"]) == (pytest.approx(expected[0]), 1.0)
    n_star = 50 / max(1.0, deff) * min(1.0, (student_t.ppf(0.975, 49) / student_t.ppf(0.975, 24)) ** 2)
    assert culture["consistency_ci_low"] == pytest.approx(n_star / (n_star + norm.ppf(0.975) ** 2))
    # narrower than the Wilson-t interval over Culture's 25 pairs it had before
    assert culture["consistency_ci_low"] > jackknife.wilson_t_interval(1.0, 25, 24)[0]
    # Behavior is inside (0, 1): its own logit-t interval, unchanged
    own = jackknife.logit_t_interval(0.9, behavior["consistency_stderr"], 24, 25)
    assert (behavior["consistency_ci_low"], behavior["consistency_ci_high"]) == (pytest.approx(own[0]), pytest.approx(own[1]))
    # one category only (the scope of all pairs is the category itself): nothing to borrow, Wilson-t over pairs
    alone = stats.pair_summary(stats.pair_grid([p for p in pairs if p.category == "Culture"]), 1, 0, 0)
    assert (alone["Culture"]["consistency_ci_low"], alone["Culture"]["consistency_ci_high"]) == \
        jackknife.wilson_t_interval(1.0, 25, 24)


def test_response_rates_of_a_category_at_zero_borrow_the_design_effect_of_all_pairs():
    # Culture: no invalid answer in 25 pairs x 6 responses; Behavior: 5 in two pairs (3 + 2)
    counts = {"responses": np.full(50, 6.0), "invalid": np.array([0.0] * 25 + [3.0, 2.0] + [0.0] * 23)}
    out = stats.response_rates(["Culture"] * 25 + ["Behavior"] * 25, counts, 1, 0)
    overall = out[None]
    deff = jackknife.design_effect(overall["invalid_rate"], overall["invalid_rate_stderr"], 300.0)
    assert deff > 1.5  # clustered in two pairs
    expected = jackknife.boundary_interval(0.0, 25, 24, n_units=150.0, borrowed_design_effect=deff)
    assert (out["Culture"]["invalid_rate_ci_low"], out["Culture"]["invalid_rate_ci_high"]) == \
        (0.0, pytest.approx(expected[1]))
    n_star = 150.0 / deff * min(1.0, (student_t.ppf(0.975, 149) / student_t.ppf(0.975, 24)) ** 2)
    z2 = norm.ppf(0.975) ** 2
    assert out["Culture"]["invalid_rate_ci_high"] == pytest.approx(z2 / (n_star + z2))
    # between the units' bound (deff 1) and the clusters' (every response of a pair alike)
    q2 = student_t.ppf(0.975, 24) ** 2
    assert z2 / (150 + z2) < out["Culture"]["invalid_rate_ci_high"] < q2 / (25 + q2)


def test_an_se_of_rounding_noise_is_no_variance_seen():
    # every cluster at the same share: the leave-one-out estimates are equal doubles, but their mean is not always
    # that double, so the jackknife SE is rounding noise (about 1e-17), not 0
    theta = np.full(3, 0.1)
    noise = jackknife.jackknife_stderr(theta, np.zeros(3, dtype=int))
    assert 0.0 < noise <= jackknife.NO_VARIANCE_SE
    # ... and every interval treats it as an SE of 0: the boundary interval (here Wilson-t over the 20 clusters),
    # not an effective sample size of p (1 - p) / 1e-34 -- a point interval uncapped, the 120 units capped
    for cap in (True, False):
        assert jackknife.effective_n_wilson_interval(0.1, noise, 19, 120, 20, cap_at_units=cap) == \
            jackknife.effective_n_wilson_interval(0.1, 0.0, 19, 120, 20, cap_at_units=cap) == \
            jackknife.wilson_t_interval(0.1, 20, 19)
    low, high = jackknife.effective_n_wilson_interval(0.1, noise, 19, 120, 20, cap_at_units=False)
    assert high - low > 0.2  # Wilson-t over 20 clusters at 0.1: [0.027, 0.30]
    assert jackknife.logit_t_interval(0.1, noise, 19, 20) == jackknife.logit_t_interval(0.1, 0.0, 19, 20)
    assert math.isnan(jackknife.design_effect(0.1, noise, 120))
    # with a borrowed design effect, the borrowing form, as at an SE of 0
    assert jackknife.effective_n_wilson_interval(0.1, noise, 19, 120, 20, borrowed_design_effect=1.5) == \
        jackknife.boundary_interval(0.1, 20, 19, n_units=120, borrowed_design_effect=1.5)
    # REFLECT's form takes the same threshold: the trials themselves
    from lm_eval_bias.core.bootstrap import effective_size_wilson_interval
    assert effective_size_wilson_interval(0.1, noise, 120, 19) == effective_size_wilson_interval(0.1, 0.0, 120, 19)
    # just above it, a real (tiny) SE still gives its effective size
    assert jackknife.effective_n_wilson_interval(0.1, 1e-6, 19, 120, 20, cap_at_units=False)[1] - 0.1 < 1e-4
