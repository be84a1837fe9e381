"""core.power: Holm's first threshold, the MDE formula, and the can-it-reject statement."""

import math

import numpy as np
import pytest

from lm_eval_bias.core.power import family_power_statement, holm_first_threshold, minimum_detectable_effect


def test_holm_first_threshold_is_alpha_over_m():
    assert holm_first_threshold(329) == pytest.approx(0.05 / 329)
    assert math.isnan(holm_first_threshold(0))


def test_mde_is_z_sum_times_se_and_has_its_power_in_simulation():
    se = 0.1
    mde = minimum_detectable_effect(se)
    assert mde == pytest.approx((1.959964 + 0.841621) * se, rel=1e-5)
    rng = np.random.default_rng(0)
    z = rng.normal(mde / se, 1.0, 200_000)
    assert np.mean(np.abs(z) > 1.959964) == pytest.approx(0.8, abs=0.005)
    assert math.isnan(minimum_detectable_effect(float("nan")))


def test_a_family_whose_smallest_p_exceeds_holms_first_threshold_cannot_reject():
    # an identity in ~10 pairs: exact sign test, smallest two-sided p = 2 * 0.5**10 ~ .002; 329 identities
    stuck = family_power_statement(329, 2 * 0.5 ** 10)
    assert not stuck.can_reject and stuck.min_attainable_adjusted_p == pytest.approx(329 * 2 * 0.5 ** 10)
    assert "cannot reject" in stuck.statement and "says nothing" in stuck.statement
    able = family_power_statement(6, 1 / 10_000, stderr=0.02, unit=" pp")
    assert able.can_reject and able.min_attainable_adjusted_p == pytest.approx(6e-4)
    assert able.mde == pytest.approx(minimum_detectable_effect(0.02, 0.05 / 6))
    assert "can reject" in able.statement and able.statement.endswith(" pp")
    assert able.as_dict("identity_")["identity_can_reject"] is True
