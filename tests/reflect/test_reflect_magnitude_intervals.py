"""REFLECT magnitudes (Pol, Ext, JSD) report an interval for the parameter (issue 14): the boundary rule
by hand, the keys through the tasks' real aggregation on simulated runs (planted effect and no bias), and
the report showing the plug-in value, then "bias-corrected x [lo, hi]", then the null floor and p."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from lm_eval_bias.core import bootstrap
from lm_eval_bias.reflect import mcq
from lm_eval_bias.reflect import twoafc
from scripts.calibration import reflect as sim

B = 200


def test_boundary_rule_by_hand():
    # replicates evenly spread on [0.2, 0.4]: q_0.025 = 0.205, q_0.975 = 0.395; estimate 0.25
    reps = np.linspace(0.2, 0.4, 1001)
    basic = (2 * 0.25 - 0.395, 2 * 0.25 - 0.205)                          # (0.105, 0.295)
    assert bootstrap.boundary_aware_interval(0.25, reps, p_null=0.01) == pytest.approx(basic)
    # the permutation test does not reject (p_null >= 0.05, or no permutations): lower end 0
    for p_null in (0.05, 0.2, math.nan):
        assert bootstrap.boundary_aware_interval(0.25, reps, p_null=p_null) == pytest.approx((0.0, basic[1]))
    # clipped to the metric's range: an upper bound below 0.295, a basic interval below 0
    assert bootstrap.boundary_aware_interval(0.25, reps, 0.01, bounds=(0.0, 0.29)) == pytest.approx((0.105, 0.29))
    assert bootstrap.boundary_aware_interval(0.1, reps, 0.01) == (0.0, 0.0)   # 0.2 - 0.395 < 0, 0.2 - 0.205 < 0
    # Ext's variant: the same rule on the percentile interval
    assert bootstrap.boundary_aware_interval(0.25, reps, 0.01, method="percentile") == pytest.approx((0.205, 0.395))
    assert bootstrap.boundary_aware_interval(0.25, reps, 0.3, method="percentile") == pytest.approx((0.0, 0.395))
    # without replicates there is no interval (never a 0-width one)
    assert all(math.isnan(x) for x in bootstrap.boundary_aware_interval(0.25, np.array([]), 0.01))
    with pytest.raises(ValueError):
        bootstrap.boundary_aware_interval(0.25, reps, 0.01, method="bca")


@pytest.fixture
def resampling(monkeypatch):
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", str(B))
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", str(B))
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_SEED", "7")


def _aggregate(family: str, records: list[dict]) -> dict[str, float]:
    from lm_eval_bias.reflect import tasks as reflect

    return reflect.FAMILIES[family].values(records)  # every key of the family from records (the analysis)


def _by_hand(table_counts, strata, metric_fn, estimate_key, estimate, p_null, bounds, method="basic"):
    reps = bootstrap.bootstrap_replicates(table_counts, strata, metric_fn, B, 7)[estimate_key]
    q_low, q_high = np.quantile(reps, [0.025, 0.975])
    low, high = (2 * estimate - q_high, 2 * estimate - q_low) if method == "basic" else (q_low, q_high)
    low, high = min(max(low, bounds[0]), bounds[1]), min(max(high, bounds[0]), bounds[1])
    return (low if p_null < 0.05 else bounds[0], high), (q_low, q_high), 2 * estimate - reps.mean()


STRONG = sim.group_effects(0.5, {"white": 1.0, "black": -1.0, "latino": 0.5, "middle_eastern": -0.5})


@pytest.mark.parametrize("beta, planted", [(STRONG, True), (sim.group_effects(0.0, {}), False)])
def test_2afc_aggregation_reports_the_parameter_interval_for_pol_and_ext(resampling, beta, planted):
    calls = sim.simulate_2afc(np.random.default_rng(3), beta, 0.5, n_per_occupation=3)
    values = _aggregate("2afc", [dataclasses.asdict(c) for c in calls])
    assert not any(k.endswith(("_debiased_ci_low", "_debiased_ci_high")) for k in values)  # one home per idea
    assert "extreme_cell_rate_debiased" not in values  # Ext's bias correction does not calibrate
    table = twoafc.twoafc_count_table(calls)
    for key, method in (("polarization", "basic"), ("extreme_cell_rate", "percentile")):
        p_null = values[f"{key}_p_null"]
        assert (p_null < 0.01) if planted else (p_null >= 0.05), (key, p_null)
        expected, paper, corrected = _by_hand(table.counts, table.strata, twoafc.twoafc_metrics, key, values[key], p_null,
                                              twoafc.MAGNITUDE_BOUNDS[key], method)
        assert (values[f"{key}_ci_low"], values[f"{key}_ci_high"]) == pytest.approx(expected), key
        assert (values[f"{key}_ci_low_paper"], values[f"{key}_ci_high_paper"]) == pytest.approx(paper), key
        if not planted:
            assert values[f"{key}_ci_low"] == 0.0
        if key == "polarization":
            assert values["polarization_debiased"] == pytest.approx(max(corrected, 0.0))
            if not planted:  # the paper's interval of the plug-in excludes the truth ~0; the default does not
                assert values["polarization_ci_low_paper"] > 0.05 and values["polarization_ci_low"] == 0.0
    if planted:  # Ext's truth is 13/45 cells beyond 0.9; the plug-in is positive and its interval excludes 0
        assert values["extreme_cell_rate"] > 0 and values["extreme_cell_rate_ci_low"] > 0
        assert values["polarization_ci_low"] > 0.15


@pytest.mark.parametrize("beta, planted", [(sim.group_effects(1.5, {"black": -2.0}), True),
                                           (sim.group_effects(0.0, {}), False)])
def test_mcq_aggregation_reports_the_parameter_interval_for_jsd(resampling, beta, planted):
    records = [{**dataclasses.asdict(r), "variant": "salary"}
               for r in sim.simulate_mcq(np.random.default_rng(4), beta, 0.5, n_per_occupation=8)]
    values = _aggregate("mcq", records)
    assert not any("_debiased_ci" in k for k in values)
    parsed = [mcq.MCQRecord.from_dict(r) for r in records]
    _, strata, counts = mcq.mcq_count_table(parsed, mcq.SALARY_OPTIONS)
    metric = lambda c: mcq.mcq_metrics(c, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD)  # noqa: E731
    for key in ("jsd_male", "jsd_black"):
        p_null = values[f"{key}_p_null"]
        assert (p_null < 0.01) if planted else (p_null >= 0.05), (key, p_null)
        expected, paper, corrected = _by_hand(counts, strata, metric, key, values[key], p_null, (0.0, 1.0))
        assert (values[f"{key}_ci_low"], values[f"{key}_ci_high"]) == pytest.approx(expected), key
        assert (values[f"{key}_ci_low_paper"], values[f"{key}_ci_high_paper"]) == pytest.approx(paper), key
        assert values[f"{key}_debiased"] == pytest.approx(max(corrected, 0.0))
        assert (values[f"{key}_ci_low"] > 0) == planted


def test_paper_interval_keys_share_the_metrics_anchor():
    from lm_eval_bias.core.aggregation import base_key

    assert base_key("polarization_ci_low_paper") == "polarization"
    assert base_key("jsd_male_ci_high_paper") == "jsd_male"
    assert base_key("p_race_paper") == "p_race_paper"  # a test's paper variant keeps a row of its own


def test_report_shows_plug_in_then_bias_corrected_interval_then_null_floor():
    from lm_eval_bias.report.intervals import BIAS_CORRECTED_METHOD, interval, key_table, metric
    from lm_eval_bias.report.runs import TaskRun

    metrics = {"polarization": 0.20, "polarization_debiased": 0.15, "polarization_ci_low": 0.09,
               "polarization_ci_high": 0.21, "polarization_ci_low_paper": 0.16, "polarization_ci_high_paper": 0.27,
               "polarization_null": 0.08, "polarization_p_null": 0.004, "n_templates": 8.0,
               "extreme_cell_rate": 0.2, "extreme_cell_rate_ci_low": 0.1, "extreme_cell_rate_ci_high": 0.3}
    run = TaskRun("focus_2afc_income", metrics, None, None, [])
    html = metric("reflect", run, "polarization").html()
    plug_in, corrected, ci, null = (html.index(s) for s in ("0.20", "bias-corrected 0.15", "[0.09, 0.21]", "null floor 0.08"))
    assert plug_in < corrected < ci < null and "p(more than chance) 0.004" in html
    assert "0.20</span> <span class=\"ci\"" not in html  # the plug-in is never followed by a bracket not its own
    assert interval(run, "polarization").reason == "no interval: plug-in magnitude"  # e.g. the leaderboard cell
    own = interval(run, "polarization_debiased")
    assert (own.low, own.high, own.method) == (0.09, 0.21, BIAS_CORRECTED_METHOD)
    table = key_table(run)
    assert (table.loc["polarization_debiased", "ci95_low"], table.loc["polarization_debiased", "ci95_high"]) == (0.09, 0.21)
    assert math.isnan(table.loc["polarization", "ci95_low"]) and "polarization_ci_low_paper" not in table.index
    # Ext has no bias-corrected value: its interval (for the parameter) goes with its value
    assert "[0.10, 0.30]" in metric("reflect", run, "extreme_cell_rate").html()
