"""Counterfactual VQA quantities of docs/cf-vqa.md that had no hand-computed check ("Checked by hand"
table): the permutation null floors of Cons and CC-AUC and their (randomised) p-values, by exact enumeration."""

from __future__ import annotations

import numpy as np
import pytest

from lm_eval_bias.cf_vqa import stats
from lm_eval_bias.cf_vqa.stats import PairResponse as P


def test_null_floor_and_p_by_exact_enumeration():
    # three pairs of one category, one option order; pair i answers letter i on both images (confidence
    # 0.9): Cons = CC-AUC = 1. The null gives pair i the b- responses of pair perm(i), perm uniform over
    # the 3! = 6 permutations: Cons = (fixed points of perm) / 3, which is 1 (identity, 1 of 6),
    # 1/3 (a transposition, 3 of 6) or 0 (a 3-cycle, 2 of 6) -> null mean = E[fixed points] / 3 = 1/3 and
    # P(null > 1) = 0 and P(null = 1) = 1/6, so the randomised p_null = 0 + U x 1/6 (U the test's tie
    # weight, stats.null_tie_weights: row 0 all pairs, row 1 the category; columns NULL_METRICS).
    # With every confidence 0.9, CC-AUC = Cons_0.9 x kappa(0.9) = Cons.
    pairs = [P(f"p{i}", "ABC"[i], "ABC"[i], 0.9, 0.9, 0, "Culture") for i in range(3)]
    letters = {(f"p{i}", 0): (i, i) for i in range(3)}
    out = stats.pair_summary(stats.pair_grid(pairs, letters=letters), n_boot=0, n_perm=6000, seed=2)
    u = stats.null_tie_weights(2, 2 * len(stats.NULL_METRICS)).reshape(2, -1)
    for row, scope in enumerate((None, "Culture")):
        result = out[scope]
        for key in ("consistency", "cc_auc"):
            assert result[key] == 1.0
            assert result[f"{key}_null"] == pytest.approx(1 / 3, abs=0.02)   # Monte Carlo SE 0.004
            weight = u[row, stats.NULL_METRICS.index(key)]
            assert 0 < weight < 1
            assert result[f"{key}_p_null"] == pytest.approx(weight / 6, abs=0.02 * weight)  # Monte Carlo SE 0.005 U
        assert result["n_pairs"] == 3 and result["n_pair_runs"] == 3


def test_randomised_null_p_value_by_hand():
    # observed 2 against the draws [1, 2, 2, 3]: one above, two tied. Counting ties against it:
    # (1 + #{null >= 2}) / (1 + 4) = 4/5; randomised with U: (#{null > 2} + U (1 + #{null = 2})) / 5
    # = (1 + 3 U) / 5, between 1/5 (U = 0) and 4/5 (U = 1); U = 1/2 gives the mid-p 2.5 / 5.
    null = np.array([1.0, 2.0, 2.0, 3.0])
    assert stats.null_p_value(2.0, null) == pytest.approx(4 / 5)
    assert stats.null_p_value(2.0, null, 0.0) == pytest.approx(1 / 5)
    assert stats.null_p_value(2.0, null, 1.0) == pytest.approx(4 / 5)
    assert stats.null_p_value(2.0, null, 0.5) == pytest.approx(2.5 / 5)
    # without ties the randomised p is (#{null > x} + U) / (n + 1)
    assert stats.null_p_value(2.5, null, 0.3) == pytest.approx(1.3 / 5)


def test_randomised_permutation_p_is_uniform_for_a_discrete_statistic():
    # a two-valued statistic (observation and 19 draws iid Bernoulli(0.3), exchangeable as under the
    # null): counting ties rejects at 5 % far less often than 5 %; the randomised p rejects 5 %
    # (exact: P(p <= 0.05) = 0.05 for every configuration, Lehmann & Romano 2005, Sec. 3.2).
    rng = np.random.default_rng(5)
    values = (rng.random((20_000, 20)) < 0.3).astype(float)
    u = rng.random(20_000)
    counted = np.array([stats.null_p_value(v[0], v[1:]) for v in values])
    randomised = np.array([stats.null_p_value(v[0], v[1:], w) for v, w in zip(values, u)])
    assert np.mean(counted <= 0.05) < 0.01
    assert np.mean(randomised <= 0.05) == pytest.approx(0.05, abs=0.005)  # binomial SE 0.0015



def test_malformed_confidence_rate_by_hand(monkeypatch):
    # three pairs, one option order, six responses; p0's b- names option A with confidence "very":
    # invalid (bad_confidence) -> malformed_confidence_rate = invalid_rate = 1/6. By default an invalid answer
    # is the empty answer (invalid_as=refusal): p0 is inconsistent, p1 and p2 consistent -> Cons = 2/3.
    from lm_eval_bias.cf_vqa import tasks as cf_vqa

    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "0")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "0")
    valid = '"Explanation": "x", "Exact Answer": "A", "Confidence": "0.8"'
    malformed = '"Explanation": "x", "Exact Answer": "A", "Confidence": "very"'
    records = []
    for i in range(3):
        for side in ("plus", "minus"):
            doc = {"pair_id": f"p{i}", "run": 0, "side": side, "category": "Culture", "subcategory": "x",
                   "options": ["Not at all", "Slightly", "Moderately", "Very"], "human_consistency": None,
                   "split": "corpus", "prompt": "baseline", "embedder": "", "seed": 0, "truncated_as": "exclude",
                   "invalid_as": "refusal"}
            records.append(cf_vqa.record_of(doc, [malformed if (i, side) == (0, "minus") else valid]))
    out = cf_vqa.summarize(records)
    assert out["malformed_confidence_rate"] == pytest.approx(1 / 6) and out["invalid_rate"] == pytest.approx(1 / 6)
    assert out["consistency"] == pytest.approx(2 / 3) and out["n_pair_runs"] == 3
