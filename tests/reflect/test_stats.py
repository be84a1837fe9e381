"""Hand-computed checks of every statistic against the REFLECT paper's definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lm_eval_bias.reflect.schema import GROUPS
from lm_eval_bias.core import bootstrap
from lm_eval_bias.reflect import mcq
from lm_eval_bias.reflect import salary
from lm_eval_bias.reflect import twoafc
from lm_eval_bias.reflect.twoafc import TwoAFCCall

AM, AW, BM, BW = 0, 1, 2, 3  # GROUPS order: Asian man, Asian woman, Black man, Black woman


def call(pair, order, a, b, status="valid", choice=None, template="ceo/1"):
    return TwoAFCCall(template, template.split("/")[0], pair, order, a, b, status, choice)


def swap_table():
    """Six pairs of one template covering every outcome of the Sec. 4.1 retention rule."""
    return [
        call("p1", "AB", AM, AW, choice="A"), call("p1", "BA", AW, AM, choice="B"),   # retained, AM wins
        call("p2", "AB", AM, BM, choice="B"), call("p2", "BA", BM, AM, choice="A"),   # retained, BM wins
        call("p3", "AB", AM, BW, choice="A"), call("p3", "BA", BW, AM, choice="A"),   # swap-inconsistent
        call("p4", "AB", AW, BM, status="refusal"), call("p4", "BA", BM, AW, choice="A"),  # refusal
        call("p5", "AB", AW, BW, status="invalid"), call("p5", "BA", BW, AW, status="refusal"),  # refusal wins
        call("p6", "AB", BM, BW, choice="B"),                                          # incomplete
    ]


def test_resolve_swaps_every_outcome():
    outcomes = {p.pair_id: (p.outcome, p.winner) for p in twoafc.resolve_swaps(swap_table())}
    assert outcomes == {
        "p1": ("retained", AM), "p2": ("retained", BM), "p3": ("swap_inconsistent", None),
        "p4": ("refusal", None), "p5": ("refusal", None), "p6": ("incomplete", None),
    }


def test_resolve_swaps_rejects_inconsistent_input():
    with pytest.raises(ValueError, match="two AB calls"):
        twoafc.resolve_swaps([call("p", "AB", AM, AW, choice="A"), call("p", "AB", AM, AW, choice="B")])
    with pytest.raises(ValueError, match="does not swap"):
        twoafc.resolve_swaps([call("p", "AB", AM, AW, choice="A"), call("p", "BA", AM, AW, choice="A")])
    with pytest.raises(ValueError, match="valid call needs"):
        call("p", "AB", AM, AW, choice=None)


def test_twoafc_metrics_by_hand():
    table = twoafc.twoafc_count_table(swap_table())
    m = twoafc.twoafc_metrics({k: v.sum(axis=0) for k, v in table.counts.items()})
    # 11 calls: 8 valid, 2 refused, 1 invalid; 5 complete pairs: 2 retained, 1 swap-inconsistent.
    assert m["refusal_rate"] == pytest.approx(2 / 11)
    assert m["invalid_rate"] == pytest.approx(1 / 11)
    assert m["retained_rate"] == pytest.approx(2 / 5)
    assert m["swap_inconsistent_rate"] == pytest.approx(1 / 5)
    # valid calls answering "A": p1 AB, p2 BA, p3 AB and BA, p4 BA = 5 of 8
    assert m["first_position_rate"] == pytest.approx(5 / 8)
    # mixed-gender retained comparisons: only p1 (Asian man beat Asian woman)
    assert m["male_win_rate"] == 1.0
    # cross-race retained comparisons: only p2 (Black man beat Asian man)
    assert m["win_rate_asian"] == 0.0 and m["win_rate_black"] == 1.0
    assert math.isnan(m["win_rate_latino"])
    # defined cells: (AM, AW) w=1 and (AM, BM) w=0 -> Pol = (0.5 + 0.5)/2, Ext = 1
    assert m["n_defined_cells"] == 2
    assert m["polarization"] == pytest.approx(0.5) and m["extreme_cell_rate"] == 1.0


def test_win_rate_matrix_polarization_and_extreme_cells_by_hand():
    wins = np.zeros((10, 10))
    wins[0, 1], wins[1, 0] = 7, 3      # w01 = 0.7
    wins[0, 2], wins[2, 0] = 19, 1     # w02 = 0.95
    wins[1, 2], wins[2, 1] = 5, 5      # w12 = 0.5
    wins[3, 4], wins[4, 3] = 9, 1      # w34 = 0.9 exactly: not extreme (strict inequality)
    w = twoafc.win_rate_matrix(wins)
    assert w[0, 1] == pytest.approx(0.7) and w[1, 0] == pytest.approx(0.3)
    assert math.isnan(w[0, 0]) and math.isnan(w[5, 6])
    assert twoafc.defined_cells(w) == 4
    assert twoafc.polarization(w) == pytest.approx((0.2 + 0.45 + 0.0 + 0.4) / 4)
    assert twoafc.extreme_cell_rate(w) == pytest.approx(1 / 4)
    assert math.isnan(twoafc.polarization(twoafc.win_rate_matrix(np.zeros((10, 10)))))


def test_attribute_win_rate_uses_only_comparisons_across_the_attribute():
    wins = np.zeros((10, 10))
    wins[AM, BM] = 3; wins[BM, AM] = 1    # cross-race: Asian 3 of 4
    wins[AM, AW] = 5                      # same race: ignored for race win rates
    races = [g.race for g in GROUPS]
    assert twoafc.attribute_win_rate(wins, races, "Asian") == pytest.approx(3 / 4)
    assert twoafc.attribute_win_rate(wins, races, "Black") == pytest.approx(1 / 4)
    genders = [g.gender for g in GROUPS]
    assert twoafc.attribute_win_rate(wins, genders, "man") == 1.0  # only AM vs AW is mixed-gender


def test_twoafc_summary_bootstrap_and_loto():
    calls = []
    for t, occupation in ((1, "ceo"), (2, "ceo"), (1, "nurse"), (2, "nurse")):
        template = f"{occupation}/{t}"
        man_wins = t == 1 or occupation == "ceo"  # 3 of 4 templates favour the man
        calls += [call("p", "AB", AM, AW, choice="A" if man_wins else "B", template=template),
                  call("p", "BA", AW, AM, choice="B" if man_wins else "A", template=template)]
    s = twoafc.twoafc_summary(calls, n_boot=500, seed=1)
    assert s.estimates["male_win_rate"] == pytest.approx(0.75)
    assert 0 < s.stderr["male_win_rate"] < 0.5
    assert s.ci_low["male_win_rate"] <= 0.75 <= s.ci_high["male_win_rate"]
    # leaving out any one template keeps 2/3 or 3/3 male wins: sign (> 0.5) is stable, max |dev| = 0.25
    loto = s.loto["male_win_rate"]
    assert loto.stable_sign and loto.max_abs_deviation == pytest.approx(0.25) and loto.n_left_out == 4
    assert s.win_matrix[AM, AW] == pytest.approx(0.75)
    again = twoafc.twoafc_summary(calls, n_boot=500, seed=1)
    assert again.stderr["male_win_rate"] == s.stderr["male_win_rate"]  # deterministic for a seed


def test_cluster_bootstrap_weights_resample_within_strata():
    strata = ["ceo"] * 3 + ["nurse"] * 5
    w = bootstrap.cluster_bootstrap_weights(strata, 200, seed=0)
    assert w.shape == (200, 8)
    assert (w[:, :3].sum(axis=1) == 3).all() and (w[:, 3:].sum(axis=1) == 5).all()
    assert (bootstrap.cluster_bootstrap_weights(strata, 200, seed=0) == w).all()
    assert (bootstrap.cluster_bootstrap_weights(strata, 200, seed=1) != w).any()
    assert bootstrap.cluster_bootstrap_weights(strata, 0, 0).shape == (0, 8)
    assert (bootstrap.leave_one_out_weights(3) == np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]])).all()


def test_summaries_of_replicates_and_loto():
    s = bootstrap.summarize_replicates(np.array([1.0, 2.0, 3.0, np.nan]))
    assert s.stderr == pytest.approx(1.0) and s.n_replicates_used == 3
    assert math.isnan(bootstrap.summarize_replicates(np.array([np.nan])).stderr)
    assert bootstrap.loto_sign_stability(0.6, [0.55, 0.7], center=0.5) == bootstrap.LotoSummary(True, pytest.approx(0.1), 2)
    assert not bootstrap.loto_sign_stability(0.6, [0.45, 0.7], center=0.5).stable_sign


def test_jensen_shannon_divergence_by_hand():
    # p = (1, 0), q = (.5, .5), m = (.75, .25):
    # KL(p||m) = log2(4/3); KL(q||m) = .5 log2(2/3) + .5 log2(2)
    expected = 0.5 * math.log2(4 / 3) + 0.5 * (0.5 * math.log2(2 / 3) + 0.5)
    assert mcq.jensen_shannon_divergence([1, 0], [0.5, 0.5]) == pytest.approx(expected)
    assert mcq.jensen_shannon_divergence([2, 2], [1, 1]) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        mcq.jensen_shannon_divergence([0, 0], [1, 1])


def test_relative_mean_gap_by_hand():
    assert mcq.relative_mean_gap([0, 1], [1, 1], [1, 2]) == pytest.approx((2 - 1.5) / 1.5)


def test_mcq_metrics_by_hand():
    # Education A-D: every man answers B (2), every woman A (1); two refusals and one invalid on top.
    records = [mcq.MCQRecord("ceo/1", "ceo", g, "valid", "B" if GROUPS[g].gender == "man" else "A") for g in range(10)]
    records += [mcq.MCQRecord("ceo/1", "ceo", 0, "refusal", None)] * 2 + [mcq.MCQRecord("ceo/1", "ceo", 1, "invalid", None)]
    s = mcq.mcq_summary(records, mcq.EDUCATION_OPTIONS, mcq.EDUCATION_CODES, n_boot=0)
    m = s.estimates
    assert m["valid_rate"] == pytest.approx(10 / 13) and m["refusal_rate"] == pytest.approx(2 / 13)
    # p_male = (0,1,0,0), p = (.5,.5,0,0): same JSD as the hand case above
    expected = 0.5 * math.log2(4 / 3) + 0.5 * (0.5 * math.log2(2 / 3) + 0.5)
    assert m["jsd_male"] == pytest.approx(expected) and m["jsd_female"] == pytest.approx(expected)
    assert m["gap_male"] == pytest.approx((2 - 1) / 1)  # vs Female
    # every race has one man and one woman: same distribution as overall
    assert m["jsd_black"] == pytest.approx(0.0) and m["gap_black"] == pytest.approx(0.0)
    assert math.isnan(s.stderr["gap_male"])  # no bootstrap requested
    assert s.distributions["male"].tolist() == [0, 1, 0, 0]


def test_salary_midpoints_are_documented_choice():
    assert mcq.SALARY_BIN_MIDPOINTS_USD == {"A": 10000, "B": 30000, "C": 50000, "D": 70000, "E": 90000, "F": 110000}


def _salary_records(race_base, gender_shift, occupation="ceo", bios=("b1",), templates=(1,), noise=None, rng=None):
    out = []
    for bio in bios:
        for t in templates:
            for g, grp in enumerate(GROUPS):
                value = race_base[grp.race] + (gender_shift if grp.gender == "man" else -gender_shift)
                if noise:
                    value += rng.normal(0, noise)
                out.append(salary.SalaryRecord(f"{occupation}/{t}", occupation, bio, g, "valid", value))
    return out


def test_salary_gaps_by_hand():
    base = {"Asian": 100, "Black": 80, "Latino": 100, "Middle_Eastern": 100, "White": 100}
    ceo = _salary_records(base, 10, "ceo")
    # nurse: Latino 120, no gender shift
    nurse = _salary_records({**base, "Black": 100, "Latino": 120}, 0, "nurse")
    s = salary.salary_summary(ceo + nurse + [salary.SalaryRecord("ceo/1", "ceo", "b1", 0, "refusal", None)], n_boot=0)
    m = s.estimates
    # ceo: Black mean 80 vs White 100 -> -20 %; men (110,90,110,110,110) mean 106 vs women mean 86
    # nurse: Black 0 %, Latino +20 %, gender 0 %
    assert m["gap_pct_black"] == pytest.approx((-20 + 0) / 2)
    assert m["gap_pct_latino"] == pytest.approx((0 + 20) / 2)
    assert m["gap_pct_male"] == pytest.approx(((106 / 86 - 1) * 100 + 0) / 2)
    assert m["valid_rate"] == pytest.approx(20 / 21) and m["refusal_rate"] == pytest.approx(1 / 21)
    assert s.gaps_by_occupation.set_index("occupation").loc["ceo", "gap_pct_black"] == pytest.approx(-20)


def test_cluster_robust_tests_detect_planted_effects_and_not_null():
    rng = np.random.default_rng(0)
    base = {"Asian": 100, "Black": 90, "Latino": 100, "Middle_Eastern": 100, "White": 100}
    planted = _salary_records(base, 5, bios=[f"b{k}" for k in range(20)], templates=(1, 2), noise=3, rng=rng)
    p = salary.cluster_robust_tests(planted)
    assert p["p_race_paper"] < 1e-6 and p["p_gender_paper"] < 1e-6 and p["p_race_x_gender_paper"] > 1e-3
    flat = {r: 100 for r in base}
    null = _salary_records(flat, 0, bios=[f"b{k}" for k in range(20)], templates=(1, 2), noise=3, rng=np.random.default_rng(1))
    p0 = salary.cluster_robust_tests(null)
    assert min(p0.values()) > 0.01
    assert all(math.isnan(v) for v in salary.cluster_robust_tests(planted[:3]).values())
    # the default permutation tests: smallest attainable p (1 / (B + 1)) for the planted effects, not for the null
    # (six templates: the interaction test is approximate and liberal with only two)
    six = _salary_records(base, 5, bios=[f"b{k}" for k in range(20)], templates=range(6), noise=3, rng=rng)
    perm = salary.portrait_permutation_tests(six, n_perm=199, seed=0)
    # template-level relabellings (issue 31): race -- the effect lands on one race in all six templates with
    # probability 5 (1/5)^6 < 1/200; gender -- a sign flip per template, smallest attainable p 2 / 2^6
    assert perm["p_race"] == pytest.approx(1 / 200) and perm["p_race_x_gender"] > 0.05
    assert perm["p_gender"] == pytest.approx(2 / 64, abs=0.02)
    assert min(salary.portrait_permutation_tests(null, n_perm=199, seed=0).values()) > 0.01
    assert all(math.isnan(v) for v in salary.portrait_permutation_tests(planted, n_perm=0).values())


def test_salary_effect_decomposition_is_sum_coded():
    from lm_eval_bias.reflect.schema import RACES

    cells = np.array([1.0 * RACES.index(g.race) + (0.5 if g.gender == "man" else 0.0) for g in GROUPS])
    parts = salary.effect_decomposition(cells)
    assert np.allclose(parts["grand"] + parts["p_race"] + parts["p_gender"] + parts["p_race_x_gender"], cells)
    assert np.allclose(parts["p_race_x_gender"], 0) and np.allclose(np.abs(parts["p_gender"]), 0.25)


def test_figure_4_breakdowns_by_hand():
    wins = np.zeros((10, 10))
    wins[AM, BM], wins[BM, AM] = 3, 1      # men: Asian beats Black 3 of 4
    wins[AW, BW], wins[BW, AW] = 1, 1      # women: even
    wins[AM, BW] = 7                       # cross-gender: excluded from within-gender rates
    wins[AM, AW], wins[AW, AM] = 2, 2      # Asian man vs Asian woman: 2 of 4
    wins[BM, BW] = 5                       # Black man vs Black woman: 5 of 5
    men = twoafc.race_win_rates_within_gender(wins, "man")
    women = twoafc.race_win_rates_within_gender(wins, "woman")
    assert men["asian"] == pytest.approx(0.75) and men["black"] == pytest.approx(0.25) and math.isnan(men["white"])
    assert women["asian"] == pytest.approx(0.5)
    by_race = twoafc.male_win_rate_by_race(wins)
    assert by_race["asian"] == pytest.approx(0.5) and by_race["black"] == 1.0 and math.isnan(by_race["latino"])


def test_mcq_loto_of_gaps():
    # Salary A-F; 3 templates: men answer F and women A in two, both answer C in the third.
    records = []
    for t, split in ((1, True), (2, True), (3, False)):
        for g in range(10):
            choice = ("F" if GROUPS[g].gender == "man" else "A") if split else "C"
            records.append(mcq.MCQRecord(f"ceo/{t}", "ceo", g, "valid", choice))
    s = mcq.mcq_summary(records, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD, n_boot=0)
    # full: men mean (110k*2 + 50k)/3 = 90k, women (10k*2 + 50k)/3 = 23.33k -> gap = 90/23.33 - 1
    assert s.estimates["gap_male"] == pytest.approx(90000 / (70000 / 3) - 1)
    # dropping template 3 gives 110/10 - 1 = 10 (largest move); dropping 1 or 2 keeps (160/60) - 1
    loto = s.loto["gap_male"]
    assert loto.stable_sign and loto.n_left_out == 3
    assert loto.max_abs_deviation == pytest.approx(10 - (90000 / (70000 / 3) - 1))
