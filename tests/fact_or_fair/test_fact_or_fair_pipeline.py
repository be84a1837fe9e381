"""FACT-OR-FAIR through lm-eval with planted policies: the scores match their analytic values."""

from __future__ import annotations

import json

import pytest

from lm_eval_bias.core import data
from lm_eval_bias.fact_or_fair import stats as fof
from tests.reflect.test_reflect_pipeline import metrics_of, run_probe


def test_truth_policy_objective_gender(fof_env):
    m = metrics_of(run_probe(["fact_or_fair_objective_gender"], "fof_policy=truth"), "fact_or_fair_objective_gender")
    # always right: S_fact = 1, each (statistic, side) a point mass -> S_E = 0; highest != lowest
    # everywhere -> KL infinite -> S_KLD = 0; S_fair = 0; (1, 0) lies on g_2 -> d = 0
    assert (m["s_fact"], m["s_e"], m["s_kld"], m["s_fair"]) == (1.0, 0.0, 0.0, 0.0)
    assert m["distance"] == pytest.approx(0.0, abs=1e-9)
    assert m["refusal_rate"] == 0.0 and m["invalid_rate"] == 0.0


def test_fixed_policy_objective(fof_env):
    results = run_probe(["fact_or_fair_objective_gender", "fact_or_fair_objective_race"], "fof_policy=fixed,fof_fixed=male|White")
    g = metrics_of(results, "fact_or_fair_objective_gender")
    # gender is tested on Employment (high male, low female) and Crime (high male, low female): half right
    assert (g["s_fact"], g["s_e"], g["s_kld"], g["s_fair"]) == (0.5, 0.0, 1.0, 1.0)
    assert g["distance"] == pytest.approx(fof.distance_to_tradeoff_curve(0.5, 0.0, 2))
    r = metrics_of(results, "fact_or_fair_objective_race")
    # race truths: Hispanic/Black, Black/Asian, Asian/White -> White right once in 6 (statistic, side) cells
    assert r["s_fact"] == pytest.approx(1 / 6) and r["s_e"] == 0.0 and r["s_kld"] == 1.0 and r["s_fair"] == 1.0
    assert r["distance"] == pytest.approx(fof.distance_to_tradeoff_curve(1 / 6, 0.0, 4))


def test_uniform_policy_spreads_answers(fof_env):
    m = metrics_of(run_probe(["fact_or_fair_objective_race"], "fof_policy=uniform,seed=2"), "fact_or_fair_objective_race")
    assert m["s_e"] > 0.4 and 0 <= m["s_fact"] <= 1 and m["s_fair"] >= m["s_e"]


@pytest.mark.parametrize("context", ["baseline", "representativeness", "attribution", "ingroup"])
def test_subjective_fixed_policy_matches_recomputation_from_the_dataset(fof_env, context):
    task = f"fact_or_fair_subjective_{context}_gender"
    m = metrics_of(run_probe([task], "fof_policy=fixed,fof_fixed=male"), task)
    rows = [r for r in data.load_split("fact_or_fair", config="subjective")
            if r["context"] == context and r["true_gender"] is not None]
    chosen = []
    for r in rows:  # the policy: first male option, else option A
        genders = [p["gender"] for p in json.loads(r["profiles"])]
        chosen.append("male" if "male" in genders else genders[0])
    assert m["s_fact"] == pytest.approx(sum(c == r["true_gender"] for c, r in zip(chosen, rows)) / len(rows))
    expected_rates = {"baseline": [], "representativeness": ["representativeness_rate"],
                      "attribution": ["attribution_rate"], "ingroup": ["ingroup_rate", "outgroup_rate"]}[context]
    for rate in expected_rates:
        assert 0.0 <= m[rate] <= 1.0 and m[f"{rate}_chance"] == 0.5
    if context == "attribution":
        hits = [c == r["background_gender"] for c, r in zip(chosen, rows)]
        assert m["attribution_rate"] == pytest.approx(sum(hits) / len(hits))


def test_refusals_are_counted(fof_env):
    m = metrics_of(run_probe(["fact_or_fair_objective_race"], "fof_policy=truth,refusal_rate=0.5,seed=1"),
                   "fact_or_fair_objective_race")
    assert 0 < m["refusal_rate"] < 1 and m["s_fact"] == 1.0  # accuracy over answered queries only


@pytest.mark.parametrize("attribute,k", [("gender", 2), ("race", 4)])
def test_uniform_policy_subjective_reaches_the_top_of_the_curve(fof_env, attribute, k):
    """Uniform choices among random profiles: S_fact = 1/k, S_E = S_KLD = S_fair = 1 and d = 0 in
    expectation; with 300 answers per statistic x side the sampling error bounds below are > 4 SE."""
    task = f"fact_or_fair_subjective_baseline_{attribute}"
    m = metrics_of(run_probe([task], "fof_policy=uniform,seed=4"), task)
    n_scored = {"gender": 2, "race": 3}[attribute] * 2 * 300
    assert abs(m["s_fact"] - 1 / k) < 4 * ((1 / k) * (1 - 1 / k) / n_scored) ** 0.5
    assert m["s_e"] > 0.97 and m["s_kld"] > 0.95 and m["s_fair"] > 0.99
    assert m["distance"] < 0.06
