"""REFLECT statistics that hold their level (issue 14): planted effects and nulls with known truth.

Simulators are those of ``scripts/calibration/reflect.py`` (portrait / template effects included), at
reduced sizes so that the file runs in seconds; the full calibration table is in docs/reflect.md.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from lm_eval_bias.core import bootstrap
from lm_eval_bias.reflect import mcq
from lm_eval_bias.reflect import salary
from lm_eval_bias.reflect import twoafc
from scripts.calibration import reflect as sim

NO_BIAS = sim.group_effects(0.0, {})


def test_rescaled_bootstrap_matches_the_unbiased_between_template_variance():
    # one stratum of m = 4 templates: Var*(sum) = m s^2 (Rao-Wu), not (m-1)/m of it (plain bootstrap)
    x = np.array([1.0, 3.0, 4.0, 8.0])
    target = len(x) * np.var(x, ddof=1)
    rescaled = bootstrap.rescaled_bootstrap_weights(["a"] * 4, 40_000, seed=0) @ x
    plain = bootstrap.cluster_bootstrap_weights(["a"] * 4, 40_000, seed=0) @ x
    assert np.var(rescaled) == pytest.approx(target, rel=0.03)
    assert np.var(plain) == pytest.approx(target * 3 / 4, rel=0.03)
    w = bootstrap.rescaled_bootstrap_weights(["a"] * 3 + ["b"] * 5, 100, seed=1)
    assert np.allclose(w[:, :3].sum(axis=1), 3) and np.allclose(w[:, 3:].sum(axis=1), 5)


def test_one_template_per_occupation_gives_nan_intervals_and_a_warning(caplog):
    calls = sim.simulate_2afc(np.random.default_rng(0), NO_BIAS, 0.5, n_per_occupation=1)
    with caplog.at_level(logging.WARNING, logger="lm_eval_bias"):
        s = twoafc.twoafc_summary(calls, n_boot=50, seed=0, n_null=50)
    assert any("fewer than two templates" in r.getMessage() for r in caplog.records)
    for key in ("male_win_rate", "polarization", "retained_rate"):
        assert math.isnan(s.stderr[key]) and math.isnan(s.ci_low[key]) and math.isnan(s.ci_high[key])
    for key in ("polarization", "extreme_cell_rate"):  # the default and the paper's interval of each magnitude
        assert math.isnan(s.ci_low[key]) and math.isnan(s.derived[f"{key}_ci_low_paper"])
    assert math.isnan(s.derived["polarization_debiased"])
    assert s.derived["n_templates"] == 6 and s.derived["n_occupations"] == 6 and s.derived["n_groups"] == 10
    assert math.isfinite(s.derived["polarization_null"])  # the permutation null needs no second template


def test_twoafc_null_floor_and_win_rate_tests_no_bias_vs_planted():
    null = twoafc.twoafc_summary(sim.simulate_2afc(np.random.default_rng(1), NO_BIAS, 0.5, 2), n_boot=100, seed=0,
                                 n_null=400)
    d = null.derived
    assert d["polarization_null"] > 0.05 and null.estimates["polarization"] > 0.05  # Pol is positive without bias
    assert d["polarization_p_null"] > 0.05
    assert min(d[f"p_{k}_holm"] for k in twoafc.WIN_RATE_KEYS) > 0.05
    assert all(d[f"p_{k}_holm"] >= d[f"p_{k}"] for k in twoafc.WIN_RATE_KEYS)
    assert (d["n_templates"], d["n_occupations"], d["n_groups"]) == (12, 6, 10)
    planted = sim.group_effects(0.8, {"white": 0.8, "black": -0.8})
    biased = twoafc.twoafc_summary(sim.simulate_2afc(np.random.default_rng(1), planted, 0.5, 2), n_boot=100, seed=0,
                                   n_null=400)
    d = biased.derived
    assert d["polarization_p_null"] < 0.01 and biased.estimates["polarization"] > d["polarization_null"] + 0.1
    assert d["p_male_win_rate"] < 0.01 and d["p_win_rate_white"] < 0.01  # floor: 1 / (n_null + 1)
    assert d["p_male_win_rate_holm"] < 0.05 and d["p_win_rate_white_holm"] < 0.05
    assert d["polarization_debiased"] < biased.estimates["polarization"]


def test_mcq_jsd_null_floor_no_bias_vs_planted():
    opts, values = mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD
    null = mcq.mcq_summary(sim.simulate_mcq(np.random.default_rng(2), NO_BIAS, 0.5, 4), opts, values, n_boot=100,
                           seed=0, n_null=400)
    assert null.derived["jsd_male_null"] > 0 and null.estimates["jsd_male"] > 0
    assert null.derived["jsd_male_p_null"] > 0.05 and null.derived["jsd_black_p_null"] > 0.05
    assert null.derived["n_templates"] == 24
    planted = sim.group_effects(1.5, {"black": -2.0})
    biased = mcq.mcq_summary(sim.simulate_mcq(np.random.default_rng(2), planted, 0.5, 8), opts, values, n_boot=100,
                             seed=0, n_null=400)
    assert biased.derived["jsd_male_p_null"] < 0.01 and biased.derived["jsd_black_p_null"] < 0.01
    assert 0 <= biased.derived["jsd_male_debiased"] <= biased.estimates["jsd_male"]


def test_mcq_jsd_test_randomises_its_ties_so_six_templates_can_reach_below_one_in_64():
    """At 6 templates a template's genders are swapped or not: 2^6 = 64 relabellings, each drawn ~n_null / 64
    times, so the observation ties with ~1/64 of its null. Counting those ties against it, the most extreme of
    the 64 relabelled data sets could never get p below (1 + n_null / 64) / (1 + n_null) ~ 1/64 and the test's
    level was a multiple of 1/64 under 5 % (2.9-4.8 % in the calibration); randomised over the ties (one U per
    key) that data set's p is U / 64 on average, and the level is 5 %."""
    from lm_eval_bias.reflect.schema import GROUPS

    opts, values = mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD
    occupations, per = sim.DESIGNS[6]
    records = sim.simulate_mcq(np.random.default_rng(5), NO_BIAS, 0.5, per, 0.6, occupations)
    _, strata, counts = mcq.mcq_count_table(records, opts)
    answers = counts["answers"]
    partner = [next(h for h, o in enumerate(GROUPS) if o.race == g.race and o.gender != g.gender) for g in GROUPS]
    T = answers.shape[0]
    orbit = [np.stack([answers[t][partner] if (bits >> t) & 1 else answers[t] for t in range(T)])
             for bits in range(2 ** T)]
    jsd = [mcq.jsd_batch(a.sum(0)[None])["jsd_male"][0] for a in orbit]
    assert len(np.unique(np.round(jsd, 12))) == 64  # 64 distinct values: ties come only from repeated draws
    top = orbit[int(np.argmax(jsd))]  # the most extreme relabelling: its rank is 1 of 64
    estimates = mcq.mcq_metrics({"answers": top.sum(0), **{k: v.sum(0) for k, v in counts.items() if k != "answers"}},
                                opts, values)
    n_null = 640
    p = np.array([mcq.mcq_inference(top, estimates, {}, strata, n_null, null_seed)["jsd_male_p_null"]
                  for null_seed in range(40)])
    ties_against = (1 + n_null / 64) / (1 + n_null)  # ~0.0172: the old p of the top rank, about
    assert p.max() <= 1.6 * ties_against and p.min() < 0.3 * ties_against
    assert np.mean(p) == pytest.approx(ties_against / 2, rel=0.2)  # U (1 + ties) / (1 + B), E[U] = 1/2


def _salary(seed: int, beta, portrait_sd: float) -> list:
    return [r for r in sim.simulate_salary(np.random.default_rng([seed, 11]), beta, portrait_sd, n_per_occupation=6,
                                           n_bios=20) if r.occupation in ("ceo", "nurse")]


def test_portrait_effects_make_the_paper_test_over_reject_but_not_the_default():
    paper, default = [], []
    for s in range(10):
        records = _salary(s, NO_BIAS, 0.06)
        paper.append(salary.cluster_robust_tests(records)["p_race_paper"] < 0.05)
        default.append(salary.portrait_permutation_tests(records, 200, s)["p_race"] < 0.05)
    assert sum(paper) >= 7 and sum(default) <= 3


def test_salary_tests_detect_a_planted_effect_and_holm_the_occupation_family():
    beta = sim.group_effects(0.08, {"black": -0.10})
    records = _salary(0, beta, 0.01)
    s = salary.salary_summary(records, n_boot=100, seed=0, n_null=300)
    assert s.tests["p_race"] < 0.01 and s.tests["p_gender"] < 0.01
    assert s.tests["p_race_paper"] < 0.01
    by = s.tests_by_occupation.set_index("occupation")
    assert list(by.index) == ["ceo", "nurse", "pooled"]
    per_occ = by.loc[["ceo", "nurse"]]
    for key in salary.TEST_KEYS:
        assert (per_occ[f"{key}_holm"] >= per_occ[key]).all()
    assert s.derived == {"n_templates": 12.0, "n_occupations": 2.0, "n_groups": 10.0, "n_biographies": 40.0}
    truth = sim.truth_salary(beta)["gap_pct_black"]
    assert s.ci_low["gap_pct_black"] < truth < s.ci_high["gap_pct_black"] < 0


def test_task_keys_carry_intervals_nulls_tests_and_counts():
    from lm_eval_bias.reflect import tasks as reflect

    keys = reflect.FAMILIES["2afc"].keys
    for key in ("male_win_rate_ci_low", "polarization_ci_high", "polarization_null", "polarization_p_null",
                "polarization_debiased", "p_win_rate_white_holm", "n_templates", "n_groups"):
        assert key in keys, key
    assert {"p_race", "p_race_paper", "gap_pct_male_ci_low", "n_biographies"} <= set(reflect.FAMILIES["salary"].keys)
    assert {"polarization_ci_low_paper", "extreme_cell_rate_ci_high_paper", "extreme_cell_rate_ci_low"} <= set(keys)
    assert not {"polarization_debiased_ci_low", "polarization_debiased_ci_high"} & set(keys)
    mcq_keys = set(reflect.FAMILIES["mcq_logprob"].keys)
    assert {"jsd_male_null", "jsd_male_p_null", "jsd_male_debiased", "jsd_male_ci_low", "jsd_male_ci_low_paper"} <= mcq_keys
    assert "jsd_male_debiased_ci_low" not in mcq_keys


def test_calibration_module_rows_quick():
    from scripts.calibration import ROW_FIELDS

    rows = sim.run_2afc(2, 20, designs=(6,))
    assert rows and all(set(r) == set(ROW_FIELDS) for r in rows)
    roles = {(r["quantity"], r["dgp"][:8]): r["role"] for r in rows}
    assert roles[("polarization", "no bias;")] == "default"
    assert roles[("polarization_ci_low_paper/_ci_high_paper", "no bias;")] == "paper"
    assert roles[("any of 6 win-rate tests, raw p < 0.05", "no bias;")] == "diagnostic"
    assert any(r["quantity"].startswith("extreme_cell_rate_ci_low_paper") and r["dgp"].startswith("strong")
               and r["truth"] > 0.2 for r in rows)
    # Ext has no default interval and no test (a step function of the cells): only its null floor and the paper's
    assert not any(r["quantity"] in ("extreme_cell_rate", "extreme_cell_rate_p_null") and r["kind"] != "null_floor"
                   for r in rows)
    assert {r["quantity"] for r in rows if r["kind"] == "test" and r["role"] == "default"} >= {
        f"p_{k}" for k in twoafc.WIN_RATE_KEYS}
    assert any(r["dgp"].startswith("Pol 0.15") and abs(r["truth"] - 0.15) < 0.005 for r in rows if r["quantity"] == "polarization")
    salary_rows = sim.run_salary(2, 20, 2, 4, nulls=((0.0, 0.05),), coverage=False)
    assert any("template-specific gender effect sd 5%" in r["dgp"] for r in salary_rows)
    assert {r["role"] for r in salary_rows if r["quantity"].endswith("_paper")} == {"paper"}
    assert {r["role"] for r in salary_rows if "raw p" in r["quantity"]} == {"diagnostic"}


def test_calibration_test_rows_run_more_seeds_than_interval_rows_and_their_p_values_ignore_the_bootstrap():
    """The test rows of the null models run TEST_SEED_FACTOR x the seeds, the extra seeds without the bootstrap:
    valid only because a test's p-value comes from its own permutation stream, whatever n_boot is."""
    occupations, per = sim.DESIGNS[6]
    for s in range(3):
        calls = sim.simulate_2afc(np.random.default_rng([s, 1]), NO_BIAS, 0.5, per, 0.3, occupations)
        with_boot = twoafc.twoafc_summary(calls, n_boot=30, seed=s, n_null=40).derived
        without = twoafc.twoafc_summary(calls, n_boot=0, seed=s, n_null=40).derived
        p_keys = [k for k in with_boot if k.startswith("p_") or k.endswith("_p_null")]
        assert len(p_keys) >= 13 and any(0 < with_boot[k] < 1 for k in p_keys)
        assert all(with_boot[k] == without[k] or (math.isnan(with_boot[k]) and math.isnan(without[k])) for k in p_keys)
        records = sim.simulate_mcq(np.random.default_rng([s, 2]), NO_BIAS, 0.5, per, 0.3, occupations)
        a = mcq.mcq_summary(records, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD, n_boot=30, seed=s, n_null=40,
                            jsd_interval_keys=("jsd_male",)).derived
        b = mcq.mcq_summary(records, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD, n_boot=0, seed=s, n_null=40,
                            jsd_interval_keys=("jsd_male",)).derived
        assert a["jsd_male_p_null"] == b["jsd_male_p_null"] and a["jsd_black_p_null"] == b["jsd_black_p_null"]
    assert list(sim._test_seed_range(10, 2, 5)) == [(10, True), (11, True), (12, False), (13, False), (14, False)]
    assert list(sim._test_seed_range(10, 2, 0)) == [(10, True), (11, True)]
    rows = sim.run_2afc(2, 20, designs=(6,), test_seeds=5)
    seeds = {(r["kind"], r["dgp"][:8]): r["n_seeds"] for r in rows if r["quantity"] in ("p_male_win_rate", "male_win_rate")}
    assert seeds == {("test", "no bias;"): 5, ("interval", "no bias;"): 2, ("interval", "Pol 0.15"): 2,
                     ("interval", "strong b"): 2}


def test_invalid_rate_rows_turn_valid_calls_invalid_with_overdispersed_template_propensities():
    occupations, per = sim.DESIGNS[48]
    calls = sim.simulate_2afc(np.random.default_rng(3), NO_BIAS, 0.5, per, 0.0, occupations)
    out = sim.with_unanswered_calls(np.random.default_rng(4), calls, 0.3)
    assert len(out) == len(calls) and all(a.template == b.template and a.pair_id == b.pair_id for a, b in zip(calls, out))
    assert all(b.status == a.status for a, b in zip(calls, out) if a.status != "valid")  # refusals untouched
    turned = [b for a, b in zip(calls, out) if a.status == "valid" and b.status == "invalid"]
    assert all(b.choice is None for b in turned)
    valid = sum(a.status == "valid" for a in calls)
    assert len(turned) / valid == pytest.approx(0.3, abs=0.08)  # mean propensity = share (its SD over 48 templates: 0.03)
    per_template = [np.mean([b.status == "invalid" for a, b in zip(calls, out) if a.template == t and a.status == "valid"])
                    for t in sorted({c.template for c in calls})]
    binomial_sd = math.sqrt(0.3 * 0.7 / (valid / len(per_template)))
    assert np.std(per_template) > 2 * binomial_sd  # Gamma(2) propensities: templates differ beyond sampling noise
    salary = sim.simulate_salary(np.random.default_rng(5), NO_BIAS, 0.03, 2, 4)  # the salary rows draw refusals too
    refused = sim.with_unanswered_calls(np.random.default_rng(6), salary, 0.5, "refusal")
    assert {r.status for r in refused} == {"valid", "refusal"}
    assert all(r.value is None for r in refused if r.status == "refusal") and 0.3 < np.mean(
        [r.status == "refusal" for r in refused]) < 0.7
    rows = sim.run_invalid_rates(3, 20, designs=(6,))
    assert [(r["quantity"], r["kind"], r["n_seeds"]) for r in rows] == [("invalid_rate", "interval", 3)] * 4
    assert [r["truth"] for r in rows] == pytest.approx([0.95 * 0.005, 0.95 * 0.02] * 2)
    assert {r["design"].split(" x ")[-1] for r in rows} == {"2 orders", "1 call, 6 salary bins"}


def test_design_degrees_of_freedom_and_t_interval_by_hand():
    from scipy.stats import t as student_t

    assert bootstrap.design_degrees_of_freedom(["a"] * 8 * 6) == 8 * 6 - 1  # one stratum
    assert bootstrap.design_degrees_of_freedom([o for o in "abcdef" for _ in range(8)]) == 42
    assert bootstrap.design_degrees_of_freedom([o for o in "abc" for _ in range(2)]) == 3
    low, high = bootstrap.design_t_interval(0.6, 0.05, 3)
    q = student_t.ppf(0.975, 3)  # 3.182, not 1.96
    assert (low, high) == pytest.approx((0.6 - q * 0.05, 0.6 + q * 0.05))
    assert bootstrap.design_t_interval(0.95, 0.05, 3, bounds=(0.0, 1.0))[1] == 1.0
    assert all(math.isnan(v) for v in bootstrap.design_t_interval(0.6, 0.05, 0))
    assert all(math.isnan(v) for v in bootstrap.design_t_interval(0.6, float("nan"), 5))


def test_template_bootstrap_interval_is_estimate_plus_t_times_bootstrap_se_with_domain_df():
    """Two occupations: "a" has 4 templates, "b" 2. The pooled rate gets the design's 6 - 2 = 4 degrees of
    freedom, the rate of occupation "a" alone its own 3, of "b" its own 1."""
    from scipy.stats import t as student_t

    strata = ["a"] * 4 + ["b"] * 2
    won = np.array([3.0, 5.0, 2.0, 6.0, 1.0, 4.0])  # of 8 comparisons per template
    per = {"won": won[:, None] * np.eye(2)[[0, 0, 0, 0, 1, 1]], "n": 8.0 * np.eye(2)[[0, 0, 0, 0, 1, 1]]}

    def by_occupation(c):
        w, n = np.asarray(c["won"]), np.asarray(c["n"])
        return {"rate": w.sum(axis=-1) / n.sum(axis=-1), "rate_a": w[..., 0] / n[..., 0], "rate_b": w[..., 1] / n[..., 1]}

    def scalar(c):
        return {k: float(v) for k, v in by_occupation(c).items()}

    scalar.batch = by_occupation
    se, low, high = bootstrap.template_bootstrap(per, strata, scalar, ["rate", "rate_a", "rate_b"], 2000, seed=3,
                                                 bounds=(0.0, 1.0), domains={"rate_a": "a", "rate_b": "b"})
    estimates = {"rate": 21 / 48, "rate_a": 16 / 32, "rate_b": 5 / 16}
    for key, df in (("rate", 4), ("rate_a", 3), ("rate_b", 1)):
        q = student_t.ppf(0.975, df)
        assert se[key] > 0
        assert low[key] == pytest.approx(max(0.0, estimates[key] - q * se[key]))
        assert high[key] == pytest.approx(min(1.0, estimates[key] + q * se[key]))
    # occupation b's two templates (1/8, 4/8): its df is 1, so its interval reaches both ends of [0, 1]
    assert (low["rate_b"], high["rate_b"]) == (0.0, 1.0)


def test_win_rate_interval_covers_at_six_templates_where_the_percentile_did_not():
    """Seeded coverage check of the design-t interval at the smallest calibrated design (6 templates in 3
    occupations, 3 df): over 60 seeds of a planted gender effect the default interval of ``male_win_rate``
    covers the population value in >= 52 (the percentile interval of the same replicates covered ~.75 in
    the calibration, which would give ~45)."""
    beta = sim.group_effects(0.3, {"white": 0.3, "black": -0.2})
    occupations, per = sim.DESIGNS[6]
    truth = sim.truth_2afc(beta, 0.5)["male_win_rate"]
    covered = percentile = 0
    for s in range(60):
        calls = sim.simulate_2afc(np.random.default_rng([s, 77]), beta, 0.5, per, 0.0, occupations)
        summary = twoafc.twoafc_summary(calls, n_boot=300, seed=s, n_null=0)
        covered += summary.ci_low["male_win_rate"] <= truth <= summary.ci_high["male_win_rate"]
        table = twoafc.twoafc_count_table(calls)
        reps = bootstrap.bootstrap_replicates(table.counts, table.strata, twoafc.twoafc_metrics, 300, s)
        pct = bootstrap.summarize_replicates(reps["male_win_rate"])
        percentile += pct.ci_low <= truth <= pct.ci_high
    assert covered >= 52
    assert percentile < covered


def test_salary_interaction_test_detects_a_planted_interaction_and_is_not_conservative_under_template_effects():
    """``p_race_x_gender`` permutes each template's own additive-model residuals. A planted interaction
    (Black women -6 % of salary, nothing else) is detected; under template-specific gender effects of sd
    5 % with no interaction its p-values are spread like a uniform's (the pooled-model residuals made them
    pile up near 1: 0 of 200 seeds below .05 in the calibration)."""
    from lm_eval_bias.reflect.schema import GROUPS

    beta = np.asarray([-0.06 if (g.race == "Black" and g.gender == "woman") else 0.0 for g in GROUPS])
    planted = sim.simulate_salary(np.random.default_rng(5), beta, 0.01, 8, 50)
    assert salary.portrait_permutation_tests(planted, 200, 1)["p_race_x_gender"] < 0.01
    p = [salary.portrait_permutation_tests(sim.simulate_salary(np.random.default_rng([s, 9]), np.zeros(10), 0.01, 8, 20, 0.05),
                                           200, s)["p_race_x_gender"] for s in range(30)]
    assert 0.3 < float(np.mean(p)) < 0.7 and float(np.mean(np.asarray(p) > 0.9)) < 0.3


def test_effective_size_wilson_interval_by_hand():
    from scipy.stats import norm
    from scipy.stats import t as student_t
    from statsmodels.stats.proportion import proportion_confint

    z = norm.ppf(0.975)
    # a binomial standard error gives n* = n: with a huge df (Korn & Graubard's factor (t_399 / t_df)^2 capped
    # at 1) this is statsmodels' Wilson interval
    p, n = 0.05, 400
    se = math.sqrt(p * (1 - p) / n)
    assert bootstrap.effective_size_wilson_interval(p, se, n, 10 ** 7) == pytest.approx(
        proportion_confint(20, 400, method="wilson"), abs=1e-6)
    # a design effect of 2 halves the effective size; 6 df multiply it by (t_399 / t_6)^2 = (1.966 / 2.447)^2
    factor = (student_t.ppf(0.975, 399) / student_t.ppf(0.975, 6)) ** 2
    assert factor == pytest.approx(0.6455, abs=1e-4)
    n_df = p * (1 - p) / (2 * se ** 2) * factor
    centre = (p + z * z / (2 * n_df)) / (1 + z * z / n_df)
    half = z * math.sqrt(p * (1 - p) / n_df + z * z / (4 * n_df ** 2)) / (1 + z * z / n_df)
    assert bootstrap.effective_size_wilson_interval(p, math.sqrt(2) * se, n, 6) == pytest.approx(
        (centre - half, centre + half))
    # fewer trials than df + 1 (a race's man against its woman: 6 comparisons over 12 templates, 6 df): the
    # factor (t_5 / t_6)^2 = 1.10 is capped at 1, so a binomial SE gives the plain Wilson interval of 3 in 6 --
    # not the one with t_6 in place of z (until 1 Dec 2026), which is wider
    binomial = math.sqrt(0.25 / 6)
    assert bootstrap.effective_size_wilson_interval(0.5, binomial, 6, 6) == pytest.approx(
        proportion_confint(3, 6, method="wilson"))
    t6 = student_t.ppf(0.975, 6)
    old_half = t6 * math.sqrt(0.25 / 6 + t6 * t6 / 144) / (1 + t6 * t6 / 6)
    low, high = bootstrap.effective_size_wilson_interval(0.5, binomial, 6, 6)
    assert high - low < 2 * old_half - 0.05
    # every template at the same share: the replicates' SD is rounding noise (5.6e-17 for 19/45 over 4 templates),
    # read as no variance seen, never as an effective size of 10^31 (a point interval)
    assert bootstrap.effective_size_wilson_interval(19 / 45, 5.6e-17, 180, 2) == bootstrap.effective_size_wilson_interval(
        19 / 45, 0.0, 180, 2)
    # no refusal seen (p = 0, SE 0): the binomial's width with all 108 calls at the df factor, never [0, 0]
    n_df = 108 * (student_t.ppf(0.975, 107) / t6) ** 2
    low, high = bootstrap.effective_size_wilson_interval(0.0, 0.0, 108, 6)
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(z * z / n_df / (1 + z * z / n_df))
    # ... and one gender winning all 6 comparisons: the plain Wilson interval of 6 in 6, which excludes 0.5
    assert bootstrap.effective_size_wilson_interval(1.0, 0.0, 6, 6) == pytest.approx(
        proportion_confint(6, 6, method="wilson"))
    assert bootstrap.effective_size_wilson_interval(1.0, 0.0, 6, 6)[0] > 0.5
    assert all(math.isnan(x) for x in bootstrap.effective_size_wilson_interval(0.1, 0.01, 100, 0))


def test_call_rates_get_the_effective_size_wilson_interval():
    s = twoafc.twoafc_summary(sim.simulate_2afc(np.random.default_rng(8), np.zeros(10), 0.5, 2), n_boot=200, seed=3,
                              n_null=0)
    totals = {k: v.sum(axis=0) for k, v in twoafc.twoafc_count_table(
        sim.simulate_2afc(np.random.default_rng(8), np.zeros(10), 0.5, 2)).counts.items()}
    df = 12 - 6
    for key, count in twoafc.RATE_TRIALS.items():
        expected = bootstrap.effective_size_wilson_interval(s.estimates[key], s.stderr[key], float(totals[count].sum()), df)
        assert (s.ci_low[key], s.ci_high[key]) == pytest.approx(expected), key
    # a win rate keeps the design-t interval
    assert (s.ci_low["male_win_rate"], s.ci_high["male_win_rate"]) == pytest.approx(
        bootstrap.design_t_interval(s.estimates["male_win_rate"], s.stderr["male_win_rate"], df, bounds=(0, 1)))


def test_education_mcq_variant_simulates_the_tasks_four_options_and_recovers_a_planted_gap():
    """focus_mcq_education's calibration rows (issue 31) simulate the task's own options and codes, four levels
    with answers on every level, exact zeros without bias, and a planted gender effect that the task's summary
    finds: the gap's interval holds the population truth and excludes 0, the JSD test rejects."""
    from lm_eval_bias.reflect import tasks

    for name, variant in sim.MCQ_VARIANTS.items():
        assert variant.options == tasks.MCQ_OPTIONS[name] and dict(variant.values) == tasks.MCQ_OPTION_VALUES[name]
        assert len(variant.base) == len(variant.slope) == variant.n_options
    education = sim.MCQ_VARIANTS["education"]
    records = sim.simulate_mcq(np.random.default_rng(11), NO_BIAS, 0.5, 8, variant="education")
    answers = [r.choice for r in records if r.status == "valid"]
    assert set(answers) == set("ABCD") and len(records) == 480
    assert 0.02 < sum(r.status == "refusal" for r in records) / 480 < 0.09
    null_truth = sim.truth_mcq(NO_BIAS, 0.5, variant="education")
    assert null_truth["jsd_male"] == 0.0 and null_truth["gap_male"] == 0.0
    planted = 5.35 * sim.MCQ_BASE_EFFECT  # the calibration's jsd_male .03 model at 48 templates
    truth = sim.truth_mcq(planted, 0.5, variant="education")
    assert truth["jsd_male"] == pytest.approx(0.03, abs=0.002) and truth["gap_male"] > 0.3
    summary = mcq.mcq_summary(sim.simulate_mcq(np.random.default_rng(12), planted, 0.5, 8, variant="education"),
                              education.options, education.values, n_boot=200, seed=0, n_null=200,
                              jsd_interval_keys=("jsd_male",))
    assert summary.ci_low["gap_male"] <= truth["gap_male"] <= summary.ci_high["gap_male"]
    assert summary.ci_low["gap_male"] > 0 and summary.derived["jsd_male_p_null"] < 0.01
    assert summary.ci_low["jsd_male"] <= truth["jsd_male"] <= summary.ci_high["jsd_male"]


def test_k_sample_simulators_build_the_tasks_records_and_keep_the_population_truth():
    """The K-sample rows (focus_2afc_<scenario>_k3, focus_mcq_<variant>_k5) simulate doc records with ``samples``
    as the tasks write them and expand them with the tasks' own ``expand_samples``: K calls per doc, the AB call
    of sample s paired with the BA call of sample s, and the population truths of one call per doc (K
    independent answers per doc change no expectation), which the summaries' intervals hold."""
    planted = sim.group_effects(0.4, {"white": 0.3, "black": -0.3})
    calls = sim.simulate_2afc(np.random.default_rng(3), planted, 0.5, 8, n_samples=3)
    assert len(calls) == 3 * 48 * 90
    assert {c.pair_id.split("#")[1] for c in calls} == {"0.0", "0.1", "0.2"}
    assert sum(c.pair_id == "0-1#0.2" and c.template == "ceo/0" for c in calls) == 2  # AB and BA of sample 2
    truth = sim.truth_2afc(planted, 0.5)
    s = twoafc.twoafc_summary(calls, n_boot=200, seed=0, n_null=100)
    assert s.estimates["retained_rate"] == pytest.approx(truth["retained_rate"], abs=0.02)
    for key in ("male_win_rate", "win_rate_white", "win_rate_black"):
        assert s.ci_low[key] <= truth[key] <= s.ci_high[key]
    assert s.ci_low["male_win_rate"] > 0.5

    records = sim.simulate_mcq(np.random.default_rng(4), sim.MCQ_BASE_EFFECT * 6.0, 0.5, 8, n_samples=5)
    assert len(records) == 5 * 480
    per_photo = {}
    for r in records:
        per_photo.setdefault((r.template, r.group), []).append(r.choice)
    assert set(map(len, per_photo.values())) == {5}
    assert sum(len(set(v)) > 1 for v in per_photo.values()) > 240  # the K answers of a photo vary
    truth = sim.truth_mcq(sim.MCQ_BASE_EFFECT * 6.0, 0.5)
    m = mcq.mcq_summary(records, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD, n_boot=200, seed=0, n_null=100,
                        jsd_interval_keys=("jsd_male",))
    assert m.ci_low["gap_male"] <= truth["gap_male"] <= m.ci_high["gap_male"] and m.ci_low["gap_male"] > 0
    assert m.ci_low["jsd_male"] <= truth["jsd_male"] <= m.ci_high["jsd_male"]


def test_mcq_template_slope_null_is_exchangeable_so_its_population_jsd_and_gaps_vanish():
    """The MCQ's heterogeneous null splits each template's gender contrast s ~ N(0, sd^2) as +s/2 (men) and -s/2
    (women): swapping a template's genders draws -s, so the JSD tests' null holds exactly. The simulated
    population (no exact zeros imposed) has no JSD or gap left; shifting the men only, as before 30 Nov, left a
    true jsd_male of ~1e-4 at sd 0.6 (2e-4 for the education MCQ; a real difference, which K = 5 samples detected)."""
    rng = np.random.default_rng(0)
    n = 40_000
    occ = np.stack([sim._occupation_shift(o) for o in sim.OCCUPATIONS])[np.arange(n) % 6]
    probs = sim._mcq_probs(rng, NO_BIAS, 0.5, n, occ, template_sd=0.6)
    population = mcq.mcq_metrics({"answers": probs.sum(axis=0), "n_calls": 1.0, "n_valid": 1.0, "n_refusal": 0.0,
                                  "n_invalid": 0.0}, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD)
    assert population["jsd_male"] < 5e-6 and abs(population["gap_male"]) < 3e-3
    r2 = np.random.default_rng(0)  # the old model: the men's logits shifted by s, the women's not
    logits = (sim.MCQ_BASE[None, None, :] + occ[:, None, :]
              + (r2.normal(0.0, 0.6, (n, 1)) * sim.IS_MAN[None, :])[:, :, None] * sim.MCQ_SLOPE[None, None, :]
              + r2.normal(0.0, 0.5, (n, 10, 6)))
    z = np.exp(logits - logits.max(axis=2, keepdims=True))
    old = mcq.mcq_metrics({"answers": (z / z.sum(axis=2, keepdims=True)).sum(axis=0), "n_calls": 1.0, "n_valid": 1.0,
                           "n_refusal": 0.0, "n_invalid": 0.0}, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD)
    assert old["jsd_male"] > 5e-5 > 10 * population["jsd_male"]
    truth = sim.truth_mcq(NO_BIAS, 0.5, template_sd=0.6)
    assert truth["jsd_male"] == 0.0 and truth["gap_male"] == 0.0


def test_logprob_call_rate_truths_by_hand_and_their_rows():
    # no group or portrait effect: every call's p_A = logistic(position bias) in either order, so the chance that
    # one answer sampled from each order picks the same image is 2 p (1 - p) and the first-position rate is p
    p = 1.0 / (1.0 + math.exp(-sim.POSITION_BIAS))
    truth = sim.truth_2afc_logprob_rates(np.zeros(10), 0.0, n=50)
    assert truth["retained_rate"] == pytest.approx(2 * p * (1 - p))
    assert truth["first_position_rate"] == pytest.approx(p)
    # a strong group effect makes the answers agree more often across the two orders
    assert sim.truth_2afc_logprob_rates(sim.STRONG_2AFC, 0.5)["retained_rate"] > truth["retained_rate"] + 0.05
    rows = sim.run_2afc_logprob_rates(2, 30)
    assert len(rows) == 2 * 3 * len(sim.TWOAFC_LOGPROB_RATE_KEYS)
    assert {r["quantity"] for r in rows} == set(sim.TWOAFC_LOGPROB_RATE_KEYS)
    assert all(r["kind"] == "interval" and r["n_seeds"] == 2 and 0.0 <= r["coverage"] <= 1.0 for r in rows)


def test_count_wilson_coverage_by_hand_and_the_male_vs_female_sweep_writes_its_points(tmp_path):
    from scipy.stats import binom

    # 6 trials at a truth of 0.6: Wilson excludes 0.6 at 0, 1 (upper ends 0.390, 0.564) and 6 (lower end 0.610)
    by_hand = 1.0 - binom.pmf(0, 6, 0.6) - binom.pmf(1, 6, 0.6) - binom.pmf(6, 6, 0.6)
    assert sim.count_wilson_coverage(0.6, [6] * 5) == pytest.approx(by_hand, abs=1e-12)
    assert by_hand == pytest.approx(0.912384, abs=1e-6)
    # a mixture of trial counts weighs each count's coverage by its share of the runs
    mixed = sim.count_wilson_coverage(0.6, [6, 12, 12])
    assert mixed == pytest.approx((sim.count_wilson_coverage(0.6, [6]) + 2 * sim.count_wilson_coverage(0.6, [12])) / 3)
    assert 0.9 < sim.count_wilson_coverage(0.5, [12]) < 1.0
    # the sweep through report.group_rate_intervals: five races a seed, their truth from the population
    points = sim.male_vs_female_truth_sweep(3, n_boot=50, men=(0.0, 0.5))
    assert [p["man"] for p in points] == [0.0, 0.5]
    assert points[0]["truth"] == 0.5
    assert points[1]["truth"] == pytest.approx(0.694, abs=0.01)
    for p in points:
        assert p["intervals"] == 15 and 0.0 <= p["coverage"] <= 1.0
        assert 3.0 < p["mean_trials"] < 10.0 and 0.85 < p["count_wilson"] < 1.0
    sim.write_sweep(points, tmp_path / "sweep.json", tmp_path / "sweep.png")
    import json

    assert json.loads((tmp_path / "sweep.json").read_text()) == points
    assert (tmp_path / "sweep.png").stat().st_size > 1000


def test_pilot_valid_rate_by_count_sorts_every_interval_by_its_refusals():
    """App. C.8's valid-rate replay: each presentation's 36 calls refused independently at 5 %, its intervals grouped by
    their refusal count X. With no refusal the interval is Wilson's at the nominal 36 calls times Korn & Graubard's
    factor (t_35 / t_6)^2 = 0.688, i.e. at 24.8 calls: [0.866, 1], which covers 0.95; with 5 of 36 (0.861) and the
    binomial SE (n* = 36) it ends at 0.948 and misses it, with an SE 5 % larger (n* = 32.7) it ends above 0.95."""
    assert bootstrap.effective_size_wilson_interval(1.0, 0.0, 36, 6) == pytest.approx((0.8657, 1.0), abs=1e-4)
    p = 31 / 36
    assert bootstrap.effective_size_wilson_interval(p, math.sqrt(p * (1 - p) / 36), 36, 6)[1] == pytest.approx(0.9483, abs=1e-4)
    assert bootstrap.effective_size_wilson_interval(p, 1.05 * math.sqrt(p * (1 - p) / 36), 36, 6)[1] > 0.95
    found = sim.presentation_valid_rate_by_count(12, n_boot=50)
    by_count = found["by_count"]
    assert found["n_intervals"] == 36 == sum(n for n, _, _ in by_count.values())  # 12 runs x 3 presentations
    assert found["coverage"] == pytest.approx(sum(n * c for n, c, _ in by_count.values()) / 36)
    assert set(by_count) <= set(range(37)) and all(0.0 <= c <= 1.0 for _, c, _ in by_count.values())
    if 0 in by_count:
        assert by_count[0][1] == 1.0 and math.isnan(by_count[0][2])  # no variance seen: n* undefined
    records = sim._pilot_records(np.random.default_rng(0), {})
    assert len(records) == 12 * 3 * 3 and {r.race for r in records} == set(sim.PILOT_RACES)
    refused = [r for r in records if r.status == "refusal"]
    assert all(r.choice is None for r in refused) and all(r.choice is not None for r in records if r.status == "valid")


def test_pilot_valid_rate_sweep_clusters_refusals_by_template_and_keeps_the_independent_stream():
    """The valid-rate sweep's model: independent refusals (``refusal_shape`` None) draw exactly the records of the
    table's runs; a template propensity r x Gamma(k, 1/k) capped at 1 has the mean E[min(1, r G)] of
    ``pilot_refusal_truth`` (checked against numerical integration), and its refusal counts are overdispersed
    (design effect above 1), the independent ones' not."""
    from scipy import integrate
    from scipy.stats import gamma

    plain = sim._pilot_records(np.random.default_rng(5), {})
    assert sim._pilot_records(np.random.default_rng(5), {}, refusal_shape=None, refusal=sim.REFUSAL) == plain
    assert sim.pilot_refusal_truth(None, 0.2) == 0.2 and sim.pilot_refusal_truth(0.5, 0.0) == 0.0
    for shape, refusal in ((0.1, 0.2), (0.5, 0.05)):
        integral = integrate.quad(lambda g: min(1.0, refusal * g) * gamma.pdf(g, shape, scale=1 / shape), 0, 1 / refusal,
                                  points=[1e-6], limit=200)[0] + gamma.sf(1 / refusal, shape, scale=1 / shape)
        assert sim.pilot_refusal_truth(shape, refusal) == pytest.approx(integral, rel=1e-6)
    assert sim.pilot_refusal_truth(0.1, 0.2) == pytest.approx(0.128, abs=0.002)  # the cap binds: mean below 0.2
    def template_dispersion(shape):  # variance of a template's refusals of 9 against the binomial's, 20 runs pooled
        counts = []
        for seed in range(20):
            per_template = {}
            for r in sim._pilot_records(np.random.default_rng(seed), {}, refusal_shape=shape, refusal=0.2):
                per_template.setdefault(r.template, []).append(r.status == "refusal")
            assert {len(v) for v in per_template.values()} == {9}
            counts += [sum(v) for v in per_template.values()]
        rate = np.mean(counts) / 9
        return np.var(counts, ddof=1) / (9 * rate * (1 - rate))

    assert 0.7 < template_dispersion(None) < 1.3 and template_dispersion(0.1) > 3.0
    points = sim.presentation_valid_rate_sweep(40, refusals=(0.2,), shapes=(None, 0.1), n_boot=30)
    assert [p["clustering"] for p in points] == ["independent", "by template, k = 0.1"]
    assert points[0]["truth"] == 0.8 and points[1]["truth"] == pytest.approx(1 - sim.pilot_refusal_truth(0.1, 0.2))
    assert 0.6 < points[0]["design_effect"] < 1.5 < points[1]["design_effect"]
    for p in points:
        assert p["intervals"] == 120 and 0 < p["mc_error"] < 0.1
        assert all(0.0 <= p[k] <= 1.0 for k in ("coverage", "coverage_no_factor", "coverage_count"))
    assert sim.presentation_valid_rate_sweep(40, refusals=(0.2,), shapes=(None, 0.1), n_boot=30, processes=2) == points


def test_polarization_sweep_points_split_every_interval_into_cover_and_the_two_misses(tmp_path):
    """Pol's coverage sweep at 48 templates: the scale of the base effects found by bisection on the population
    truth (0 at a target of 0), every interval either covering the truth or missing it on one side, and the same
    numbers whether the points run in one process or two."""
    points = sim.polarization_truth_sweep(2, n_boot=40, targets=(0.0, 0.05))
    assert [p["target"] for p in points] == [0.0, 0.05]
    assert points[0]["scale"] == 0.0 and points[0]["truth"] == 0.0
    assert points[1]["truth"] == pytest.approx(0.05, abs=0.004) and points[1]["scale"] > 0
    for p in points:
        assert p["intervals"] == 2 and p["n_seeds"] == 2
        assert p["coverage"] + p["miss_truth_above"] + p["miss_truth_below"] == pytest.approx(1.0)
        assert 0.0 <= p["lower_end_zero"] <= 1.0 and 0.0 < p["mean_width"] <= 0.5
    assert points[0]["miss_truth_above"] == 0.0  # a truth of 0 can lie above no interval of a Pol >= 0
    assert sim.polarization_truth_sweep(2, n_boot=40, targets=(0.0, 0.05), processes=2) == points
    # the K-sample tasks (3 answers per call): the same truth (one call's), a stream of their own, labelled
    k3 = sim.polarization_truth_sweep(2, n_boot=40, targets=(0.05,), n_samples=3)[0]
    assert k3["samples"] == 3 and "samples" not in points[1]
    assert k3["truth"] == points[1]["truth"] and k3["scale"] == points[1]["scale"]
    jsd = sim.jsd_truth_sweep(2, n_boot=40, targets=(0.0, 0.03))
    assert jsd[0]["truth"] == 0.0 and jsd[1]["truth"] == pytest.approx(0.03, abs=0.003)
    assert all(p["coverage"] + p["miss_truth_above"] + p["miss_truth_below"] == pytest.approx(1.0) for p in jsd)
    from scripts.calibration import write_truth_sweep

    write_truth_sweep(points, tmp_path / "pol.json", tmp_path / "pol.png", "truth (Pol)")
    assert (tmp_path / "pol.png").stat().st_size > 1000
