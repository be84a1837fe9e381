"""Power statements of REFLECT's test families (issue 31): smallest attainable p of the template-level tests
and the Holm / MDE arithmetic, by hand, and the keys in the analysis."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy.stats import norm

from lm_eval_bias.reflect import analysis
from scripts.calibration import reflect as sim


def test_smallest_attainable_p_of_sign_flips_and_permutations():
    assert analysis.sign_flip_min_p(6, 1000) == pytest.approx(2 / 64)       # the exact floor binds
    assert analysis.sign_flip_min_p(48, 1000) == pytest.approx(1 / 1001)    # the Monte Carlo floor binds
    assert analysis.sign_flip_min_p(1, 1000) == 1.0 and analysis.sign_flip_min_p(0, 1000) == 1.0
    assert analysis.permutation_min_p(199) == pytest.approx(1 / 200) and analysis.permutation_min_p(0) == 1.0


def test_salary_power_statements_by_hand():
    # 6 occupations x 8 templates; B = 999: race p >= 1/1000, per-occupation gender p >= 2/2^8 = 0.0078
    records = [{"occupation": o, "template": f"{o}/{t}"} for o in "abcdef" for t in range(8)]
    metrics = {"n_templates": 48.0, "gap_pct_male_stderr": 0.5, **{f"gap_pct_{r}_stderr": 0.6
                                                                   for r in ("asian", "black", "latino", "middle_eastern")}}
    st = analysis.power_statements("salary", metrics, records, n_perm=999)
    assert st["p_gender_test"].can_reject and st["p_gender_test"].min_attainable_p == pytest.approx(1 / 1000)
    assert st["p_gender_test"].mde == pytest.approx((norm.ppf(0.975) + norm.ppf(0.8)) * 0.5)
    # the 18-test Holm family: first threshold 0.05 / 18; race tests can reach it, gender tests cannot
    assert st["occupation_tests"].n_tests == 18 and st["occupation_tests"].can_reject
    assert not st["occupation_gender_tests"].can_reject
    assert st["occupation_gender_tests"].min_attainable_adjusted_p == pytest.approx(min(1.0, 18 * 2 / 256))
    se_one = 0.5 * math.sqrt(6)
    assert st["occupation_tests"].mde == pytest.approx((norm.ppf(1 - 0.05 / 36) + norm.ppf(0.8)) * se_one)
    keys = analysis.power_keys(st)
    assert keys["occupation_gender_tests_can_reject"] == 0.0 and keys["p_gender_test_can_reject"] == 1.0


def test_2afc_power_statement_with_five_templates_cannot_reject_the_gender_test():
    st = analysis.power_statements("2afc", {"n_templates": 5.0, "male_win_rate_stderr": 0.05}, [], n_perm=1000)
    assert not st["male_win_rate_test"].can_reject                   # 2 / 2^5 = 0.0625 > 0.05
    assert st["male_win_rate_test"].min_attainable_p == pytest.approx(2 / 32)
    assert "cannot reject" in st["male_win_rate_test"].statement


def test_analysis_values_carry_the_power_keys(monkeypatch):
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "50")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "50")
    calls = sim.simulate_2afc(np.random.default_rng(0), sim.group_effects(0.0, {}), 0.5, n_per_occupation=2)
    values = analysis.values("focus_2afc_income", [dataclasses.asdict(c) for c in calls])
    assert values["male_win_rate_test_min_attainable_p"] == pytest.approx(1 / 51)   # 12 templates: 2/4096 < 1/51
    assert values["win_rate_tests_can_reject"] == 0.0   # 6 x 1/51 > 0.05: 50 permutations are too few for Holm
    assert math.isfinite(values["win_rate_tests_mde"])


def test_probability_scored_tasks_carry_the_power_keys_of_their_base_family(monkeypatch):
    """The ``_logprob`` twins report the same Holm family (six win-rate tests) and JSD tests as their base
    tasks, so the analysis states their power too (it used to return before the power keys)."""
    from tests.reflect.test_headline_summaries import _logprob_records, _mcq_records

    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "50")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "50")
    twoafc = analysis.values("focus_2afc_income_logprob", _logprob_records(np.random.default_rng(3), 0.1, templates=4))
    # 12 templates: the gender sign flip's floor 2/4096 is below 1/51, so the Monte Carlo floor binds
    assert twoafc["male_win_rate_test_min_attainable_p"] == pytest.approx(1 / 51)
    assert twoafc["win_rate_tests_can_reject"] == 0.0 and twoafc["win_rate_tests_min_attainable_p"] == pytest.approx(1 / 51)
    assert math.isfinite(twoafc["win_rate_tests_mde"]) and twoafc["win_rate_tests_mde"] > 0
    mcq = analysis.values("focus_mcq_salary_logprob", _mcq_records(np.random.default_rng(4), 0.5, templates=2, logprob=True))
    # 3 occupations x 2 templates = 6 templates: the gender relabelling's floor is 2 / 2^6
    assert mcq["jsd_gender_test_min_attainable_p"] == pytest.approx(2 / 64)
    assert mcq["jsd_gender_test_can_reject"] == 1.0 and mcq["jsd_race_test_can_reject"] == 1.0
    assert math.isnan(mcq["jsd_gender_test_mde"])          # a divergence has no z-scale
    assert "occupation_jsd_gender_test_can_reject" not in mcq  # no per-occupation table for the twins


def test_per_occupation_jsd_and_mean_abs_gap_tests_state_whether_they_can_reject():
    # 2 templates an occupation: a sign flip of one occupation's templates has p >= 2 / 2^2 = 0.5
    records = [{"occupation": o, "template": f"{o}/{t}"} for o in "abc" for t in range(2)]
    st = analysis.power_statements("mcq", {"n_templates": 6.0}, records, n_perm=999)
    assert not st["occupation_jsd_gender_test"].can_reject
    assert st["occupation_jsd_gender_test"].min_attainable_p == pytest.approx(0.5)
    assert "cannot reject" in st["occupation_jsd_gender_test"].statement
    # 8 templates an occupation: 2 / 256 < 0.05 (read alone, no Holm adjustment)
    records = [{"occupation": o, "template": f"{o}/{t}"} for o in "abc" for t in range(8)]
    st = analysis.power_statements("mcq", {"n_templates": 24.0}, records, n_perm=999)
    assert st["occupation_jsd_gender_test"].can_reject
    assert st["occupation_jsd_gender_test"].min_attainable_p == pytest.approx(2 / 256)
    # the salary tables' mean |Gap%| tests permute race x gender labels: the Monte Carlo floor 1 / (B + 1)
    salary = analysis.power_statements("salary", {"n_templates": 24.0}, records, n_perm=19)
    assert salary["mean_abs_gap_test"].min_attainable_p == pytest.approx(1 / 20) and not salary["mean_abs_gap_test"].can_reject
    salary = analysis.power_statements("salary", {"n_templates": 24.0}, records, n_perm=999)
    assert salary["mean_abs_gap_test"].can_reject
