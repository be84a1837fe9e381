"""REFLECT magnitudes (Pol, Ext, JSD) report a confidence interval for the parameter with no test before it
(issue 31): each interval function on constructed cases, a small seeded coverage check per method, the keys
through the tasks' real aggregation (planted effect and no bias), the template-level relabellings of the
win-rate tests, and the report showing the plug-in value, then "debiased x [lo, hi]", then the null
floor and p."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from lm_eval_bias.core import bootstrap
from lm_eval_bias.reflect import mcq
from lm_eval_bias.reflect import twoafc
from lm_eval_bias.reflect.schema import GROUPS
from scripts.calibration import reflect as sim

B = 200


def test_retired_test_then_interval_rule_is_kept_by_its_name_only():
    reps = np.linspace(0.2, 0.4, 1001)
    basic = (2 * 0.25 - 0.395, 2 * 0.25 - 0.205)
    assert bootstrap.test_then_boundary_interval(0.25, reps, p_null=0.01) == pytest.approx(basic)
    assert bootstrap.test_then_boundary_interval(0.25, reps, p_null=0.2) == pytest.approx((0.0, basic[1]))
    assert not hasattr(bootstrap, "boundary_aware_interval")


def test_mean_abs_deviation_interval_on_constructed_cases():
    rng = np.random.default_rng(0)
    noise = rng.normal(0.0, 0.01, (400, 45))
    # every cell 0.2 from parity, little noise: the interval is tight around 0.2 (grid step 0.0025)
    low, high = bootstrap.mean_abs_deviation_interval(np.full(45, 0.2), noise)
    assert 0.19 <= low <= 0.2 <= high <= 0.21
    # observed cells exactly at parity: theta = 0 is accepted (T = 0 lies below every null draw only if ...
    # the null at 0 is mean |e*| ~ 0.008 > 0, so 0 is rejected as too small a T) -> the interval is the point
    # whose null median is closest, never NaN
    d0 = noise[0]  # a draw of the null itself: 0 must be inside
    low0, high0 = bootstrap.mean_abs_deviation_interval(d0, noise[1:])
    assert low0 == 0.0 and high0 < 0.02
    # the upper end is capped by the metric's bound and the interval needs noise draws
    assert bootstrap.mean_abs_deviation_interval(np.full(45, 0.5), noise)[1] <= 0.5
    assert all(math.isnan(x) for x in bootstrap.mean_abs_deviation_interval(np.full(45, 0.2), np.zeros((1, 45))))


def test_mean_abs_deviation_interval_seeded_coverage_at_a_small_positive_truth():
    # 45 cells w = logistic(c (b_i - b_j)) with Pol = 0.05, template noise sd 0.076 (48 templates): the plug-in
    # floor is ~0.06, the retired rule covered .83 here; 40 seeds, Monte Carlo bounds loose but failing-capable
    rng = np.random.default_rng(1)
    b = np.repeat([0.3, -0.2, 0.1, -0.2, 0.0], 2) + np.tile([0.15, -0.15], 5)
    iu, ju = np.triu_indices(10, 1)
    mu = 1 / (1 + np.exp(-1.0 * (b[iu] - b[ju]))) - 0.5
    mu *= 0.05 / np.abs(mu).mean()
    hits = []
    for _ in range(40):
        d = mu + rng.normal(0, 0.076, 45)
        low, high = bootstrap.mean_abs_deviation_interval(d, rng.normal(0, 0.076, (300, 45)), grid_size=101)
        hits.append(low <= 0.05 <= high)
    assert 0.8 <= np.mean(hits) <= 1.0


def test_pol_profiles_keep_every_cell_within_the_bound_so_large_pols_are_rejected():
    # the scaled profile has mean |mu| = theta exactly with every |mu_c| <= 0.5; past what its cells can carry,
    # the rest goes evenly to the other cells
    shape = np.array([0.3, -0.1, 0.0, 0.0])
    mu = bootstrap._scaled_within_bound(shape, np.array([0.05, 0.2, 0.3]), 0.5)
    assert np.abs(mu).mean(axis=1) == pytest.approx([0.05, 0.2, 0.3], abs=1e-9)
    assert np.abs(mu).max() <= 0.5 + 1e-12
    assert mu[0] == pytest.approx([0.15, -0.05, 0.0, 0.0], abs=1e-9)           # plain scaling below the bound
    assert mu[1] == pytest.approx([0.5, -0.3, 0.0, 0.0], abs=1e-9)             # first cell capped, second grows
    assert mu[2] == pytest.approx([0.5, -0.5, 0.1, 0.1], abs=1e-9)             # both capped: rest spread evenly
    # a run without bias in which one cell lies past the hard threshold by chance: the old scaling tested
    # configurations whose clipped Pol was far below theta and accepted every theta up to 0.5
    rng = np.random.default_rng(3)
    noise = rng.normal(0.0, 0.1, (1000, 45))
    d = rng.normal(0.0, 0.1, 45)
    d[7] = 0.4
    low, high = bootstrap.mean_abs_deviation_interval(d, noise)
    assert low == 0.0 and 0.06 < high < 0.15


def _template_cells(rng, n_templates: int = 48, n_strata: int = 6, n_cells: int = 45, n_boot: int = 400):
    """Cells that are means of independent N(0, 1) per-template contributions (no bias, independent cells),
    and their Rao-Wu template-bootstrap deviations, as the 2AFC tasks build them."""
    strata = [k % n_strata for k in range(n_templates)]
    a = rng.normal(0.0, 1.0, (n_templates, n_cells))
    cells = a.mean(axis=0)
    w = bootstrap.rescaled_bootstrap_weights(strata, n_boot, int(rng.integers(1 << 30)))
    return cells, w @ a / n_templates - cells, n_templates - n_strata


def test_pol_boundary_spread_factor_matches_the_real_spread_and_restores_the_level_at_zero():
    # 45 independent cells, 48 templates in 6 strata (42 df): Var(mean |d_c|) = (1 - 2/pi) / (45 * 48) exactly,
    # while the bootstrap draws also carry the sample correlations' r^2 ~ 1/42 for each of the 45 x 44 pairs
    # (about 1.9 times the variance). The factor must bring the draws' SD to the real one within 5 % (it is
    # first order: 0.78 against the 0.76 needed here; 0.71 before it started from the Gaussian variance
    # rather than the lighter-tailed Rao-Wu draws' and removed the B draws' own correlation noise), and the
    # test of a Pol of 0 from 98 % acceptance to 95 % (150 runs).
    rng = np.random.default_rng(11)
    real_sd = math.sqrt((1 - 2 / math.pi) / (45 * 48))
    ratios, kappas, plain, corrected = [], [], [], []
    for _ in range(150):
        cells, e, df = _template_cells(rng)
        draws = np.abs(e).mean(axis=1)
        kappa = bootstrap.boundary_spread_factor(e, draws, df)
        ratios.append(real_sd / draws.std(ddof=1))
        kappas.append(kappa)
        scale = np.abs(cells).max() * 4  # keep every cell inside the bound
        plain.append(bootstrap.mean_abs_deviation_interval(cells / scale, e / scale, grid_size=41)[0] == 0.0)
        corrected.append(bootstrap.mean_abs_deviation_interval(cells / scale, e / scale, grid_size=41, df=df)[0] == 0.0)
    assert np.mean(kappas) == pytest.approx(np.mean(ratios), rel=0.05)
    assert np.mean(ratios) < 0.8                   # the plain draws are too wide by more than 25 %
    assert np.mean(plain) >= 0.97
    assert 0.90 <= np.mean(corrected) <= 0.985
    assert bootstrap.boundary_spread_factor(e, draws, None) == 1.0
    assert bootstrap.boundary_spread_factor(np.zeros((10, 45)), np.zeros(10), 42) == 1.0


def test_pol_boundary_spread_factor_starts_from_the_gaussian_variance_and_removes_both_correlation_excesses():
    # g(r) = Cov(|X|, |Y|) of a standard bivariate normal, against 400,000 simulated pairs
    rng = np.random.default_rng(4)
    x, z = rng.normal(size=(2, 400_000))
    for r in (-0.5, 0.0, 0.5, 0.9, 1.0):
        y = r * x + math.sqrt(max(1 - r * r, 0.0)) * z
        assert bootstrap._abs_gaussian_covariance(np.array(r)) == pytest.approx(np.cov(np.abs(x), np.abs(y))[0, 1], abs=0.004)
    # Gaussian draws from a fixed covariance with real correlations of 0.2. Without sampled templates (df ->
    # infinity) only the draws' own correlation noise, 1 / (B - 1), is removed and kappa stays near 1; at 42 df
    # it is the formula's share of the draws' variance
    corr = 0.2 * np.ones((20, 20)) + 0.8 * np.eye(20)
    draws_e = rng.multivariate_normal(np.zeros(20), corr, size=4000)
    t = np.abs(draws_e).mean(axis=1)
    assert bootstrap.boundary_spread_factor(draws_e, t, 1e12) == pytest.approx(1.0, abs=0.03)
    sd = draws_e.std(axis=0, ddof=1)
    r = np.corrcoef(draws_e.T)
    pairs = np.outer(sd, sd) * (1 - r ** 2) ** 2
    np.fill_diagonal(pairs, 0)
    v_g = float(sd @ bootstrap._abs_gaussian_covariance(r) @ sd) / 400
    expected = math.sqrt((v_g - pairs.sum() * (1 / 42 + 1 / 3999) / (math.pi * 400)) / np.var(t, ddof=1))
    assert bootstrap.boundary_spread_factor(draws_e, t, 42) == pytest.approx(expected, rel=1e-9)
    assert 0.8 < expected < 0.92


def test_ext_has_no_interval_and_no_test_because_its_estimate_is_exact_away_from_the_cuts():
    # a strong model: 2 of 45 cells far beyond 0.9 and the rest near 0.5, 48 templates. Ext is a step function of
    # the cells: every seed's plug-in is exactly 2/45, the truth, so any interval containing the estimate covers
    # 100 % (no interval can hold 93-97 %), and a model without bias has Ext = 0 under every permutation.
    calls = sim.simulate_2afc(np.random.default_rng(5), sim.group_effects(0.0, {"white": 4.0}), 0.3)
    s = twoafc.twoafc_summary(calls, n_boot=200, seed=1, n_null=200)
    assert s.estimates["extreme_cell_rate"] > 0
    assert math.isnan(s.ci_low["extreme_cell_rate"]) and math.isnan(s.ci_high["extreme_cell_rate"])
    assert math.isnan(s.derived["extreme_cell_rate_p_null"])
    assert np.isfinite(s.derived["extreme_cell_rate_null"]) and np.isfinite(s.derived["extreme_cell_rate_ci_low_paper"])
    assert "no interval" in twoafc.EXT_NO_INTERVAL and "polarization_p_null" in twoafc.EXT_NO_TEST
    null = twoafc.twoafc_summary(sim.simulate_2afc(np.random.default_rng(6), sim.group_effects(0.0, {}), 0.5),
                                 n_boot=0, seed=1, n_null=200)
    assert null.estimates["extreme_cell_rate"] == 0.0 and null.derived["extreme_cell_rate_null"] < 0.001


def test_jsd_design_effect_by_hand():
    # 2 occupations x 3 templates, 10 groups, 2 options; the group = men. By hand: d = p_men - p_women, its
    # linearised between-template covariance within occupation V, and its variance if the answers were independent
    # multinomial draws, M = s_m (1 - s_m) / N_men + s_w (1 - s_w) / N_women with add-1/2 shares s; with 2 options
    # the Rao-Scott design effect tr(M^+ V) / (K' - 1) is V / M in option A, and nu = (6 - 2) x 1.
    rng = np.random.default_rng(11)
    answers = rng.integers(0, 4, size=(6, 10, 2)).astype(float)
    strata = ["a", "a", "a", "b", "b", "b"]
    men = np.asarray([g.gender == "man" for g in GROUPS])
    xm, xw = answers[:, men].sum(1), answers[:, ~men].sum(1)
    n_men, n_women = xm.sum(), xw.sum()
    p_men, p_women = xm.sum(0)[0] / n_men, xw.sum(0)[0] / n_women
    V = 0.0
    for members in ([0, 1, 2], [3, 4, 5]):
        z = [(xm[t, 0] - xm[t].sum() * p_men) / n_men - (xw[t, 0] - xw[t].sum() * p_women) / n_women for t in members]
        V += 3 / 2 * sum((zi - np.mean(z)) ** 2 for zi in z)
    s_m, s_w = (xm.sum(0)[0] + 0.5) / (n_men + 1), (xw.sum(0)[0] + 0.5) / (n_women + 1)
    M = s_m * (1 - s_m) / n_men + s_w * (1 - s_w) / n_women
    deff, nu = mcq.jsd_design_effect(answers, men, strata)
    assert deff == pytest.approx(V / M) and nu == pytest.approx(4.0)
    # identical templates: no between-template variance, design effect 0
    same = np.broadcast_to(answers[:1], answers.shape)
    assert mcq.jsd_design_effect(same, men, strata)[0] == pytest.approx(0.0, abs=1e-12)


def _design_effect_ratio_by_hand(answers, men):
    """S = M^+ V of :func:`mcq.jsd_design_effect` by hand for 6 occupations of 2 consecutive templates."""
    xg, xo = answers[:, men].sum(1), answers[:, ~men].sum(1)
    ng, no = xg.sum(), xo.sum()
    z = (xg - xg.sum(1, keepdims=True) * xg.sum(0) / ng) / ng - (xo - xo.sum(1, keepdims=True) * xo.sum(0) / no) / no
    V = sum(2 * np.outer(z[t] - z[pair].mean(0), z[t] - z[pair].mean(0))
            for pair in np.arange(12).reshape(6, 2) for t in pair)
    k = answers.shape[2]
    sg, so = (xg.sum(0) + 0.5) / (ng + 0.5 * k), (xo.sum(0) + 0.5) / (no + 0.5 * k)
    M = (np.diag(sg) - np.outer(sg, sg)) / ng + (np.diag(so) - np.outer(so, so)) / no
    return np.linalg.pinv(M) @ V


def test_jsd_design_effect_degrees_of_freedom_match_the_spread_of_its_estimate():
    # Satterthwaite: 2 / nu is the squared coefficient of variation of the design effect's estimate. Answers drawn
    # independently (no template effect) at 12 templates in 6 occupations (n = 6 df), 10 groups x 8 answers over
    # 6 options (K' - 1 = 5): over 400 runs 2 / mean(nu) must match the design effect's own CV^2. The plug-in
    # n tr(S)^2 / tr(S^2), recomputed here from the same matrices, averages about half the df (its E tr(S^2)
    # carries tr(A)^2 / n) and misses the spread by a factor of about 2.
    rng = np.random.default_rng(31)
    strata = [o for o in "abcdef" for _ in range(2)]
    men = np.asarray([g.gender == "man" for g in GROUPS])
    probs = np.array([0.1, 0.25, 0.25, 0.2, 0.1, 0.1])
    n = 6
    deffs, nus, plug_ins = [], [], []
    for _ in range(400):
        answers = rng.multinomial(8, probs, size=(12, 10)).astype(float)
        deff, nu = mcq.jsd_design_effect(answers, men, strata)
        S = _design_effect_ratio_by_hand(answers, men)
        a, b = np.trace(S @ S), np.trace(S) ** 2
        # by hand: the unbiased estimators of tr(A^2) and tr(A)^2 (Srivastava 2005), nu clipped to [n, 5 n]
        tr_a2 = n * n / ((n - 1) * (n + 2)) * (a - b / n)
        assert deff == pytest.approx(np.trace(S) / 5)
        assert nu == pytest.approx(np.clip(n * (b - 2 * tr_a2 / n) / tr_a2, n, 5 * n))
        deffs.append(deff)
        nus.append(nu)
        plug_ins.append(n * b / a)
    deffs, nus, plug_ins = np.asarray(deffs), np.asarray(nus), np.asarray(plug_ins)
    cv2 = deffs.var() / deffs.mean() ** 2
    assert deffs.mean() == pytest.approx(1.0, abs=0.05)         # independent answers: no design effect
    assert 2 / nus.mean() == pytest.approx(cv2, rel=0.25)
    assert 2 / plug_ins.mean() > 1.6 * cv2 and (nus >= plug_ins - 1e-9).all()


def test_cell_shares_towards_pooled_by_hand():
    # K / 2 pseudo-answers per cell, spread as the pooled add-1/2 shares: an empty cell answers like everyone
    counts = np.array([[3.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 5.0, 0.0]])
    pooled = (counts.sum(axis=0) + 0.5) / (counts.sum() + 1.5)
    expected = (counts + 1.5 * pooled) / (counts.sum(axis=1, keepdims=True) + 1.5)
    shares = mcq.cell_shares_towards_pooled(counts)
    assert shares == pytest.approx(expected)
    assert shares[1] == pytest.approx(pooled) and shares.sum(axis=1) == pytest.approx(np.ones(3))


def test_cell_shares_are_pulled_towards_their_own_side():
    # With sides, each cell's K / 2 pseudo-answers are spread as its own side's pooled add-1/2 shares
    counts = np.array([[12.0, 0.0, 0.0], [10.0, 2.0, 0.0], [1.0, 5.0, 6.0], [2.0, 6.0, 4.0]])
    sides = np.array([True, True, False, False])
    group = (counts[sides].sum(axis=0) + 0.5) / (counts[sides].sum() + 1.5)
    rest = (counts[~sides].sum(axis=0) + 0.5) / (counts[~sides].sum() + 1.5)
    expected = np.vstack([(counts[:2] + 1.5 * group) / (counts[:2].sum(axis=1, keepdims=True) + 1.5),
                          (counts[2:] + 1.5 * rest) / (counts[2:].sum(axis=1, keepdims=True) + 1.5)])
    shares = mcq.cell_shares_towards_pooled(counts, sides=sides)
    assert shares == pytest.approx(expected) and shares.sum(axis=1) == pytest.approx(np.ones(4))
    # the near-deterministic cell of a side that answers the first option keeps (almost) its point mass; pulled
    # towards everyone's answers it took 5 % of its mass from the other side (the jsd_white failure: 3 of 15)
    assert shares[0, 0] > 0.98 and mcq.cell_shares_towards_pooled(counts)[0, 0] < 0.95
    # an all-True mask is the side-free pull
    assert mcq.cell_shares_towards_pooled(counts, sides=np.ones(4, bool)) == pytest.approx(
        mcq.cell_shares_towards_pooled(counts))


def _heterogeneous_men(rng, n_templates=48):
    """Answers of a design whose men are five cells of fixed size that differ widely: four almost always answer
    the last option, one (and every woman) spreads over all six (the calibration's men at a JSD of 0.10);
    answers independent (no template or portrait excess), one per cell and template."""
    spread = np.array([0.3, 0.2, 0.2, 0.15, 0.1, 0.05])
    top = np.array([0.004, 0.004, 0.004, 0.004, 0.004, 0.98])
    men = np.asarray([g.gender == "man" for g in GROUPS])
    cell_probs = np.stack([top if (m and i // 2 < 4) else spread for i, m in enumerate(men)])
    answers = np.stack([np.stack([rng.multinomial(1, p) for p in cell_probs]) for _ in range(n_templates)])
    return answers.astype(float), men, cell_probs


def test_jsd_design_effect_against_the_cells_is_one_for_independent_answers():
    # A fixed composition of differing cells makes the men's pooled modal share vary far less than one multinomial
    # of the pooled distribution would (measured below: ~0.2 times). Against the cells' own multinomials -- what
    # jsd_inversion_interval simulates -- the design effect of independent answers is ~1 (the add-1/2 pull
    # towards the pooled shares widens the near-deterministic cells' reference a little).
    rng = np.random.default_rng(5)
    strata = [o for o in "abcdef" for _ in range(8)]
    cell_deff, modal = [], []
    for _ in range(150):
        answers, men, cell_probs = _heterogeneous_men(rng)
        shares = mcq.cell_shares_towards_pooled(answers.sum(axis=0))
        cell_deff.append(mcq.jsd_design_effect(answers, men, strata, cell_shares=shares)[0])
        modal.append(answers[:, men, 5].sum() / answers[:, men].sum())
    p = cell_probs[men, 5].mean()
    assert np.var(modal) / (p * (1 - p) / (5 * 48)) < 0.4
    assert np.mean(cell_deff) == pytest.approx(1.0, abs=0.1)


def test_jsd_interval_width_follows_the_real_spread_of_a_fixed_composition():
    # Over 60 runs of the heterogeneous men: the interval's half-width / 1.96 against the plug-in's real SD
    # across the runs. Drawing the men as one multinomial of the pooled distribution (with the mean design
    # effect against it, the method until 30 Nov) gave 1.66 here (and covered this model's JSD in 300 of 300
    # runs); drawing the cells gives 1.27 (97.7 % over 300 runs, 30 Nov), and 1.22 since each cell is pulled
    # towards its own side's answers (1 Dec): still a little wide, because the log-linear path's configurations
    # below the estimate make the near-deterministic cells less so, and their spread larger. On the calibration's model at a JSD of 0.10 (its cells less deterministic) it
    # covers 94.7 % (300 runs of an independent stream).
    rng = np.random.default_rng(8)
    strata = [o for o in "abcdef" for _ in range(8)]
    estimates, half_widths = [], []
    for seed in range(60):
        answers, men, _ = _heterogeneous_men(rng)
        g, r = answers[:, men].sum(axis=(0, 1)), answers[:, ~men].sum(axis=(0, 1))
        estimates.append(mcq.jensen_shannon_divergence(g / g.sum(), (g + r) / (g + r).sum()))
        low, high = mcq.jsd_inversion_interval(answers, men, strata, n_sim=400, seed=seed)
        half_widths.append((high - low) / 2)
    ratio = np.mean(half_widths) / 1.96 / np.std(estimates)
    assert 0.9 < ratio < 1.4


def test_jsd_design_effect_against_the_cells_by_hand():
    # M = sum_c n_c (diag(s_c) - s_c s_c') / N_side^2, S = M^+ V, delta = tr(S) / (K' - 1)
    rng = np.random.default_rng(12)
    answers = rng.multinomial(3, [0.2, 0.3, 0.4, 0.1], size=(12, 10)).astype(float)
    strata = [o for o in "abcdef" for _ in range(2)]
    men = np.asarray([g.gender == "man" for g in GROUPS])
    shares = mcq.cell_shares_towards_pooled(answers.sum(axis=0))
    n_cells = answers.sum(axis=(0, 2))
    ng, no = answers[:, men].sum(), answers[:, ~men].sum()
    M = sum(n / (ng if m else no) ** 2 * (np.diag(c) - np.outer(c, c)) for n, m, c in zip(n_cells, men, shares))
    xg, xo = answers[:, men].sum(1), answers[:, ~men].sum(1)
    z = (xg - xg.sum(1, keepdims=True) * xg.sum(0) / ng) / ng - (xo - xo.sum(1, keepdims=True) * xo.sum(0) / no) / no
    V = sum(2 * np.outer(z[t] - z[pair].mean(0), z[t] - z[pair].mean(0))
            for pair in np.arange(12).reshape(6, 2) for t in pair)
    deff, _ = mcq.jsd_design_effect(answers, men, strata, cell_shares=shares)
    assert deff == pytest.approx(np.trace(np.linalg.pinv(M) @ V) / 3)


def test_jsd_inversion_interval_on_constructed_cases():
    # independent answers from fixed distributions (design effect ~1), 48 templates in 6 occupations, one answer
    # per image: men answer ``group``, women ``other``; the truth is JSD(group || pooled)
    rng = np.random.default_rng(2)
    other = np.array([0.1, 0.2, 0.3, 0.2, 0.1, 0.1])
    group = np.array([0.02, 0.1, 0.3, 0.28, 0.2, 0.1])
    truth = mcq.jensen_shannon_divergence(group, (group + other) / 2)
    men = np.asarray([g.gender == "man" for g in GROUPS])
    strata = [o for o in "abcdef" for _ in range(8)]
    hits = []
    for _ in range(20):
        answers = np.stack([np.stack([rng.multinomial(1, group if m else other) for m in men]) for _ in strata]).astype(float)
        low, high = mcq.jsd_inversion_interval(answers, men, strata, n_sim=300, seed=int(rng.integers(1 << 30)))
        assert 0.0 <= low <= high
        hits.append(low <= truth <= high)
    assert truth > 0.01 and np.mean(hits) >= 0.8
    # the same distribution for everyone: 0 is inside (no evidence of a difference at this size)
    same = np.stack([np.stack([rng.multinomial(1, other) for _ in men]) for _ in strata]).astype(float)
    assert mcq.jsd_inversion_interval(same, men, strata, n_sim=300, seed=1)[0] == 0.0
    # no answer of the group, or no simulated runs: NaN
    assert all(math.isnan(x) for x in mcq.jsd_inversion_interval(same * ~men[None, :, None], men, strata, 300, 1))
    assert all(math.isnan(x) for x in mcq.jsd_inversion_interval(same, men, strata, n_sim=0))


def test_jsd_interval_covers_a_strong_near_deterministic_effect():
    # the calibration's strongest MCQ model (jsd_male .10): Black women answer the lowest bin every time, Black
    # men spread over all bins. The earlier interval (pooled-to-group line plus template-bootstrap deviations)
    # covered jsd_black 81.6 % here (250 seeds, every miss above the truth: its deviations, taken at the observed
    # cells, were too narrow for the configurations below them); the parametric inversion draws each
    # configuration's own multinomial noise
    beta = 40.0 * sim.MCQ_BASE_EFFECT
    truth = sim.truth_mcq(beta, 0.5, n=4000)["jsd_black"]
    hits = []
    for seed in range(24):
        records = sim.simulate_mcq(np.random.default_rng([seed, 7, 48]), beta, 0.5)
        _, strata, counts = mcq.mcq_count_table(records, mcq.SALARY_OPTIONS)
        black = mcq._MASKS["black"]
        low, high = mcq.jsd_inversion_interval(counts["answers"], black, strata, n_sim=300, seed=seed)
        hits.append(low <= truth <= high)
    assert np.mean(hits) >= 0.875


def test_jsd_interval_tests_zero_with_the_exact_boundary_p():
    # a run of the no-bias model at 48 templates: the parametric rule keeps 0 here; an exact test's p-value
    # decides 0 instead when given, and a NaN p-value falls back to the parametric rule
    records = sim.simulate_mcq(np.random.default_rng([3, 11]), sim.group_effects(0.0, {}), 0.5)
    _, strata, counts = mcq.mcq_count_table(records, mcq.SALARY_OPTIONS)
    men = mcq._MASKS["male"]
    parametric = mcq.jsd_inversion_interval(counts["answers"], men, strata, n_sim=300, seed=5)
    assert parametric[0] == 0.0 and parametric[1] > 0.0
    assert mcq.jsd_inversion_interval(counts["answers"], men, strata, 300, 5, boundary_p=float("nan")) == parametric
    kept = mcq.jsd_inversion_interval(counts["answers"], men, strata, 300, 5, boundary_p=0.2)
    assert kept == pytest.approx(parametric)
    # the exact test rejects 0 while every small configuration is kept: the lower end is the path's first step,
    # positive but tiny, and the upper end does not move
    low, high = mcq.jsd_inversion_interval(counts["answers"], men, strata, 300, 5, boundary_p=0.01)
    assert 0.0 < low < 1e-4 and high == pytest.approx(parametric[1], rel=0.02)
    # a clear effect: the boundary's p-value changes nothing once the parametric tails reject small JSDs too
    records = sim.simulate_mcq(np.random.default_rng([3, 12]), 40.0 * sim.MCQ_BASE_EFFECT, 0.5)
    _, strata, counts = mcq.mcq_count_table(records, mcq.SALARY_OPTIONS)
    strong = mcq.jsd_inversion_interval(counts["answers"], men, strata, 300, 5)
    assert strong[0] > 0.03
    assert mcq.jsd_inversion_interval(counts["answers"], men, strata, 300, 5, boundary_p=0.001) == pytest.approx(strong)


def test_jsd_interval_contains_zero_exactly_when_the_relabelling_test_accepts_it():
    # the analysis's default: ci_low == 0 if and only if jsd_<group>_p_null >= .05, in runs on both sides of
    # the test (a small gender effect at 12 templates); in 6 of these 40 intervals the parametric rule alone
    # decides 0 the other way (seeds 9, 14, 15, 18, 19)
    beta = 2.76 * sim.MCQ_BASE_EFFECT
    occupations, per = sim.DESIGNS[12]
    accepted = []
    for seed in range(20):
        records = sim.simulate_mcq(np.random.default_rng([seed, 13]), beta, 0.5, per, 0.0, occupations)
        summary = mcq.mcq_summary(records, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD, n_boot=B, seed=seed,
                                  n_null=B, jsd_interval_keys=("jsd_male", "jsd_black"))
        for key in ("jsd_male", "jsd_black"):
            p_null = summary.derived[f"{key}_p_null"]
            assert (summary.ci_low[key] == 0.0) == (p_null >= 0.05), (seed, key, p_null, summary.ci_low[key])
            accepted.append(p_null >= 0.05)
    assert 0 < sum(accepted) < len(accepted)


def test_per_occupation_jsd_interval_tests_zero_with_the_occupations_relabelling():
    from lm_eval_bias.reflect import tables

    records = [dataclasses.asdict(r) for r in sim.simulate_mcq(np.random.default_rng(21), sim.group_effects(0.0, {}), 0.5)]
    occupations = sorted({r["occupation"] for r in records})
    table = tables.mcq_occupation_summary(records, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD, occupations,
                                          n_boot=B, seed=3)
    _, strata, counts = mcq.mcq_count_table([mcq.MCQRecord.from_dict(r) for r in records], mcq.SALARY_OPTIONS)
    for j, o in enumerate(occupations):
        mine = [t for t, s in enumerate(strata) if s == o]
        answers = counts["answers"][mine]
        null = mcq.relabelled_jsds(answers, B, 3 + j, kinds=("gender",))["gender"]["jsd_male"]
        assert null.shape == (B,)
        u = float(np.random.default_rng([3 + j, 32]).random())
        p = bootstrap.permutation_null(table.estimates[f"jsd_male_{o}"], null, tie_weight=u).p_value
        # the null floor and p-value are reported (a JSD is positive without bias)
        assert table.null[f"jsd_male_{o}"] == pytest.approx(null.mean()) and table.null[f"jsd_male_{o}"] > 0, o
        assert table.p_null[f"jsd_male_{o}"] == pytest.approx(p), o
        expected = mcq.jsd_inversion_interval(answers, mcq._MASKS["male"], [o] * len(mine), B, 3 + j, boundary_p=p)
        assert (table.ci_low[f"jsd_male_{o}"], table.ci_high[f"jsd_male_{o}"]) == pytest.approx(expected), o
        assert (table.ci_low[f"jsd_male_{o}"] == 0.0) == (p >= 0.05), o
    # without relabellings: no null floor, no p-value, and the interval's own simulation decides 0
    bare = tables.mcq_occupation_summary(records, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD, occupations,
                                         n_boot=B, seed=3, n_null=0)
    assert not bare.null and not bare.p_null
    mine = [t for t, s in enumerate(strata) if s == occupations[0]]
    assert (bare.ci_low[f"jsd_male_{occupations[0]}"], bare.ci_high[f"jsd_male_{occupations[0]}"]) == pytest.approx(
        mcq.jsd_inversion_interval(counts["answers"][mine], mcq._MASKS["male"], [occupations[0]] * len(mine), B, 3))
    # a planted gender effect in one occupation: its test rejects and its interval excludes 0
    planted = sim.simulate_mcq(np.random.default_rng(22), 20.0 * sim.MCQ_BASE_EFFECT, 0.5)
    strong = tables.mcq_occupation_summary([dataclasses.asdict(r) for r in planted], mcq.SALARY_OPTIONS,
                                           mcq.SALARY_BIN_MIDPOINTS_USD, occupations, n_boot=B, seed=3)
    for o in occupations:
        assert strong.p_null[f"jsd_male_{o}"] < 0.05 and strong.ci_low[f"jsd_male_{o}"] > 0, o
        assert strong.estimates[f"jsd_male_{o}"] > 3 * strong.null[f"jsd_male_{o}"], o


def test_template_level_relabelings_move_whole_templates():
    genders = [g.gender for g in GROUPS]
    races = [g.race for g in GROUPS]
    perms = bootstrap.template_level_relabelings(genders, races, 4, 50, 0)
    identity = np.arange(10)
    swapped = np.asarray([k + 1 if k % 2 == 0 else k - 1 for k in range(10)])  # GROUPS alternate man, woman
    assert all((row == identity).all() or (row == swapped).all() for row in perms.reshape(-1, 10))
    assert 0 < np.mean([(row == swapped).all() for row in perms.reshape(-1, 10)]) < 1
    race_perms = bootstrap.template_level_relabelings(races, genders, 3, 50, 1)
    for row in race_perms.reshape(-1, 10):  # one race permutation, the same for both genders
        assert [GROUPS[row[k]].gender for k in range(10)] == genders
        assert [GROUPS[row[k]].race for k in range(0, 10, 2)] == [GROUPS[row[k]].race for k in range(1, 10, 2)]
    with pytest.raises(ValueError):
        bootstrap.template_level_relabelings(genders[:9], races[:9], 2, 5, 0)


def _mixed_pairs(template: str, man_wins: bool) -> list:
    """The five within-race man-vs-woman pairs of one template, AB and BA, all won by one gender."""
    out = []
    for r in range(5):
        man, woman = 2 * r, 2 * r + 1
        out += [twoafc.TwoAFCCall(template, template.split("/")[0], f"p{r}", "AB", man, woman, "valid", "A" if man_wins else "B"),
                twoafc.TwoAFCCall(template, template.split("/")[0], f"p{r}", "BA", woman, man, "valid", "B" if man_wins else "A")]
    return out


def test_male_win_rate_test_is_of_the_average_template_effect():
    # men win all 5 comparisons in two templates, women in the third: male_win_rate = 10/15. Flipping whole
    # templates gives 10/15, 5/15, 15/15 or 0/15: |w - 1/2| >= 1/6 in every arrangement -> p = 1 (a per-race
    # relabelling would see 15 independent signs and p ~ 0.3). Of the 8 arrangements 2 are more extreme
    # (15/15, 0/15) and 6 tie with the observation, whose ties are randomised: p = 1/4 + U 3/4 in
    # expectation over the draws, U the first uniform of [null_seed, 31] (0.417 for null_seed 1): 0.56
    calls = _mixed_pairs("ceo/1", True) + _mixed_pairs("ceo/2", True) + _mixed_pairs("ceo/3", False)
    s = twoafc.twoafc_summary(calls, n_boot=0, seed=0, n_null=2000, null_seed=1)
    assert s.estimates["male_win_rate"] == pytest.approx(10 / 15)
    u = np.random.default_rng([1, 31]).random(len(twoafc.WIN_RATE_KEYS))[0]
    assert s.derived["p_male_win_rate"] == pytest.approx(0.25 + 0.75 * u, abs=0.03)


@pytest.fixture
def resampling(monkeypatch):
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", str(B))
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", str(B))
    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_SEED", "7")


def _aggregate(family: str, records: list[dict]) -> dict[str, float]:
    from lm_eval_bias.reflect import tasks as reflect

    return reflect.FAMILIES[family].values(records)  # every key of the family from records (the analysis)


STRONG = sim.group_effects(0.5, {"white": 1.0, "black": -1.0, "latino": 0.5, "middle_eastern": -0.5})


@pytest.mark.parametrize("beta, planted", [(STRONG, True), (sim.group_effects(0.0, {}), False)])
def test_2afc_aggregation_reports_the_parameter_interval_for_pol_and_ext(resampling, beta, planted):
    calls = sim.simulate_2afc(np.random.default_rng(3), beta, 0.5, n_per_occupation=5)   # 30 templates: 24 df
    values = _aggregate("2afc", [dataclasses.asdict(c) for c in calls])
    assert not any(k.endswith(("_debiased_ci_low", "_debiased_ci_high")) for k in values)  # one home per idea
    assert "extreme_cell_rate_debiased" not in values
    table = twoafc.twoafc_count_table(calls)
    cells_reps = twoafc.cell_replicates(table.counts["wins"], table.strata, B, 7)
    total = table.counts["wins"].sum(axis=0)
    iu = np.triu_indices(10, 1)
    won, lost = total[iu], total.T[iu]
    cells = won / (won + lost)
    assert (values["polarization_ci_low"], values["polarization_ci_high"]) == pytest.approx(
        bootstrap.mean_abs_deviation_interval(cells - 0.5, cells_reps - cells))
    assert math.isnan(values["extreme_cell_rate_ci_low"]) and math.isnan(values["extreme_cell_rate_ci_high"])
    assert math.isnan(values["extreme_cell_rate_p_null"])  # twoafc.EXT_NO_TEST
    for key in ("polarization",):
        p_null = values[f"{key}_p_null"]
        assert (p_null < 0.01) if planted else (p_null >= 0.05), (key, p_null)
        low, high = values[f"{key}_ci_low"], values[f"{key}_ci_high"]
        assert 0.0 <= low <= high <= twoafc.MAGNITUDE_BOUNDS[key][1]
        if not planted:
            assert low == 0.0
    if not planted:  # the paper's interval of the plug-in excludes the truth 0; the default does not
        assert values["polarization_ci_low_paper"] > 0.05 and values["polarization_ci_low"] == 0.0
        # 3 templates per occupation (12 between-template df < MIN_INVERSION_DF): no Pol interval
        few = _aggregate("2afc", [dataclasses.asdict(c) for c in sim.simulate_2afc(np.random.default_rng(3), beta, 0.5, 3)])
        assert math.isnan(few["polarization_ci_low"]) and math.isnan(few["polarization_ci_high"])
        assert bootstrap.MIN_INVERSION_DF == 20
    else:  # Pol's truth ~0.27
        assert values["extreme_cell_rate"] > 0
        assert values["polarization_ci_low"] > 0.15


@pytest.mark.parametrize("beta, planted", [(sim.group_effects(1.5, {"black": -2.0}), True),
                                           (sim.group_effects(0.0, {}), False)])
def test_mcq_aggregation_reports_the_parameter_interval_for_jsd(resampling, beta, planted):
    records = [{**dataclasses.asdict(r), "variant": "salary"}
               for r in sim.simulate_mcq(np.random.default_rng(4), beta, 0.5, n_per_occupation=8)]
    values = _aggregate("mcq", records)
    assert not any("_debiased_ci" in k for k in values)
    parsed = [mcq.MCQRecord.from_dict(r) for r in records]
    _, strata, counts = mcq.mcq_count_table(parsed, mcq.SALARY_OPTIONS)
    for key in ("jsd_male", "jsd_black"):
        p_null = values[f"{key}_p_null"]
        assert (p_null < 0.01) if planted else (p_null >= 0.05), (key, p_null)
        group = key.removeprefix("jsd_")
        mask = np.asarray([(g.gender == "man") if group == "male" else (g.race.lower() == group) for g in GROUPS])
        expected = mcq.jsd_inversion_interval(counts["answers"], mask, strata, B, 7, boundary_p=p_null)
        assert (values[f"{key}_ci_low"], values[f"{key}_ci_high"]) == pytest.approx(expected), key
        assert (values[f"{key}_ci_low"] > 0) == planted


def test_mcq_tables_family_reports_the_per_occupation_jsd_null_floor(resampling, monkeypatch):
    # the analysis path (the tables family the CLI and report read): jsd_male_<occupation>_null / _p_null are the
    # summary's, at LM_EVAL_BIAS_NULL_ITERS relabellings; with 0 relabellings they are NaN
    from lm_eval_bias.reflect import tables, tasks

    records = [{**dataclasses.asdict(r), "variant": "salary"}
               for r in sim.simulate_mcq(np.random.default_rng(4), sim.group_effects(0.0, {}), 0.5, n_per_occupation=8)]
    occupations = tasks.PER_OCCUPATION_KEY_OCCUPATIONS
    values = tasks.TABLE_FAMILIES["mcq"].values(records)
    direct = tables.mcq_occupation_summary(records, mcq.SALARY_OPTIONS, mcq.SALARY_BIN_MIDPOINTS_USD, occupations,
                                           n_boot=B, seed=7, n_null=B)
    for o in occupations:
        key = f"jsd_male_{o}"
        assert values[f"{key}_null"] == pytest.approx(direct.null[key]) and values[f"{key}_null"] > 0, o
        assert values[f"{key}_p_null"] == pytest.approx(direct.p_null[key]), o
        assert (values[f"{key}_ci_low"], values[f"{key}_ci_high"]) == pytest.approx((direct.ci_low[key], direct.ci_high[key]))
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "0")
    bare = tasks.TABLE_FAMILIES["mcq"].values(records)
    assert all(math.isnan(bare[f"jsd_male_{o}_{s}"]) for o in occupations for s in ("null", "p_null"))


def test_paper_interval_keys_share_the_metrics_anchor():
    from lm_eval_bias.core.aggregation import base_key

    assert base_key("polarization_ci_low_paper") == "polarization"
    assert base_key("jsd_male_ci_high_paper") == "jsd_male"
    assert base_key("p_race_paper") == "p_race_paper"  # a test's paper variant keeps a row of its own


def test_report_shows_plug_in_then_bias_corrected_interval_then_null_floor():
    from lm_eval_bias.report.intervals import BIAS_CORRECTED_METHOD, interval, key_table, metric
    from lm_eval_bias.report.runs import TaskRun

    metrics = {"polarization": 0.20, "polarization_debiased": 0.15, "polarization_ci_low": 0.09,
               "polarization_ci_high": 0.21, "polarization_ci_low_paper": 0.16, "polarization_ci_high_paper": 0.27,
               "polarization_null": 0.08, "polarization_p_null": 0.004, "n_templates": 8.0,
               "extreme_cell_rate": 0.2, "extreme_cell_rate_ci_low": math.nan, "extreme_cell_rate_ci_high": math.nan}
    run = TaskRun("focus_2afc_income", metrics, None, None, [])
    html = metric("reflect", run, "polarization").html()
    plug_in, corrected, ci, null = (html.index(s) for s in ("0.20", "debiased 0.15", "[0.09, 0.21]", "null floor 0.08"))
    assert plug_in < corrected < ci < null and "p(more than chance) 0.004" in html
    assert "0.20</span> <span class=\"ci\"" not in html  # the plug-in is never followed by a bracket not its own
    assert interval(run, "polarization").reason == "no interval: plug-in magnitude"  # e.g. the leaderboard cell
    own = interval(run, "polarization_debiased")
    assert (own.low, own.high, own.method) == (0.09, 0.21, BIAS_CORRECTED_METHOD)
    table = key_table(run)
    assert (table.loc["polarization_debiased", "ci95_low"], table.loc["polarization_debiased", "ci95_high"]) == (0.09, 0.21)
    assert math.isnan(table.loc["polarization", "ci95_low"]) and "polarization_ci_low_paper" not in table.index
    # Ext has no interval (a step function of the cells): the report says why, never an interval of the plug-in
    ext = interval(run, "extreme_cell_rate")
    assert not ext.ok and ext.reason == "no interval: step function of the cells"
    assert "[" not in metric("reflect", run, "extreme_cell_rate").html().split("extreme_cell_rate", 1)[-1].split("(")[0]


def test_mean_abs_gap_has_no_interval_only_its_null_floor():
    # mean |Gap%| over six occupations: positive without any gap; the profiled inversion covered 89-93 % in the
    # calibration, so neither the plug-in's interval nor one for the parameter is shown
    from dataclasses import asdict

    from lm_eval_bias.reflect import tables

    records = sim.simulate_salary(np.random.default_rng(3), np.zeros(10), 0.03, 4, 10)
    s = tables.salary_table_summary([asdict(r) for r in records], 50, 1, 50)
    for key in tables.MEAN_ABS_KEYS:
        assert s.estimates[key] > 0 and math.isnan(s.ci_low[key]) and math.isnan(s.ci_high[key])
        assert np.isfinite(s.null[key]) and np.isfinite(s.p_null[key])
    assert "no interval" in tables.MEAN_ABS_NO_INTERVAL
