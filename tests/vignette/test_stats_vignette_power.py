"""Power statements and the pooled identity heterogeneity test of ``lm_eval_bias.vignette.stats``
(docs/vignette.md "Identity tests and their power"): values on constructed cases, and one small seeded
check that the heterogeneity test holds its level and has power."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2, ncx2, norm

from lm_eval_bias.vignette import stats as vg


def _choice_table(rows) -> pd.DataFrame:
    """Option table from (pair, left, right, context, left chosen) tuples, one doc each."""
    out = []
    for k, (pair, left, right, context, chose_left) in enumerate(rows):
        for identity, partner, position, selected in ((left, right, 0, chose_left), (right, left, 1, 1 - chose_left)):
            out.append({"doc_id": str(k), "pair_id": str(pair), "identity": identity, "partner": partner,
                        "context": context, "selected": selected, "dimension": "age", "position": position})
    return pd.DataFrame(out)


def test_sign_flip_min_p_is_what_the_test_returns_when_every_pair_agrees():
    # per-cell tests (ties counted): only all-plus and all-minus reach |sum| when every sign agrees -> 2 / 2^n
    assert vg.sign_flip_min_p(0) == 1.0 and vg.sign_flip_min_p(1) == 1.0
    assert vg.sign_flip_min_p(3) == 0.25 and vg._sign_flip_p(np.ones(3)) == 0.25
    assert vg.sign_flip_min_p(12) == 2 / 2 ** 12 == vg._sign_flip_p(np.full(12, 7.0))
    # normal approximation beyond 12 pairs: z = sum |c| / sqrt(sum c^2) <= sqrt(n)
    assert vg.sign_flip_min_p(15) == pytest.approx(2 * norm.sf(np.sqrt(15)))
    assert vg._sign_flip_p(np.full(15, 2.0)) == pytest.approx(vg.sign_flip_min_p(15))
    assert vg._sign_flip_p(np.array([1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15])) > vg.sign_flip_min_p(15)
    # Holm over 329 identities (0.05 / 329) needs 15 contributing pairs
    assert vg.sign_flip_min_p(14) > 0.05 / 329 > vg.sign_flip_min_p(15)


def test_mid_p_floor_is_what_the_identity_tests_return_when_every_pair_agrees():
    # identity-level tests (exact mid-p at any n): the all-agree atom 2 / 2^n counts half -> 2^-n
    assert vg.sign_flip_min_p(0, mid_p=True) == 1.0 and vg.sign_flip_min_p(1, mid_p=True) == 0.5
    for n in (1, 3, 12, 13, 15, 24):
        assert vg.sign_flip_min_p(n, mid_p=True) == 2.0 ** -n
        assert vg._sign_flip_mid_p(np.full(n, 7.0)) == pytest.approx(2.0 ** -n, rel=1e-9)
        # unequal contributions of one sign reach the same floor (the all-agree pattern alone is most extreme)
        assert vg._sign_flip_mid_p(np.arange(1.0, n + 1)) == pytest.approx(2.0 ** -n, rel=1e-9)
    # Holm over 329 identities (0.05 / 329 = 1.52e-4) now needs 13 contributing pairs (2^-13 = 1.22e-4)
    assert vg.sign_flip_min_p(12, mid_p=True) > 0.05 / 329 > vg.sign_flip_min_p(13, mid_p=True)


def _size(p_value, n: int) -> float:
    """Exact rejection rate at 0.05 of ``p_value`` over the 2^n equally likely sign patterns of n equal
    contributions (one answer a pair: the two-sided sign test)."""
    signs = 1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    return float(np.mean([p_value(s.astype(float)) < 0.05 for s in signs]))


def test_exact_size_of_the_mid_p_sign_test_by_hand():
    # T* = 2K - n, K ~ Binomial(n, 1/2); mid-p = P(|T*| > |T|) + P(|T*| = |T|) / 2.
    # n = 5: |T| = 5: p = (2/32) / 2 = 1/32 rejects; |T| = 3: 2/32 + 10/32 / 2 = 7/32 does not -> size 2/32
    # n = 6: |T| = 6: 1/64 rejects; |T| = 4: 2/64 + 12/64 / 2 = 8/64 does not -> size 2/64
    # n = 8: |T| = 6: 2/256 + 16/256 / 2 = 10/256 = 0.039 rejects; |T| = 4: 18/256 + 56/256 / 2 = 46/256
    #        does not -> size 18/256 (above 0.05: the mid-p is not conservative at every n)
    # n = 9: |T| = 7: 2/512 + 18/512 / 2 = 11/512 rejects; |T| = 5: 20/512 + 72/512 / 2 = 56/512 -> 20/512
    # n = 10: |T| = 8: 2/1024 + 20/1024 / 2 rejects; |T| = 6: 22/1024 + 90/1024 / 2 = 67/1024 -> 22/1024
    # n = 11: |T| = 7: 24/2048 + 110/2048 / 2 = 79/2048 = 0.0386 rejects; |T| = 5: 134/2048 + 330/2048 / 2
    #         does not -> size 134/2048
    expected = {5: 2 / 32, 6: 2 / 64, 8: 18 / 256, 9: 20 / 512, 10: 22 / 1024, 11: 134 / 2048}
    for n, size in expected.items():
        assert _size(vg._sign_flip_mid_p, n) == pytest.approx(size, abs=1e-12)
    # counting the ties (P(|T*| >= |T|), the per-cell rule the activity test had): n = 8 rejects only
    # |T| = 8 (2/256; |T| = 6 has 18/256 = 0.07); n = 9: |T| >= 7 (20/512); n = 10: |T| >= 8 (22/1024)
    for n, size in {5: 0.0, 6: 2 / 64, 8: 2 / 256, 9: 20 / 512, 10: 22 / 1024, 11: 24 / 2048}.items():
        assert _size(vg._sign_flip_p, n) == pytest.approx(size, abs=1e-12)
    # the activity-contrast design at the default budget: 8, 9, 10 pairs an activity in 37.3 / 48.1 / 14.6 %
    # of activities (200 seeds of scripts.calibration.vignette.activity_contrast_choices): mid-p size 4.8 %,
    # counting ties 2.5 % (the calibration row before the change: 2.48 %)
    mix = {8: 0.373, 9: 0.481, 10: 0.146}
    assert sum(w * _size(vg._sign_flip_mid_p, n) for n, w in mix.items()) == pytest.approx(0.0482, abs=5e-4)
    assert sum(w * _size(vg._sign_flip_p, n) for n, w in mix.items()) == pytest.approx(0.0248, abs=5e-4)


def test_mid_p_is_exact_beyond_twelve_pairs_and_falls_back_on_the_normal_past_the_support_cap(monkeypatch):
    from scipy.stats import binom

    # 20 equal contributions, 15 plus and 5 minus: T = 10, mid-p = 2 P(K >= 16) + P(K = 15), K ~ Bin(20, 1/2)
    c = np.array([1.0] * 15 + [-1.0] * 5)
    assert vg._sign_flip_mid_p(c) == pytest.approx(2 * binom.sf(15, 20, 0.5) + binom.pmf(15, 20, 0.5), rel=1e-12)
    # unequal lattice contributions (1, 2, 3 in 14 pairs): the exact distribution equals brute force
    c = np.array([3.0, -1, 2, 2, 1, -3, 1, 1, 2, -2, 3, 1, 1, 2])
    signs = 1 - 2 * ((np.arange(2 ** c.size)[:, None] >> np.arange(c.size)) & 1)
    null, t = np.abs(signs @ c), abs(c.sum())
    assert vg._sign_flip_mid_p(c) == pytest.approx(np.mean(null > t) + 0.5 * np.mean(null == t), rel=1e-12)
    assert vg._sign_flip_p(c, 0.5) != pytest.approx(vg._sign_flip_mid_p(c))  # the cell tests' normal path
    # past the support cap: the normal approximation z = |T| / sqrt(sum c^2)
    monkeypatch.setattr(vg, "SIGN_FLIP_MAX_SUPPORT", 8)
    assert vg._sign_flip_distribution(c) is None
    assert vg._sign_flip_mid_p(c) == pytest.approx(2 * norm.sf(t / np.sqrt(np.sum(c ** 2))))


def test_identity_family_power_by_hand():
    # three identities of one dimension, each pair asked once: A beats B in pairs 0-1, C beats A in 2
    table = _choice_table([(0, "A", "B", "x", 1), (1, "B", "A", "x", 0), (2, "A", "C", "x", 0)])
    # answers as given (side_adjust=False): c_Ap = 100 (x - 1/2) / (|A_A| n_opt(A, x)) = +-50 / 3
    raw = vg.identity_pair_tests(table, side_adjust=False)
    assert raw.loc["A", "n_contributing"] == 3 and raw.loc["B", "n_contributing"] == 2
    assert raw.loc["A", "null_sd"] == pytest.approx(np.sqrt(3 * (50 / 3) ** 2))
    # A: c = (+, +, -) 50/3, T = 50/3; |T*| is 50 in 2 of 8 patterns, 50/3 in 6: mid-p = 2/8 + 6/8 / 2
    assert raw.loc["A", "p_value"] == pytest.approx(2 / 8 + 3 / 8)
    # side-adjusted (default): the left person was chosen in 1 of 3 docs, b = 1/3 - 1/2 = -1/6, added to
    # the right person's answer and subtracted from the left's: A's answers 1 + 1/6, 1 - 1/6, 0 + 1/6
    # -> c_A = 100 (2/3, 1/3, -1/3) / 3; S stays the answers' as given (100 x 2/3)
    tests = vg.identity_pair_tests(table)
    assert tests.loc["A", "selection_frequency"] == pytest.approx(200 / 3)
    assert tests.loc["A", "n_contributing"] == 3 and tests.loc["B", "n_contributing"] == 2
    assert tests.loc["C", "n_contributing"] == 1
    assert tests.loc["A", "null_sd"] == pytest.approx(100 / 9 * np.sqrt(6))
    # T = (2 + 1 - 1) 100/9: |T*| over (+-2 +-1 +-1) is 4 (2/8), 2 (4/8), 0 (2/8): mid-p = 2/8 + 4/8 / 2
    assert tests.loc["A", "p_value"] == pytest.approx(0.5)
    power = vg.identity_family_power(tests)
    assert power.n_tests == 3 and power.min_attainable_p == 0.125  # A's three pairs: mid-p floor 2^-3
    assert power.min_attainable_adjusted_p == 0.375 and not power.can_reject
    stderr = np.median(tests["null_sd"])
    assert power.mde == pytest.approx((norm.ppf(1 - 0.05 / 3 / 2) + norm.ppf(0.8)) * stderr)
    assert "cannot reject" in power.statement


def test_heterogeneity_test_by_hand_with_exact_enumeration():
    # two identities, four pairs, each asked 2 questions: the sign-flip null has 2^4 patterns
    rows = []
    for pair, (left, right, chosen_left) in enumerate([("A", "B", (1, 1)), ("B", "A", (0, 0)), ("A", "B", (1, 0)),
                                                       ("B", "A", (0, 1))]):
        rows += [(pair, left, right, f"q{q}", c) for q, c in enumerate(chosen_left)]
    table = _choice_table(rows).drop(columns="position")
    design = vg.pair_design(table)
    c = vg.identity_contributions(design).toarray()  # pairs x identities (A, B)
    z = c.sum(axis=0) / np.sqrt((c ** 2).sum(axis=0))
    q_obs = float((z ** 2).sum())
    flips = np.array(list(itertools.product([1, -1], repeat=4)))
    zs = (flips @ c) / np.sqrt((c ** 2).sum(axis=0))
    exact = float(np.mean((zs ** 2).sum(axis=1) >= q_obs - 1e-9))
    out = vg.identity_heterogeneity_tests(table, n_perm=20000, seed=3)
    assert out.loc["age", "statistic"] == pytest.approx(q_obs)
    assert out.loc["age", "n_identities"] == 2 and out.loc["age", "n_pairs"] == 4
    assert out.loc["age", "p_value"] == pytest.approx(exact, abs=0.01)  # Monte Carlo error at 20k draws
    assert vg.identity_heterogeneity_tests(table, n_perm=0, seed=3)["p_value"].isna().all()
    power = vg.heterogeneity_family_power(out, 20000)
    assert power.min_attainable_p == pytest.approx(1 / 20001) and power.can_reject


def test_chi2_mde_gives_80_percent_power():
    lam = vg._chi2_mde(10, 0.01)
    assert ncx2.sf(chi2.isf(0.01, 10), 10, lam) == pytest.approx(0.8, abs=1e-6)


def _design_table(rng, theta: np.ndarray, n_pairs: int = 120, side: float = 0.1) -> pd.DataFrame:
    """Pairs of 12 identities (random partners, sides alternating), 4 questions each, P(left) = 0.5 +
    side + (theta_L - theta_R) / 2 + pair effect (sd 0.05)."""
    rows = []
    for pair in range(n_pairs):
        a, b = rng.choice(12, size=2, replace=False)
        left, right = (a, b) if pair % 2 == 0 else (b, a)
        p = np.clip(0.5 + side + (theta[left] - theta[right]) / 2 + rng.normal(0, 0.05), 0, 1)
        rows += [(pair, f"id{left}", f"id{right}", f"q{q}", int(rng.random() < p)) for q in range(4)]
    return _choice_table(rows)


def test_heterogeneity_test_holds_its_level_and_detects_a_preference():
    """Seeded check (30 runs each): under no identity preference with a left-side preference and pair
    effects, the test rejects at most a few times; with identities' S spread by +-25 pp it rejects
    in most runs."""
    null = [vg.identity_heterogeneity_tests(_design_table(np.random.default_rng([1, s]), np.zeros(12)), 199, s)
            .loc["age", "p_value"] < 0.05 for s in range(30)]
    assert sum(null) <= 5  # expected 1.5 of 30; P(> 5) < 0.5 % at a true 5 %
    theta = np.linspace(-0.5, 0.5, 12)
    planted = [vg.identity_heterogeneity_tests(_design_table(np.random.default_rng([2, s]), theta), 199, s)
               .loc["age", "p_value"] < 0.05 for s in range(30)]
    assert sum(planted) >= 24


def test_cell_family_power_counts_each_unordered_pair_once():
    # A beats B in three image pairs, A meets C in one: PairComp tests of {A, B} (3 pairs) and {A, C} (1)
    table = _choice_table([(0, "A", "B", "x", 1), (1, "B", "A", "x", 0), (2, "A", "B", "x", 1),
                           (3, "A", "C", "x", 1)])
    tests = vg.pair_comp_tests(table)
    assert tests.loc[("A", "B"), "n_contributing"] == tests.loc[("B", "A"), "n_contributing"] == 3
    assert tests.loc[("A", "C"), "n_contributing"] == 1
    power = vg.cell_family_power(tests)
    # one family (age) of 2 unordered pairs: best p 2 / 2^3, Holm-adjusted 2 * 0.25
    assert power.n_tests == 2 and power.min_attainable_p == 0.25 and power.min_attainable_adjusted_p == 0.5
    assert not power.can_reject and "1 Holm families" in power.statement


def test_side_adjusted_removes_the_overall_left_preference():
    # left chosen in 3 of 4 docs: b_hat = 3/4 - 1/2; left rows lose it, right rows gain it
    table = _choice_table([(0, "A", "B", "x", 1), (1, "B", "A", "x", 1), (2, "A", "C", "x", 1), (3, "C", "A", "x", 0)])
    out = vg.side_adjusted(table)
    left = table["position"] == 0
    assert np.allclose(out.loc[left, "selected"], table.loc[left, "selected"] - 0.25)
    assert np.allclose(out.loc[~left, "selected"], table.loc[~left, "selected"] + 0.25)
    assert out.loc[left, "selected"].mean() == pytest.approx(0.5)  # no side preference left
    assert vg.side_adjusted(table.drop(columns="position")).equals(table.drop(columns="position"))


def test_random_tie_breaking_of_the_null_p_value():
    # a constant metric ties every null draw: the randomised p-value is the key's uniform weight U
    table = _choice_table([(0, "A", "B", "x", 1), (1, "B", "A", "x", 0), (2, "A", "B", "x", 1)])
    design = vg.pair_design(table)

    def constant(r, o):
        return {"a": np.zeros(r.shape[0]), "b": np.zeros(r.shape[0])}

    counted = vg.pair_resampled_summary(design, constant, 0, 99, seed=4)
    assert counted.p_null == {"a": 1.0, "b": 1.0}  # ties counted as exceedances
    rand = vg.pair_resampled_summary(design, constant, 0, 99, seed=4, ties="random")
    u = np.random.default_rng([4, 3]).random(2)
    assert rand.p_null["a"] == pytest.approx(u[0]) and rand.p_null["b"] == pytest.approx(u[1])
    with pytest.raises(ValueError):
        vg.pair_resampled_summary(design, constant, 0, 9, seed=4, ties="mid")
