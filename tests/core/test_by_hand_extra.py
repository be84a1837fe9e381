"""Shared statistics of docs/statistics.md that had no hand-computed check ("Checked by hand" table):
the permutation p-value and null floor, the bootstrap bias correction and the paired comparison of two
models. Pure numpy functions on hand-made replicates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lm_eval_bias.core.bootstrap import bias_corrected, permutation_null
from lm_eval_bias.core.paired import paired_difference


def test_permutation_null_floor_and_p_by_hand():
    # one-sided "more than chance": observed 0.3 against null draws (0.1, 0.3, 0.5, 0.2, NaN): the NaN is
    # ignored; floor = mean(0.1, 0.3, 0.5, 0.2) = 0.275; 2 draws >= 0.3 (a tie counts against the
    # observation) -> p = (1 + 2) / (1 + 4) = 3/5
    res = permutation_null(0.3, np.array([0.1, 0.3, 0.5, 0.2, np.nan]))
    assert res.null_mean == pytest.approx(0.275) and res.p_value == pytest.approx(3 / 5) and res.n_permutations == 4
    # two-sided around a centre (a win rate against 0.5): |0.8 - 0.5| = 0.3 vs |null - 0.5| = 0, 0.3, 0.1,
    # 0.4 -> 2 as extreme -> p = 3/5; the floor stays the mean of the raw draws, 0.55
    res = permutation_null(0.8, np.array([0.5, 0.2, 0.6, 0.9]), centre=0.5)
    assert res.p_value == pytest.approx(3 / 5) and res.null_mean == pytest.approx(0.55)
    # the smallest attainable p is 1 / (B + 1)
    assert permutation_null(1.0, np.zeros(99)).p_value == pytest.approx(1 / 100)
    assert math.isnan(permutation_null(0.3, np.array([])).p_value)


def test_bias_corrected_estimate_and_basic_interval_by_hand():
    # replicates 1..5 (mean 3; numpy's linear quantiles q2.5 = 1.1, q97.5 = 4.9), estimate 2.5:
    # corrected 2 x 2.5 - 3 = 2.0; basic interval [5 - 4.9, 5 - 1.1] = [0.1, 3.9]; clipped to [0.5, 3]
    reps = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert bias_corrected(2.5, reps) == pytest.approx((2.0, 0.1, 3.9))
    assert bias_corrected(2.5, reps, bounds=(0.5, 3.0)) == pytest.approx((2.0, 0.5, 3.0))
    assert all(math.isnan(x) for x in bias_corrected(2.5, np.array([1.0])))


def test_paired_difference_by_hand():
    # d_hat = 0.6 - 0.5 = 0.1; replicate differences d* = 0.1 + dev, dev = -0.2 .. 0.25 in steps of 0.05, twice
    # (20 draws). p = (1 + #{|d* - d_hat| >= |d_hat|}) / (B + 1): |dev| >= 0.1 for -0.2, -0.15, -0.1, 0.1, 0.15,
    # 0.2, 0.25 -> 14 of 20 -> p = 15/21. SE = SD(dev, ddof 1).
    dev = np.tile(np.round(np.arange(-0.2, 0.2501, 0.05), 10), 2)
    plain = paired_difference(0.6, 0.5, 0.6 + dev, np.full(20, 0.5), n_clusters=40, method="percentile")
    assert plain.estimate == pytest.approx(0.1)
    assert plain.p_value == pytest.approx(15 / 21) and plain.n_replicates == 20
    assert plain.stderr == pytest.approx(np.std(dev, ddof=1))
    assert (plain.ci_low, plain.ci_high) == pytest.approx(tuple(0.1 + np.quantile(dev, [0.025, 0.975])))
    # small-sample rescaling with n = 4 clusters in H = 2 strata: deviations x sqrt(4 / 2); |dev| x 1.414 >= 0.1
    # still for the same 14 draws (0.05 x 1.414 = 0.071 < 0.1)
    rescaled = paired_difference(0.6, 0.5, 0.6 + dev, np.full(20, 0.5), n_clusters=4, n_strata=2, method="percentile")
    assert rescaled.stderr == pytest.approx(math.sqrt(2) * np.std(dev, ddof=1))
    assert rescaled.p_value == pytest.approx(15 / 21)
