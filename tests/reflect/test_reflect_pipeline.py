"""Whole REFLECT pipeline through lm-eval with the planted-bias model: the metrics must recover the
planted preference. Expected values are derived here from the probe's utilities and the paper's
definitions, independently of lm_eval_bias.stats."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from lm_eval_bias.reflect.schema import GENDERS, GROUPS, RACES
from lm_eval_bias.models.bias_probe import BiasProbeLM
from tests.conftest import BIOS_PER_OCCUPATION, SMALL_OCCUPATIONS, SMALL_TEMPLATES

N_TEMPLATES = len(SMALL_OCCUPATIONS) * len(SMALL_TEMPLATES)
RACE_ORDER = "White>Asian>Latino>Middle_Eastern>Black"


def run_probe(tasks, model_args="", limit=None, bootstrap_iters=200, gen_kwargs=None, metadata=None):
    import os

    from lm_eval import simple_evaluate

    import lm_eval_bias

    os.environ["LM_EVAL_BIAS_BOOTSTRAP_ITERS"] = str(bootstrap_iters)
    results = simple_evaluate(
        model="bias-probe",
        model_args=model_args,
        tasks=tasks,
        limit=limit,
        task_manager=lm_eval_bias.task_manager(metadata=metadata),
        bootstrap_iters=0,
        log_samples=True,
        gen_kwargs=gen_kwargs,
    )
    return results


def metrics_of(results, task):
    """The task's headline from lm-eval's results, every other key from the analysis of its logged
    samples (:mod:`lm_eval_bias.analysis`); the two agree on every headline key."""
    import math

    from lm_eval_bias import analysis

    headline = {k.split(",")[0]: v for k, v in results["results"][task].items() if "," in k and v != "N/A"}
    values = analysis.from_results(results, [task])[task].values
    for key in analysis.headline_keys(task):
        ours, theirs = values[key], headline[key]
        assert ours == theirs or (isinstance(theirs, float) and math.isnan(ours) and math.isnan(theirs)), key
    return {**values, **headline}


def probe_utilities(**kwargs):
    return BiasProbeLM(**kwargs).utilities


def expected_2afc_deterministic(utilities):
    mixed = [(i, j) for i in range(10) for j in range(i + 1, 10) if GROUPS[i].gender != GROUPS[j].gender]
    male_wins = sum(
        1 for i, j in mixed if (utilities[i] > utilities[j]) == (GROUPS[i].gender == "man")
    )
    race_rates = {}
    for race in RACES:
        cross = [(i, j) for i in range(10) for j in range(10)
                 if GROUPS[i].race == race and GROUPS[j].race != race]
        race_rates[race] = sum(utilities[i] > utilities[j] for i, j in cross) / len(cross)
    return male_wins / len(mixed), race_rates


def test_2afc_recovers_planted_preference_exactly(focus_env):
    results = run_probe(["focus_2afc_income"], f"race_order={RACE_ORDER},gender_order=man>woman")
    m = metrics_of(results, "focus_2afc_income")
    male, races = expected_2afc_deterministic(probe_utilities())
    assert results["n-samples"]["focus_2afc_income"]["effective"] == N_TEMPLATES * 90
    assert m["retained_rate"] == 1.0
    assert m["refusal_rate"] == 0.0
    assert m["invalid_rate"] == 0.0
    assert m["swap_inconsistent_rate"] == 0.0
    assert m["first_position_rate"] == 0.5  # one AB and one BA answer per consistent pair
    assert m["male_win_rate"] == pytest.approx(male)
    for race in RACES:
        assert m[f"win_rate_{race.lower()}"] == pytest.approx(races[race])
    # The planted order makes every cell deterministic: Pol = mean |1 - 0.5| and Ext = 1.
    assert m["polarization"] == pytest.approx(0.5)
    assert m["extreme_cell_rate"] == 1.0
    assert m["n_defined_cells"] == 45
    # Every template gives the same answers, so the template-cluster bootstrap has no spread.
    assert m["male_win_rate_stderr"] == pytest.approx(0.0)


def test_2afc_gender_flip_and_race_order_are_recovered(focus_env):
    results = run_probe(["focus_2afc_safety"], "race_order=Black>Middle_Eastern>Latino>Asian>White,gender_order=woman>man")
    m = metrics_of(results, "focus_2afc_safety")
    male, races = expected_2afc_deterministic(
        probe_utilities(race_order="Black>Middle_Eastern>Latino>Asian>White", gender_order="woman>man")
    )
    assert m["male_win_rate"] == pytest.approx(male) and male < 0.5
    assert m["win_rate_black"] == pytest.approx(races["Black"]) and races["Black"] > races["White"]


def test_2afc_position_bias_is_discarded_by_swap_check(focus_env):
    results = run_probe(["focus_2afc_education"], "position_bias=1.0")
    m = metrics_of(results, "focus_2afc_education")
    assert m["first_position_rate"] == 1.0
    assert m["swap_inconsistent_rate"] == 1.0
    assert m["retained_rate"] == 0.0
    assert math.isnan(m["male_win_rate"]) and math.isnan(m["polarization"])
    assert m["n_defined_cells"] == 0


def test_2afc_refusals_are_counted_and_never_answers(focus_env):
    results = run_probe(["focus_2afc_income"], "refusal_rate=0.3,seed=7", bootstrap_iters=300)
    m = metrics_of(results, "focus_2afc_income")
    n_calls = N_TEMPLATES * 90
    # refusal_rate is a share of calls; with 360 Bernoulli(0.3) draws it lies within 4 binomial SDs.
    assert abs(m["refusal_rate"] - 0.3) < 4 * math.sqrt(0.3 * 0.7 / n_calls)
    # A pair is retained only when neither call refused: 0.7^2.
    assert abs(m["retained_rate"] - 0.49) < 4 * math.sqrt(0.49 * 0.51 / (n_calls / 2))
    assert m["swap_inconsistent_rate"] == 0.0 and m["invalid_rate"] == 0.0
    # Retained comparisons still follow the deterministic preference.
    assert m["polarization"] == pytest.approx(0.5) and m["extreme_cell_rate"] == 1.0
    from lm_eval_bias import samples as logged

    records = [logged.sample_record("focus_2afc_income", s) for s in results["samples"]["focus_2afc_income"]]
    refused = [r for r in records if r["status"] == "refusal"]
    assert refused and all(r["choice"] is None for r in refused)
    assert len(refused) / n_calls == pytest.approx(m["refusal_rate"])


def _jsd(p, q):
    p, q = np.asarray(p, float) / np.sum(p), np.asarray(q, float) / np.sum(q)
    m = (p + q) / 2

    def kl(a, b):
        mask = a > 0
        return float(np.sum(a[mask] * np.log2(a[mask] / b[mask])))

    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


@pytest.mark.parametrize("variant,options,values", [
    ("salary", "ABCDEF", [10000, 30000, 50000, 70000, 90000, 110000]),
    ("education", "ABCD", [1, 2, 3, 4]),
])
def test_mcq_recovers_planted_answers(focus_env, variant, options, values):
    task = f"focus_mcq_{variant}"
    results = run_probe([task])
    m = metrics_of(results, task)
    probe = BiasProbeLM()
    k = len(options)
    letter = {g: round(probe.utility_rank[g] / 9 * (k - 1)) for g in range(10)}  # planted answer per group

    def dist(members):
        counts = np.zeros(k)
        for g in members:
            counts[letter[g]] += 1
        return counts

    everyone = dist(range(10))
    men = [g for g in range(10) if GROUPS[g].gender == "man"]
    women = [g for g in range(10) if GROUPS[g].gender == "woman"]
    mean = lambda counts: float(np.dot(counts / counts.sum(), values))  # noqa: E731
    assert m["valid_rate"] == 1.0 and m["refusal_rate"] == 0.0
    assert m["jsd_male"] == pytest.approx(_jsd(dist(men), everyone))
    assert m["jsd_female"] == pytest.approx(_jsd(dist(women), everyone))
    assert m["gap_male"] == pytest.approx((mean(dist(men)) - mean(dist(women))) / mean(dist(women)))
    white = [g for g in range(10) if GROUPS[g].race == "White"]
    for race in ("Asian", "Black", "Latino", "Middle_Eastern"):
        members = [g for g in range(10) if GROUPS[g].race == race]
        assert m[f"gap_{race.lower()}"] == pytest.approx((mean(dist(members)) - mean(dist(white))) / mean(dist(white)))
        assert m[f"jsd_{race.lower()}"] == pytest.approx(_jsd(dist(members), everyone))
    assert m["gap_black"] < 0 < m["gap_male"]


def _planted_salary_gaps():
    utilities = probe_utilities()
    mu = lambda members: 60000 + 5000 * np.mean([utilities[g] for g in members])  # noqa: E731
    by = lambda attr, value: [g for g in range(10) if getattr(GROUPS[g], attr) == value]  # noqa: E731
    gaps = {"gap_pct_male": (mu(by("gender", "man")) / mu(by("gender", "woman")) - 1) * 100}
    for race in ("Asian", "Black", "Latino", "Middle_Eastern"):
        gaps[f"gap_pct_{race.lower()}"] = (mu(by("race", race)) / mu(by("race", "White")) - 1) * 100
    return gaps


def test_salary_gaps_recover_planted_values_exactly(focus_env):
    results = run_probe(["focus_salary"])
    m = metrics_of(results, "focus_salary")
    assert results["n-samples"]["focus_salary"]["effective"] == N_TEMPLATES * 10 * BIOS_PER_OCCUPATION
    assert m["valid_rate"] == 1.0
    for key, expected in _planted_salary_gaps().items():
        assert m[key] == pytest.approx(expected), key
    assert m["gap_pct_black"] < 0 < m["gap_pct_male"]


def test_salary_cluster_robust_tests_detect_planted_effects(focus_env):
    results = run_probe(["focus_salary"], "salary_noise=2000,seed=1", bootstrap_iters=300)
    m = metrics_of(results, "focus_salary")
    for key, expected in _planted_salary_gaps().items():  # noisy, but within the bootstrap error
        assert abs(m[key] - expected) < 4 * m[f"{key}_stderr"] + 1e-9, key
    # default p-values are permutation p-values: at their floor 1 / (permutations + 1)
    floor = 1.0 / (int(os.environ.get("LM_EVAL_BIAS_NULL_ITERS", "1000")) + 1)
    assert m["p_race"] <= floor + 1e-12
    # p_gender flips whole templates (issue 31: a test of the average effect): its floor is 2 / 2^templates
    assert m["p_gender"] <= max(floor, 2.0 / 2 ** m["n_templates"]) + 0.05
    assert m["p_race_paper"] < 1e-6 and m["p_gender_paper"] < 1e-6  # the paper's regression tests (App. C.6)
    assert m["p_race_x_gender"] > 1e-3  # the planted effect is additive


def test_logged_samples_rebuild_the_reported_metrics(focus_env):
    from lm_eval_bias.reflect import tasks as reflect

    results = run_probe(["focus_2afc_income"], "refusal_rate=0.2,position_bias=0.2,seed=3")
    m = metrics_of(results, "focus_2afc_income")
    from lm_eval_bias import samples as logged

    records = [logged.sample_record("focus_2afc_income", s) for s in results["samples"]["focus_2afc_income"]]
    summary = reflect.summarize_2afc(records)
    for key in ("retained_rate", "male_win_rate", "polarization", "extreme_cell_rate"):
        assert summary.estimates[key] == pytest.approx(m[key], nan_ok=True)
    assert summary.win_matrix.shape == (10, 10)
