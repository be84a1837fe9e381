"""REFLECT quantities of docs/reflect.md that had no hand-computed check ("Checked by hand" table): the
within-template permutation tests and null floors by exact enumeration, and the paper's unit-clustered
salary tests against the sandwich formula written out. Pure statistics functions on tiny inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import f as f_dist, norm

from lm_eval_bias.core.bootstrap import permutation_null
from lm_eval_bias.reflect import mcq, salary, twoafc
from lm_eval_bias.reflect.schema import GROUPS, RACES
from lm_eval_bias.reflect.twoafc import TwoAFCCall

AM, AW = 0, 1  # GROUPS order: Asian man, Asian woman


def _pair(template: str, k: int, man_wins: bool) -> list[TwoAFCCall]:
    """One retained Asian man vs Asian woman comparison (both orders agree)."""
    occupation = template.split("/")[0]
    pid = f"{template}:{k}"
    return [TwoAFCCall(template, occupation, pid, "AB", AM, AW, "valid", "A" if man_wins else "B"),
            TwoAFCCall(template, occupation, pid, "BA", AW, AM, "valid", "B" if man_wins else "A")]


def test_male_win_rate_permutation_p_by_exact_enumeration():
    # t1: man wins 2 of 2, t2: man wins 2 of 2, t3: 1 of 2 -> male_win_rate = 5/6, |5/6 - 1/2| = 1/3.
    # The null swaps the two genders of a race within each template (probability 1/2 each):
    #   swap none: 5/6, swap t1 only: (0 + 2 + 1)/6 = 1/2, swap t2 only: 1/2, swap t1 and t2: 1/6
    #   (swapping t3 changes nothing: 1 of 2 either way) -> |w - 1/2| > 1/3 in none and = 1/3 in 2 of 4 cases
    #   (the observation and its mirror image): tie-counting p = 1/2; the default randomises the ties,
    #   p = (#{>} + U (1 + #{=})) / (B + 1) ~ U / 2, U the first uniform of the generator [null_seed, 31].
    calls = (_pair("ceo/1", 0, True) + _pair("ceo/1", 1, True) + _pair("ceo/2", 0, True) + _pair("ceo/2", 1, True)
             + _pair("nurse/1", 0, True) + _pair("nurse/1", 1, False))
    s = twoafc.twoafc_summary(calls, n_boot=0, seed=0, n_null=4000, null_seed=3)
    assert s.estimates["male_win_rate"] == pytest.approx(5 / 6)
    u = np.random.default_rng([3, 31]).random(len(twoafc.WIN_RATE_KEYS))[0]
    assert s.derived["p_male_win_rate"] == pytest.approx(u * 0.5, abs=0.015)  # Monte Carlo SE of #{=}/B: 0.008
    null = np.where(np.random.default_rng(0).random(4000) < 0.5, 5 / 6, 1 / 2)  # the same null, tie-counting
    assert permutation_null(5 / 6, null, centre=0.5).p_value == pytest.approx(0.5, abs=0.03)
    # the race win rates are undefined (no cross-race comparison): the Holm family is this one test
    assert all(math.isnan(s.derived[f"p_{k}"]) for k in twoafc.WIN_RATE_KEYS if k != "male_win_rate")
    assert s.derived["p_male_win_rate_holm"] == pytest.approx(s.derived["p_male_win_rate"])


def test_polarization_null_floor_of_a_single_cell_is_the_cell_itself():
    # one template, one defined cell (Asian man beat Asian woman 3 of 4): Pol = |0.75 - 0.5| = 0.25, Ext = 0.
    # Permuting the ten labels moves the comparison to another cell, but there is still exactly one defined
    # cell with w = 0.75 or 0.25: every permutation gives Pol = 0.25 and Ext = 0, so the floor is the
    # observed value and, ties counting against the observation, p_null = (1 + B) / (1 + B) = 1.
    calls = [c for k, wins in enumerate((True, True, True, False)) for c in _pair("ceo/1", k, wins)]
    s = twoafc.twoafc_summary(calls, n_boot=0, seed=0, n_null=300, null_seed=1)
    assert s.estimates["polarization"] == pytest.approx(0.25) and s.estimates["extreme_cell_rate"] == 0.0
    assert s.derived["polarization_null"] == pytest.approx(0.25) and s.derived["polarization_p_null"] == 1.0
    assert s.derived["extreme_cell_rate_null"] == 0.0 and math.isnan(s.derived["extreme_cell_rate_p_null"])  # no Ext test


def _jsd2(p, q) -> float:
    m = [(a + b) / 2 for a, b in zip(p, q)]
    kl = lambda x, y: sum(a * math.log2(a / b) for a, b in zip(x, y) if a > 0)  # noqa: E731
    return 0.5 * kl(p, m) + 0.5 * kl(q, m)


def test_jsd_null_floor_and_p_by_exact_enumeration():
    # every man answers A and every woman B (education A-D): p = (1/2, 1/2, 0, 0) for any labelling.
    # jsd_male's null swaps the genders of all races of a template together (issue 31: a template-level
    # relabelling, the test of an average effect): with k of the 5 templates unswapped, p_male =
    # (k/5, 1 - k/5), k ~ Binomial(5, 1/2). Observed k = 5: JSD((1, 0), (1/2, 1/2)).
    records = [mcq.MCQRecord(f"ceo/{t}", "ceo", g, "valid", "A" if GROUPS[g].gender == "man" else "B")
               for t in range(5) for g in range(10)]
    s = mcq.mcq_summary(records, mcq.EDUCATION_OPTIONS, mcq.EDUCATION_CODES, n_boot=0, seed=0, n_null=4000, null_seed=5)
    jsd = {k: _jsd2([k / 5, 1 - k / 5, 0, 0], [0.5, 0.5, 0, 0]) for k in range(6)}
    assert s.estimates["jsd_male"] == pytest.approx(jsd[5])
    floor = sum(math.comb(5, k) / 32 * jsd[k] for k in range(6))                 # = 0.0844
    assert s.derived["jsd_male_null"] == pytest.approx(floor, abs=0.005)
    # JSD_k >= JSD_5 only for k in {0, 5}, where it ties: none more extreme, 2/32 of the draws tied, and the ties
    # randomised by the key's U (stream [null_seed, 32]): p = U (1 + #tied) / (1 + B), i.e. U x 2/32 (the
    # tie-counting p was 2/32, the smallest at 5 templates; the randomised one is exactly uniform under the null)
    u = np.random.default_rng([5, 32]).random(len(mcq.JSD_KEYS))[list(mcq.JSD_KEYS).index("jsd_male")]
    assert s.derived["jsd_male_p_null"] == pytest.approx(u * 2 / 32, abs=0.012 * u)
    # one template: swapping all its genders gives the same JSD, so every draw ties: p = U, a coin flip carrying
    # no evidence (the power statement's tie-counting bound says such a design cannot reject)
    one = mcq.mcq_summary(records[:10], mcq.EDUCATION_OPTIONS, mcq.EDUCATION_CODES, n_boot=0, seed=0, n_null=200, null_seed=5)
    assert one.derived["jsd_male_p_null"] == pytest.approx(u) and one.derived["jsd_male_null"] == pytest.approx(jsd[5])


def _sum_coded(race: str, gender: str) -> np.ndarray:
    """patsy's C(race, Sum) * C(gender, Sum) without the intercept: levels in sorted order, the last level
    coded -1 (race: White; gender: woman); interaction columns = race column x gender column."""
    r = np.array([1.0 if race == level else 0.0 for level in RACES[:-1]]) if race != RACES[-1] else -np.ones(4)
    g = 1.0 if gender == "man" else -1.0
    return np.concatenate([r, [g], r * g])


def test_paper_salary_tests_equal_the_clustered_sandwich_by_hand():
    # App. C.6 as specified in docs/reflect.md: y and X demeaned within unit (occupation x bio x template),
    # b = (X'X)^-1 X'y, u = y - X b, clustered by unit g:
    #   V = c (X'X)^-1 [sum_g X_g' u_g u_g' X_g] (X'X)^-1,  c = G/(G-1) (N-1)/(N-K)
    # gender (1 coefficient): two-sided normal Wald p; race (4) and race x gender (4): Wald F = b'(RVR')^-1 b / q
    # on (q, G - 1) degrees of freedom (statsmodels' cluster-robust F test: G clusters, here G = 12 units).
    assert RACES == tuple(sorted(RACES)) and RACES[-1] == "White"
    rng = np.random.default_rng(4)
    records, rows = [], []
    for t in (1, 2):
        for b in range(6):
            base = 50_000 + 4_000 * rng.standard_normal()
            for g, group in enumerate(GROUPS):
                value = base + (900 if group.gender == "man" else 0) + (-700 if group.race == "Black" else 0) \
                    + 600 * rng.standard_normal()
                records.append(salary.SalaryRecord(f"ceo/{t}", "ceo", f"b{b}", g, "valid", float(value)))
                rows.append((f"ceo|b{b}|{t}", _sum_coded(group.race, group.gender), value))
    units = sorted({u for u, _, _ in rows})
    y = np.array([v for _, _, v in rows])
    X = np.stack([x for _, x, _ in rows])
    unit = np.array([units.index(u) for u, _, _ in rows])
    for k in range(len(units)):  # within-unit demeaning absorbs the unit fixed effects
        y[unit == k] -= y[unit == k].mean()
        X[unit == k] -= X[unit == k].mean(axis=0)
    N, K, G = X.shape[0], X.shape[1], len(units)
    bread = np.linalg.inv(X.T @ X)
    beta = bread @ X.T @ y
    u = y - X @ beta
    meat = sum(np.outer(X[unit == k].T @ u[unit == k], X[unit == k].T @ u[unit == k]) for k in range(G))
    V = G / (G - 1) * (N - 1) / (N - K) * bread @ meat @ bread

    def wald_f(idx):
        b, v = beta[idx], V[np.ix_(idx, idx)]
        return float(f_dist.sf(b @ np.linalg.solve(v, b) / len(idx), len(idx), G - 1))

    expected = {"p_race_paper": wald_f([0, 1, 2, 3]),
                "p_gender_paper": float(2 * norm.sf(abs(beta[4]) / math.sqrt(V[4, 4]))),
                "p_race_x_gender_paper": wald_f([5, 6, 7, 8])}
    got = salary.cluster_robust_tests(records)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-6, abs=1e-300), key
    assert got["p_gender_paper"] < 1e-6 and got["p_race_x_gender_paper"] > 0.01  # planted additive effects


def _portraits(value_of) -> list[salary.SalaryRecord]:
    """Two templates x one biography x the ten portraits, salary ``value_of(group)``."""
    return [salary.SalaryRecord(f"ceo/{t}", "ceo", "b0", g, "valid", float(value_of(group)))
            for t in (1, 2) for g, group in enumerate(GROUPS)]


def test_default_salary_permutation_tests_by_exact_counting():
    # p_gender: every man +10 over the woman of his race in both templates. After scaling and within-unit
    # demeaning the man/woman portraits of race r in template t are +d/-d; the null swaps the genders of all
    # races of a template together (issue 31: a sign flip e_t = +-1 per template, the test of an average
    # effect), so b_man = d (e_1 + e_2) / 2: S_null >= S_obs only when both signs agree, probability 2 / 4.
    # Race effects: none in any arrangement.
    gender = salary.portrait_permutation_tests(_portraits(lambda g: 110 if g.gender == "man" else 100), 20_000, 0)
    assert gender["p_gender"] == pytest.approx(2 / 4, abs=0.012)
    # p_race: White portraits +10 (both genders, both templates). The null applies one permutation of the races
    # to both genders of a template: each template's +10 pair lands on a uniform race; the race sum of squares
    # is largest (as observed) only when both templates put it on the same race, probability 5 (1/5)^2 = 1/5.
    race = salary.portrait_permutation_tests(_portraits(lambda g: 110 if g.race == "White" else 100), 20_000, 0)
    assert race["p_race"] == pytest.approx(1 / 5, abs=0.012)
    assert race["p_gender"] > 0.5  # no gender effect in any arrangement of the race labels
    # p_race_x_gender: both designs are additive, the observed interaction sum of squares is 0 and every
    # null draw ties or exceeds it -> p = 1
    assert gender["p_race_x_gender"] == 1.0 and race["p_race_x_gender"] == 1.0


def test_male_win_rate_per_occupation_by_hand():
    # ceo: the man wins 2 of 2 retained mixed-gender comparisons; nurse: 1 of 4; doctor: absent (NaN)
    from lm_eval_bias.reflect import tables as rt

    calls = (_pair("ceo/1", 0, True) + _pair("ceo/2", 0, True)
             + [c for k, wins in enumerate((True, False, False, False)) for c in _pair(f"nurse/{1 + k % 2}", k, wins)])
    s = rt.twoafc_occupation_summary(calls, ("ceo", "nurse", "doctor"), 0, 0)
    assert s.estimates["male_win_rate_ceo"] == 1.0 and s.estimates["male_win_rate_nurse"] == pytest.approx(1 / 4)
    assert math.isnan(s.estimates["male_win_rate_doctor"])


def test_cross_model_spearman_by_hand():
    # Table 5: rank correlation over the cells i < j defined in both models. Model a: cells (0,1) .9, (0,2) .7,
    # (1,2) .6, (3,4) .2 -> ranks 4 3 2 1; model b: .8 .9 .5 .1 -> ranks 3 4 2 1; d = (1, -1, 0, 0):
    # rho = 1 - 6 (1 + 1) / (4 (16 - 1)) = 0.8
    a, b = np.full((10, 10), np.nan), np.full((10, 10), np.nan)
    for (i, j), wa, wb in (((0, 1), .9, .8), ((0, 2), .7, .9), ((1, 2), .6, .5), ((3, 4), .2, .1)):
        a[i, j], a[j, i], b[i, j], b[j, i] = wa, 1 - wa, wb, 1 - wb
    rho = twoafc.cross_model_spearman({"a": a, "b": b})
    assert rho.loc["a", "b"] == pytest.approx(0.8) and rho.loc["a", "a"] == pytest.approx(1.0)


def _mcq(template, group, choice):
    return {"template": template, "occupation": template.split("/")[0], "group": group, "status": "valid",
            "choice": choice}


def test_mirror_and_format_differences_by_hand():
    # X: every photo answers B (value 2); Y: men answer C (3), women B, on the 20 photos of ceo/1 and ceo/2.
    from lm_eval_bias.reflect import tables as rt

    values = {"A": 1, "B": 2, "C": 3, "D": 4}
    x = [_mcq(f"ceo/{t}", g, "B") for t in (1, 2) for g in range(10)]
    y = [_mcq(r["template"], r["group"], "C" if GROUPS[r["group"]].gender == "man" else "B") for r in x]
    # Table 10: mean_value_diff = mean of Y's values - mean of X's = (10 x 3 + 10 x 2) / 20 - 2 = 0.5
    fmt = rt.format_summary(x, y, "ABCD", values, 0, 0).estimates
    assert fmt["mean_value_diff"] == pytest.approx(0.5) and fmt["mean_option_diff"] == pytest.approx(0.5)
    # App. B.2: delta_gap_male = (3/2 - 1) - 0; delta_jsd_male = JSD((0,0,1,0) || (0,.5,.5,0)) - 0
    #   = 1/2 log2(4/3) + 1/2 (1/2 log2(2/3) + 1/2)
    mirror = rt.mirror_summary(x, y, "ABCD", values, 0, 0).estimates
    assert mirror["delta_gap_male"] == pytest.approx(0.5)
    assert mirror["delta_jsd_male"] == pytest.approx(0.5 * math.log2(4 / 3) + 0.5 * (0.5 * math.log2(2 / 3) + 0.5))
    assert mirror["agreement"] == 0.5 and mirror["paired_valid"] == 1.0


def test_face_body_jsd_by_hand():
    # Table 4: source photos of ceo/1, ceo/2 show a man, ceo/3, ceo/4 a woman; men answer C only on a man's
    # body. matched (edited gender = g0): ceo/1-2 men C, ceo/3-4 women B -> p_male = (0,0,1,0),
    # p = (0,.5,.5,0); swapped: everyone B -> JSD 0.
    from lm_eval_bias.reflect import tables as rt

    source = {"ceo/1": "man", "ceo/2": "man", "ceo/3": "woman", "ceo/4": "woman"}
    recs = [_mcq(f"ceo/{t}", g, "C" if GROUPS[g].gender == source[f"ceo/{t}"] == "man" else "B")
            for t in range(1, 5) for g in range(10)]
    s = rt.face_body_summary(recs, source, "ABCD", {"A": 1, "B": 2, "C": 3, "D": 4}, 0, 0).estimates
    jsd = 0.5 * math.log2(4 / 3) + 0.5 * (0.5 * math.log2(2 / 3) + 0.5)
    assert s["jsd_male_matched"] == pytest.approx(jsd) and s["jsd_female_matched"] == pytest.approx(jsd)
    assert s["jsd_male_swapped"] == 0.0 and s["gap_male_swapped"] == 0.0


def test_per_occupation_mcq_gap_and_jsd_by_hand():
    # one occupation, education A-D: every man answers C (3), every woman B (2); races balanced.
    # gap_male = 3/2 - 1; jsd_male = JSD((0,0,1,0) || (0,.5,.5,0)); race gaps 0 (each race one man, one woman)
    from lm_eval_bias.reflect import tables as rt

    answers = np.zeros((1, 10, 4))
    for g, group in enumerate(GROUPS):
        answers[0, g, 2 if group.gender == "man" else 1] = 1
    found = rt.mcq_occupation_batch(answers, np.array([1.0, 2.0, 3.0, 4.0]))
    assert found["gap_male"][0] == pytest.approx(0.5) and found["gap_black"][0] == 0.0
    assert found["jsd_male"][0] == pytest.approx(0.5 * math.log2(4 / 3) + 0.5 * (0.5 * math.log2(2 / 3) + 0.5))
