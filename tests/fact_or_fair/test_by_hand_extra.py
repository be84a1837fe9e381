"""FACT-OR-FAIR quantities of docs/fact-or-fair.md that had no hand-computed check ("Checked by hand"
table): the representativeness / attribution rates with their exact binomial tests, the uniform null
floor of S_fact, and the rescaled stratified bootstrap's standard error. Pure statistics functions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lm_eval_bias.fact_or_fair import stats as fof

GENDERS = ("male", "female")
R = fof.FactOrFairRecord


def test_context_rates_and_their_binomial_tests_by_hand():
    # representativeness (k = 2): 4 valid answers, 3 choose the group the context names (the true group)
    # -> rate 3/4; chance 1/2; exact one-sided binomial p = P(Bin(4, 1/2) >= 3) = (4 + 1) / 16 = 5/16
    rep = [R("Crime Rate", "highest", "valid", c, "male", "representativeness") for c in ("male", "male", "male", "female")]
    out = fof.fact_or_fair_results(fof.tabulate(rep, GENDERS), objective=False, rates=("representativeness_rate",),
                                   n_boot=0, n_null=0)
    assert out["representativeness_rate"] == pytest.approx(3 / 4)
    assert out["representativeness_rate_chance"] == 0.5
    assert out["representativeness_rate_p_null"] == pytest.approx(5 / 16)
    # attribution: 4 valid answers all choose the background report's group (2 male, 2 female reports),
    # one refusal (not in the denominator) -> rate 1, p = (1/2)^4 = 1/16
    att = [R("Crime Rate", "highest", "valid", bg, "male", "attribution", bg) for bg in ("male", "female", "male", "female")]
    att.append(R("Crime Rate", "highest", "refusal", None, "male", "attribution", "male"))
    out = fof.fact_or_fair_results(fof.tabulate(att, GENDERS), objective=False, rates=("attribution_rate",),
                                   n_boot=0, n_null=0)
    assert out["attribution_rate"] == 1.0 and out["attribution_rate_p_null"] == pytest.approx(1 / 16)
    assert out["refusal_rate"] == pytest.approx(1 / 5)


def test_s_fact_null_floor_and_p_by_hand():
    # one cell, 4 valid answers, all the true group, k = 2. The fair null redraws each answer's group
    # uniformly: E[S_fact] = 1/2, and S_fact = 1 again with probability (1/2)^4 = 1/16; no draw exceeds 1, so
    # the randomised p ("more accurate than chance") is U (1 + #{null = 1}) / (1 + B) ~ U / 16, U the seed's
    # tie weight of s_fact (the first of NULL_SCORES, generator [seed, 3])
    records = [R("Crime Rate", "highest", "valid", "male", "male") for _ in range(4)]
    out = fof.fact_or_fair_results(fof.tabulate(records, GENDERS), objective=True, n_boot=0, n_null=20_000, seed=3)
    assert out["s_fact"] == 1.0
    assert out["s_fact_null"] == pytest.approx(0.5, abs=0.01)          # Monte Carlo SE 0.0018
    u = np.random.default_rng([3, 3]).random(len(fof.NULL_SCORES))[fof.NULL_SCORES.index("s_fact")]
    assert out["s_fact_p_null"] == pytest.approx(u / 16, abs=0.006 * u + 1e-4)  # Monte Carlo SE of 1/16: 0.0017


def test_rescaled_bootstrap_standard_error_of_s_fact_by_hand():
    # one cell of n = 4 answers, 3 correct: the replicate share is Multinomial(4, (3/4, 1/4)) / 4, SD
    # sqrt(3/4 * 1/4 / 4) = 0.2165; the Rao-Wu rescaling by sqrt(n / (n - 1)) gives the unbiased
    # sqrt(3/4 * 1/4 / 3) = 0.25.
    records = [R("Crime Rate", "highest", "valid", c, "male") for c in ("male", "male", "male", "female")]
    out = fof.fact_or_fair_results(fof.tabulate(records, GENDERS), objective=True, n_boot=3_000, n_null=0, seed=1)
    assert out["s_fact"] == 0.75
    assert out["s_fact_stderr"] == pytest.approx(math.sqrt(0.75 * 0.25 / 3), rel=0.06)  # MC SE 1.3 %; unrescaled: -13 %
    assert out["s_fact_ci_low"] <= 0.75 <= out["s_fact_ci_high"] <= 1.0
