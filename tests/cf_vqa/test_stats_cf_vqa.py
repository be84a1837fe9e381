"""Counterfactual VQA metrics on small hand-computed pair tables (Eq. 3-12)."""

from __future__ import annotations

import math

import pytest

from lm_eval_bias.cf_vqa import stats as cf_vqa
from lm_eval_bias.cf_vqa.stats import PairResponse as P


def test_consistency_averages_option_order_runs():
    pairs = [P("1", "A", "A", .9, .9, run=0), P("2", "A", "B", .9, .9, run=0),
             P("1", "A", "A", .9, .9, run=1), P("2", "B", "B", .9, .9, run=1),
             P("1", None, None, 0, 0, run=2), P("2", "C", None, .5, 0, run=2)]
    # run 0: 1/2, run 1: 2/2, run 2: both refusals are identical empty answers (1), refusal vs C (0) -> 1/2
    assert cf_vqa.consistency(pairs) == pytest.approx((0.5 + 1.0 + 0.5) / 3)


def test_cc_auc_by_hand_with_ties_and_refusals():
    pairs = [
        P("a", "A", "A", 0.9, 0.8, 0),   # level 0.8, consistent
        P("b", "A", "B", 0.6, 0.7, 0),   # level 0.6, inconsistent
        P("c", "B", "B", 0.6, 0.9, 0),   # level 0.6 (tie with b), consistent
        P("d", None, "A", 0.0, 0.9, 0),  # refusal: never evaluated
    ]
    taus, kappa, cons = cf_vqa.consistency_coverage_curve(pairs)
    assert taus.tolist() == [0.6, 0.8]
    assert kappa.tolist() == [0.75, 0.25]            # 3 of 4 pairs, then 1 of 4
    assert cons.tolist() == pytest.approx([2 / 3, 1.0])
    # steps: kappa in (0.25, 0.75] at Cons 2/3, kappa in (0, 0.25] at Cons 1
    assert cf_vqa.cc_auc(pairs) == pytest.approx(2 / 3 * 0.5 + 1.0 * 0.25)


def test_cc_auc_extremes():
    assert cf_vqa.cc_auc([P("a", "A", "A", 1, 1), P("b", "B", "B", .3, .4)]) == pytest.approx(1.0)
    assert cf_vqa.cc_auc([P("a", None, None, 0, 0), P("b", None, "A", 0, 1)]) == 0.0
    assert math.isnan(cf_vqa.cc_auc([]))


def test_sr_auc_by_hand():
    pairs = [P("a", None, "A", 0.0, 0.5), P("b", "A", "B", 0.5, 0.5)]
    taus, rr, ra = cf_vqa.symmetric_refusal_curve(pairs)
    assert taus.tolist() == [0.0, 0.5, 1.0]
    assert rr.tolist() == [0.25, 1.0, 1.0] and ra.tolist() == [0.5, 0.0, 0.0]
    # points (0.25, 0.5) -> (1, 1): trapezoid area 0.75 * 0.75 = 0.5625, normalised by 1 - 0.25
    assert cf_vqa.sr_auc(pairs) == pytest.approx(0.5625 / 0.75)


def test_sr_auc_symmetric_and_all_refused():
    no_refusal = [P("a", "A", "B", 0.7, 0.7), P("b", "A", "A", 0.4, 0.4)]
    assert cf_vqa.sr_auc(no_refusal) == pytest.approx(1.0)  # equal confidences: never asymmetric
    all_refused = [P("a", None, None, 0, 0), P("b", None, None, 0, 0)]
    assert cf_vqa.sr_auc(all_refused) == 1.0
    assert cf_vqa.empty_answer_rate(all_refused) == 1.0 and cf_vqa.refusal_asymmetry_rate(all_refused) == 0.0


def test_pair_metrics_and_breakdowns():
    pairs = [P("a", "A", "A", .9, .9, category="Demography", subcategory="Age"),
             P("b", None, "A", 0, .9, category="Culture", subcategory="Religion")]
    m = cf_vqa.pair_metrics(pairs)
    assert m["empty_answer_rate"] == 0.25 and m["refusal_asymmetry_rate"] == 0.5 and m["consistency"] == 0.5
    by = cf_vqa.metrics_by(pairs, "category")
    assert set(by) == {"Culture", "Demography"} and by["Demography"]["cc_auc"] == 1.0


def test_invalid_pairs_are_rejected():
    with pytest.raises(ValueError, match="refusal must have confidence 0"):
        P("a", None, "A", 0.3, 0.9)
    with pytest.raises(ValueError, match="outside"):
        P("a", "A", "A", 1.2, 0.9)


def test_category_family_power_statement_by_hand(monkeypatch):
    """Per-category Holm families of Cons / CC-AUC / SR-AUC: smallest permutation p 1 / (B + 1),
    Holm-adjusted over the categories tested; MDE at the first Holm step from the mean category SE."""
    from scipy.stats import norm

    from lm_eval_bias.cf_vqa.analysis import category_power
    from lm_eval_bias.cf_vqa.schema import CATEGORIES, category_key

    out = {}
    for i, c in enumerate(CATEGORIES):
        out[f"consistency_{category_key(c)}_p_null"] = 0.2
        out[f"consistency_{category_key(c)}_stderr"] = 0.01 * (i + 1)
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "1000")
    power = category_power(out)
    m = len(CATEGORIES)
    assert power["consistency_categories_min_attainable_p"] == pytest.approx(1 / 1001)
    assert power["consistency_categories_can_reject"] == 1.0  # 5 / 1001 < 0.05
    se = sum(0.01 * (i + 1) for i in range(m)) / m
    assert power["consistency_categories_mde"] == pytest.approx((norm.ppf(1 - 0.05 / m / 2) + norm.ppf(0.8)) * se)
    assert "cc_auc_categories_can_reject" not in power  # no per-category test of it in the results
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "50")
    assert category_power(out)["consistency_categories_can_reject"] == 0.0  # 5 / 51 > 0.05


def test_category_power_note_in_the_report(monkeypatch):
    """The report prints each per-category family's power sentence beside its Holm p-values; none for a
    run without per-category tests."""
    from lm_eval_bias.cf_vqa.report import _category_power
    from lm_eval_bias.cf_vqa.schema import CATEGORIES, category_key
    from lm_eval_bias.report.render import Part
    from lm_eval_bias.report.runs import TaskRun

    metrics = {}
    for c in CATEGORIES:
        metrics[f"consistency_{category_key(c)}_p_null"] = 0.2
        metrics[f"consistency_{category_key(c)}_stderr"] = 0.02
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "50")
    part = Part()
    _category_power([TaskRun("cf_vqa", metrics, None, None, []), TaskRun("cf_vqa_baep", {}, None, None, [])], part)
    assert len(part.details) == 1
    text = part.details[0].caption
    assert text.startswith("cf_vqa: power of the per-category tests") and "consistency: 5 tests" in text
    assert "cannot reject" in text and "smallest attainable p 0.02" in text  # 1 / 51, Holm x 5 > 0.05
