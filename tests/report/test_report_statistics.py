"""The report's statistics, generically for every benchmark: one interval method (the task's own
``_ci_low`` / ``_ci_high``; no ± 1.96 SE; resampling only for results of older versions), no 0-width
interval from too few clusters, null floors / p_null / chance / Holm / variants beside their metric,
derived keys folded into their metric's row, the multiplicity statement and the glossary's suffixes."""

from __future__ import annotations

import math

import pytest

from lm_eval_bias.report.card import multiplicity_statement
from lm_eval_bias.report.glossary import lookup
from lm_eval_bias.report.intervals import FALLBACK_METHOD, TASK_METHOD, interval, key_table, metric
from lm_eval_bias.report.runs import TaskRun

TASK = "focus_2afc_income"
METRICS = {
    "polarization": 0.20, "polarization_stderr": 0.05, "polarization_ci_low": 0.11, "polarization_ci_high": 0.31,
    "polarization_null": 0.08, "polarization_p_null": 0.004,
    "jsd_male": 0.01, "jsd_male_stderr": 0.02,  # an older file: SE only (± 1.96 SE would go below 0)
    "p_race": 0.02, "p_race_paper": 0.001, "p_occupation_nurse": 0.03, "p_occupation_nurse_holm": 0.09,
    "male_win_rate": 0.5, "male_win_rate_ci_low": math.nan, "male_win_rate_ci_high": math.nan,
    "n_templates": 8.0,
}


def run_of(metrics: dict, records=None) -> TaskRun:
    return TaskRun(TASK, dict(metrics), records, None, [])


def test_the_tasks_own_interval_is_used_and_se_is_never_widened_into_one():
    run = run_of(METRICS)
    ci = interval(run, "polarization")
    assert (ci.low, ci.high, ci.method) == (0.11, 0.31, TASK_METHOD)
    jsd = interval(run, "jsd_male")  # no ± 1.96 SE (it would be [−0.03, 0.05] for a JSD ≥ 0)
    assert not jsd.ok and jsd.reason == "no interval: none from the task"
    older = run_of({"jsd_male": 0.01, "jsd_male_stderr": 0.02})  # an older results file, no samples
    assert interval(older, "jsd_male").reason == "no interval: no samples"
    assert interval(run, "male_win_rate").reason == "no interval: undefined in resamples"
    for key, reason in (("p_race", "p-value"), ("polarization_p_null", "p-value"), ("polarization_null", "null floor"),
                        ("n_templates", "count")):
        assert interval(run, key).reason == f"no interval: {reason}", key


def test_too_few_clusters_never_give_a_zero_width_interval():
    one = {**METRICS, "n_templates": 1.0, "polarization_ci_low": 0.2, "polarization_ci_high": 0.2}
    assert interval(run_of(one), "polarization").reason == "no interval: too few clusters"
    nan = {**one, "polarization_ci_low": math.nan, "polarization_ci_high": math.nan}
    assert interval(run_of(nan), "polarization").reason == "no interval: too few clusters"
    clusters = {"consistency": 0.9, "consistency_ci_low": 0.9, "consistency_ci_high": 0.9, "n_pairs": 1.0}
    assert interval(TaskRun("cf_vqa", clusters, None, None, []), "consistency").reason == "no interval: too few clusters"


def test_companions_and_variants_are_shown_beside_the_metric():
    run = run_of(METRICS)
    html = metric("reflect", run, "polarization").html()
    assert "null floor 0.08" in html and "p(more than chance) 0.004" in html and "[0.11, 0.31]" in html
    assert "paper&#x27;s procedure" in metric("reflect", run, "p_race_paper").html()
    assert "Holm 0.090" in metric("reflect", run, "p_occupation_nurse").html()
    table = key_table(run)
    assert not any(k.endswith(("_stderr", "_ci_low", "_ci_high", "_null", "_p_null", "_holm")) for k in table.index)
    assert table.loc["polarization", "null"] == 0.08 and table.loc["polarization", "p_null"] == 0.004
    assert table.loc["p_occupation_nurse", "p_holm"] == 0.09
    assert "paper" in table.loc["p_race_paper", "variant"] and table.loc["p_race", "variant"] == ""


def test_multiplicity_statement_names_the_holm_families():
    text = multiplicity_statement([run_of(METRICS)])
    assert "p_occupation_nurse" in text and "Holm" in text and "not adjusted" in text
    assert "across tasks or benchmarks" in text
    assert "No test family" in multiplicity_statement([run_of({"polarization": 0.2})])


def test_glossary_explains_every_suffix_through_its_metric():
    fallback = lookup("reflect", "no such key")[0]
    for key in ("polarization_null", "polarization_p_null", "polarization_ci_low", "p_race_paper", "jsd_male_stderr",
                "s_fact_authors", "consistency_holm"):
        benchmark = "cf_vqa" if key.startswith("consistency") else "fact_or_fair" if key.startswith("s_") else "reflect"
        definition, doc = lookup(benchmark, key)
        assert definition != fallback and doc.endswith(".md"), key
    assert "null floor" in lookup("reflect", "polarization_null")[0]
    assert "paper's own procedure" in lookup("reflect", "p_race_paper")[0]
    assert lookup("fact_or_fair", "representativeness_rate_chance")[0].startswith("chance level")


def test_results_of_older_versions_get_the_tasks_own_interval_recomputed_from_the_samples(monkeypatch):
    """No record resampling by the report (its percentile interval of the plug-in covered 0-31 % in
    simulation): the task's current aggregation runs once on the logged samples and its own interval is
    shown when it recomputes the file's value; a changed value gets none, with the reason."""
    from tests.core.test_paired_comparison import twoafc_records

    from lm_eval_bias import samples

    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "60")
    records = twoafc_records(0.8, 1)
    current = samples.result_values(TASK, records)
    estimate = current["male_win_rate"]
    run = run_of({"male_win_rate": estimate, "n_templates": 12.0}, records)  # no _ci keys: an older results file
    ci = interval(run, "male_win_rate")
    assert ci.ok and ci.method.startswith(FALLBACK_METHOD) and "templates resampled within occupation" in ci.method
    # exactly the task's own interval of the current version, not a report-made one
    assert (ci.low, ci.high) == (current["male_win_rate_ci_low"], current["male_win_rate_ci_high"])
    assert ci.low < estimate < ci.high
    changed = run_of({"male_win_rate": estimate + 0.01, "n_templates": 12.0}, records)
    assert interval(changed, "male_win_rate").reason == "no interval: older results file"
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "0")
    assert interval(run_of({"male_win_rate": 0.8}, records), "male_win_rate").reason == "no interval: bootstrap off"


@pytest.mark.parametrize("key", ["polarization", "jsd_male"])
def test_leaderboard_json_entry_has_the_companions(key):
    from lm_eval_bias.report.intervals import companions

    c = companions(run_of(METRICS), key)
    assert (c.null == 0.08) if key == "polarization" else math.isnan(c.null)


def test_fact_or_fair_d_says_it_is_the_projection_and_the_other_scores_test_inversion():
    """d's interval goes with distance_debiased and is named for what it is (the projection of S_fact's and
    S_E's intervals); S_E's with s_e_debiased keeps the test-inversion method; the plug-ins get none."""
    from lm_eval_bias.report.intervals import DISTANCE_METHOD, POPULATION_METHOD

    run = TaskRun("fact_or_fair_objective_race", {
        "s_e": 0.55, "s_e_debiased": 0.80, "s_e_ci_low": 0.70, "s_e_ci_high": 0.90,
        "distance": 0.49, "distance_debiased": 0.27, "distance_ci_low": 0.15, "distance_ci_high": 0.36}, None, None, [])
    d = interval(run, "distance_debiased")
    assert (d.low, d.high, d.method) == (0.15, 0.36, DISTANCE_METHOD)
    e = interval(run, "s_e_debiased")
    assert (e.low, e.high, e.method) == (0.70, 0.90, POPULATION_METHOD)
    assert interval(run, "distance").reason == "no interval: plug-in magnitude"
