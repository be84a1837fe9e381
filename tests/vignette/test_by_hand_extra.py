"""VIGNETTE quantities of docs/vignette.md that had no hand-computed check ("Checked by hand" table):
the per-identity tests (pair-level sign flip and the paper's Fisher test, with Holm), the vision-vs-text
tests and the per-question perception spreads. Pure statistics functions on tiny tables."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy.stats import norm

from lm_eval_bias.vignette import stats as vg

COLUMNS = ["doc_id", "pair_id", "identity", "context", "partner", "selected", "dimension", "parameter"]


def _doc(pair, left, right, context, chosen, parameter="", dimension="age"):
    doc = f"{pair}|{context}|{parameter}"
    return [(doc, pair, left, context, right, int(chosen == left), dimension, parameter),
            (doc, pair, right, context, left, int(chosen == right), dimension, parameter)]


def _table(blocks):
    return pd.DataFrame([row for block in blocks for row in block], columns=COLUMNS)


def test_identity_tests_pair_level_and_the_papers_fisher_by_hand():
    # three image pairs A|B (one doc each), A chosen every time: S(A) = 100, S(B) = 0.
    # Pair-level test: c_p = 100 (1 - 1/2) / 3 per pair, 3 pairs of one sign: 2 of the 2^3 sign patterns
    # reach |sum| and none exceeds it -> mid-p = 0 + (2/8) / 2 = 1/8 for A and for B; Holm over the two:
    # sorted (1/8, 1/8) x (2, 1) -> 1/4, 1/4.
    # Paper (Fisher, every answer independent): A selected 3 / not 0 vs the others 0 / 3,
    # two-sided p = 2 / C(6, 3) = 1/10; Holm: 2/10 for both.
    tests = vg.identity_pair_tests(_table([_doc(f"p{k}", "A", "B", "cook", "A") for k in range(3)]))
    assert tests.loc["A", "selection_frequency"] == 100.0 and tests.loc["B", "selection_frequency"] == 0.0
    assert tests.loc["A", "n_pairs"] == 3
    assert tests["p_value"].tolist() == pytest.approx([0.125, 0.125])
    assert tests["p_holm"].tolist() == pytest.approx([0.25, 0.25])
    assert tests["p_paper"].tolist() == pytest.approx([0.1, 0.1])
    assert tests["p_paper_holm"].tolist() == pytest.approx([0.2, 0.2])


def test_vision_text_delta_and_tests_by_hand():
    # the same three pairs asked with the image (A chosen every time) and as text (B chosen every time):
    # delta(A) = S_vision - S_text = 100 - 0; per pair d_p = 1 - 0 -> sign-flip mid-p = (2/8) / 2 = 1/8.
    # Paper's z-test of pooled counts, 3/3 vs 0/3: pooled share 1/2, SE sqrt(1/2 1/2 (1/3 + 1/3)) = 0.408,
    # z = 1 / 0.408 = 2.449, p = 2 (1 - Phi(2.449)) = 0.0143.
    vision = _table([_doc(f"p{k}", "A", "B", "cook", "A") for k in range(3)])
    text = _table([_doc(f"p{k}", "A", "B", "cook", "B") for k in range(3)])
    out = vg.vision_text_tests(vision, text)
    assert out.loc["A", "delta"] == 100.0 and out.loc["B", "delta"] == -100.0
    assert out.loc["A", "p_value"] == pytest.approx(0.125) and out.loc["A", "n_pairs"] == 3
    z = 1 / math.sqrt(0.5 * 0.5 * (1 / 3 + 1 / 3))
    assert out.loc["A", "p_paper"] == pytest.approx(2 * norm.sf(z))
    assert out.loc["A", "p_holm"] == pytest.approx(0.25)
    # power of the sign-flip family: 3 contributing pairs each -> smallest mid-p 2^-3 = 1/8, Holm x 2 = 1/4:
    # it cannot reject; sign-flip sd of the mean d: 100 sqrt(3) / 3 pp
    assert out.loc["A", "n_contributing"] == 3 and out.loc["A", "null_sd"] == pytest.approx(100 * math.sqrt(3) / 3)
    power = vg.identity_family_power(out)
    assert not power.can_reject and power.min_attainable_p == pytest.approx(0.125)
    assert power.min_attainable_adjusted_p == pytest.approx(0.25) and "cannot reject" in power.statement
    assert power.mde == pytest.approx((norm.ppf(1 - 0.05 / 4) + norm.ppf(0.8)) * 100 * math.sqrt(3) / 3)
    # a pair answered alike in both tasks contributes d = 0: it does not lower the smallest p
    same = vg.vision_text_tests(_table([_doc(f"p{k}", "A", "B", "cook", "A") for k in range(4)]),
                                _table([_doc(f"p{k}", "A", "B", "cook", "A" if k == 3 else "B") for k in range(4)]))
    assert same.loc["A", "n_pairs"] == 4 and same.loc["A", "n_contributing"] == 3


def test_fisher_family_power_by_hand():
    # two identities, A chosen in all n pairs: the most extreme table [[n, 0], [0, n]] has p = 2 / C(2n, n);
    # the per-test SE is 100 sqrt(1/4 / n) pp (n answers about each identity)
    for n, can in ((3, False), (6, True)):
        table = _table([_doc(f"p{k}", "A", "B", "cook", "A" if k % 2 else "B") for k in range(n)])
        power = vg.fisher_family_power(table)
        assert power.n_tests == 2 and power.min_attainable_p == pytest.approx(2 / math.comb(2 * n, n))
        assert power.can_reject is can                     # Holm: 2 x 0.1 = 0.2 at n = 3; 2 x 2/924 at n = 6
        assert power.mde == pytest.approx((norm.ppf(1 - 0.05 / 4) + norm.ppf(0.8)) * 100 * math.sqrt(0.25 / n))


def test_perception_spread_per_question_by_hand():
    # perception: selection_spread_<question>_<dimension> = max - min over the dimension's identities of S
    # on that question's identity-choice docs only.
    # struggle: old chosen in cooking and cycling -> S(old) = 100, S(young) = 0 -> spread 100;
    # capability: old chosen 1 of 2 in cycling and 0 of 1 in cooking -> S(old) = (50 + 0)/2 = 25,
    # S(young) = (50 + 100)/2 = 75 -> spread 50.
    table = _table([_doc("p1", "old", "young", "cooking", "old", "struggle"),
                    _doc("p2", "young", "old", "cycling", "old", "struggle"),
                    _doc("p3", "old", "young", "cooking", "young", "capability"),
                    _doc("p4", "old", "young", "cycling", "old", "capability"),
                    _doc("p5", "young", "old", "cycling", "young", "capability")])
    spreads = {}
    for question in ("struggle", "capability"):  # as lm_eval_bias.vignette.tasks splits the perception docs
        design = vg.pair_design(table[table["parameter"] == question])
        spreads[question] = vg.spread_by_stratum(design, vg.identity_rates(design, *vg.observed_counts(design)))["age"][0]
    assert spreads == {"struggle": pytest.approx(100.0), "capability": pytest.approx(50.0)}


def test_paradigm_score_intervals_by_hand():
    # decision only, 12 image pairs of one dimension, one doc each: old chosen in 9 -> D(old person) = 75.
    # Equal pairs, one stratum: jackknife SE of the share = sd(ddof=1) / sqrt(12) = sqrt(12/11 * .75 * .25 / 12);
    # one answer per pair, so the interval is the mid-p binomial interval of 9 of 12 (its ends solve
    # P(X > 9) + P(X = 9) / 2 = 0.025 and P(X < 9) + P(X = 9) / 2 = 0.025), the young person's 100 - it reversed.
    import math

    from scipy.optimize import brentq
    from scipy.stats import binom

    from lm_eval_bias.vignette import paradigms as vp
    from tests.vignette.test_vignette_paradigms import _option

    rows = [(f"d{k}", f"p{k}", "male", "old man", "young man", "old man" if k < 9 else "young man", "Cooking",
             "ability", "identity") for k in range(12)]
    out = vp.paradigm_score_intervals({"decision": _option(rows, "decision")}, None, n_boot=400, seed=1)
    old, young = ("age", "old person"), ("age", "young person")
    assert out["estimate"].loc[old, "decision"] == pytest.approx(75.0)
    se = math.sqrt(12 / 11 * 0.75 * 0.25 / 12)
    low = 100 * brentq(lambda t: binom.sf(9, 12, t) + binom.pmf(9, 12, t) / 2 - 0.025, 0.01, 0.99)
    high = 100 * brentq(lambda t: binom.cdf(8, 12, t) + binom.pmf(9, 12, t) / 2 - 0.025, 0.01, 0.99)
    assert out["stderr"].loc[old, "decision"] == pytest.approx(100 * se)
    assert (out["ci_low"].loc[old, "decision"], out["ci_high"].loc[old, "decision"]) == (pytest.approx(low),
                                                                                          pytest.approx(high))
    assert out["ci_low"].loc[young, "decision"] == pytest.approx(100 - high)  # 25 = 100 - 75, mirrored


def test_significance_counts_by_hand(monkeypatch):
    # decision docs, 13 image pairs A|B (one doc each), A chosen every time, A on the left in the 7 even
    # pairs and on the right in the 6 odd ones (as the sampler alternates an anchor's side). The left
    # person was chosen in 7 of 13 docs: side preference b = 7/13 - 1/2 = 1/26, subtracted from the left
    # person's answer and added to the right's (stats.side_adjusted): A's contributions are
    # 100 (1 - 1/26 - 1/2) and 100 (1 + 1/26 - 1/2), all positive, so the exact mid-p is half the
    # all-agree atom, 2^-13 = 1.2e-4 for A and B; Holm x 2 = 2.4e-4 -> n_identities_significant = 2.
    # Fisher: [[13, 0], [0, 13]], p = 2 / C(26, 13) = 1.9e-7 -> 2.
    # PairComp head-to-head (A, B) and (B, A): one test (answers as given, 13 > 12 pairs: normal
    # approximation z = sqrt(13), p = 3.1e-4), significant, counted twice -> 2.
    # With 3 pairs (A left, right, left): b = 2/3 - 1/2 = 1/6, A's contributions again all positive:
    # mid-p = 2^-3 = 1/8 (Holm 1/4) and Fisher p = 1/10 (Holm 1/5): nothing significant; the smallest
    # attainable mid-p, 1/8, is above Holm's first threshold .05 / 2, so the sign-flip families cannot
    # reject at all and their counts are NaN (not a "0 significant" that would read as "no bias"). The
    # paper's Fisher family likewise: its most extreme table with these margins, [[3, 0], [0, 3]], has
    # p = 2 / C(6, 3) = 0.1, Holm x 2 = 0.2 > .05, so its count is NaN too, while at 13 pairs its smallest
    # attainable p is 2 / C(26, 13) and it can reject. (With A on the left in every pair, A's choices
    # could not be told from a left-side preference: every side-adjusted contribution is 0 and p = 1.)
    from lm_eval_bias.vignette import tasks as vignette
    from tests.vignette.test_stats_vignette_pairs import _records

    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "0")
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "0")
    for n_pairs, expected in ((13, 2.0), (3, math.nan)):
        table = _table([_doc(f"p{k}", *(("A", "B") if k % 2 == 0 else ("B", "A")), "cook", "A")
                        for k in range(n_pairs)]).drop(columns="parameter")
        out = vignette.summarize(_records(table))
        assert (out["n_pairs"], out["n_identities"], out["selection_spread_age"]) == (n_pairs, 2.0, 100.0)
        assert out["n_identities_significant_paper"] == expected or math.isnan(expected), n_pairs
        assert out["n_identities_significant_paper_min_attainable_p"] == pytest.approx(
            2 / math.comb(2 * n_pairs, n_pairs)), n_pairs
        assert out["n_identities_significant_paper_can_reject"] == float(n_pairs == 13)
        assert out["n_identities_significant_min_attainable_p"] == pytest.approx(2.0 ** -n_pairs)
        side = (n_pairs + 1) // 2 / n_pairs - 0.5
        table = table.assign(position=[0, 1] * n_pairs)
        tests = vg.identity_pair_tests(table.assign(parameter="ability"))
        assert tests.loc["A", "p_value"] == pytest.approx(2.0 ** -n_pairs)
        assert tests.loc["A", "null_sd"] == pytest.approx(100 / n_pairs * math.sqrt(
            (n_pairs + 1) // 2 * (0.5 - side) ** 2 + n_pairs // 2 * (0.5 + side) ** 2))
        if n_pairs == 13:
            assert out["n_identities_significant"] == out["n_paircomp_cells_significant"] == expected
            assert out["n_identities_significant_can_reject"] == out["n_paircomp_cells_significant_can_reject"] == 1.0
        else:
            assert math.isnan(out["n_identities_significant"]) and math.isnan(out["n_paircomp_cells_significant"])
            assert math.isnan(out["n_identities_significant_paper"])
            assert out["n_identities_significant_can_reject"] == out["n_paircomp_cells_significant_can_reject"] == 0.0
