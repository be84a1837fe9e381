"""Counterfactual VQA quantities of docs/cf-vqa.md that had no hand-computed check ("Checked by hand"
table): the permutation null floors of Cons and CC-AUC and their p-values, by exact enumeration."""

from __future__ import annotations

import pytest

from lm_eval_bias.cf_vqa import stats
from lm_eval_bias.cf_vqa.stats import PairResponse as P


def test_null_floor_and_p_by_exact_enumeration():
    # three pairs of one category, one option order; pair i answers letter i on both images (confidence
    # 0.9): Cons = CC-AUC = 1. The null gives pair i the b- responses of pair perm(i), perm uniform over
    # the 3! = 6 permutations: Cons = (fixed points of perm) / 3, which is 1 (identity, 1 of 6),
    # 1/3 (a transposition, 3 of 6) or 0 (a 3-cycle, 2 of 6) -> null mean = E[fixed points] / 3 = 1/3 and
    # p_null = P(Cons >= 1) = 1/6. With every confidence 0.9, CC-AUC = Cons_0.9 x kappa(0.9) = Cons.
    pairs = [P(f"p{i}", "ABC"[i], "ABC"[i], 0.9, 0.9, 0, "Culture") for i in range(3)]
    letters = {(f"p{i}", 0): (i, i) for i in range(3)}
    out = stats.pair_summary(stats.pair_grid(pairs, letters=letters), n_boot=0, n_perm=6000, seed=2)
    for scope in (None, "Culture"):
        result = out[scope]
        for key in ("consistency", "cc_auc"):
            assert result[key] == 1.0
            assert result[f"{key}_null"] == pytest.approx(1 / 3, abs=0.02)   # Monte Carlo SE 0.004
            assert result[f"{key}_p_null"] == pytest.approx(1 / 6, abs=0.02)  # Monte Carlo SE 0.005
        assert result["n_pairs"] == 3 and result["n_pair_runs"] == 3



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
