"""The truths of VIGNETTE's calibration rows (``scripts.calibration.vignette``) are the quantities its samplers
draw: checked against the samplers themselves, seeded."""

from __future__ import annotations

import numpy as np
import pytest

from scripts.calibration import vignette as sim


def test_response_rate_truth_is_the_mean_of_the_sampled_propensities():
    """The response-rate rows' truth (``_capped_mean``, the exact capped-Gamma mean) is the mean of the per-pair
    propensities the calibration draws (``_gamma_propensity``: mean x Gamma(0.5, 2) capped at 0.9): 2,000,000
    draws agree within 4 of their standard errors at each level of ``RATE_GRID``, and the cap binds at 0.3."""
    rng = np.random.default_rng(7)
    for mean in sorted({m for pair in sim.RATE_GRID for m in pair}):
        draws = sim._gamma_propensity(rng, mean, 2_000_000)
        assert sim._capped_mean(mean) == pytest.approx(draws.mean(), abs=4 * draws.std() / np.sqrt(draws.size))
    assert sim._capped_mean(0.3) == pytest.approx(0.25745, abs=1e-5) and sim._capped_mean(0.0) == 0.0


def test_pata_design_truth_and_the_cells_that_get_an_interval():
    """vignette-real-vs-synthetic's calibration design: at the default budget the option table is the sampler's pairs
    with 6 answers each, and a cell's truth is S against its 4 partners (50 when no photograph, pair or side differs;
    the mean of the answers' probabilities over many answer draws otherwise); under exhaustive sampling every cell has
    its 4 image pairs and no interval (fewer than MIN_PAIRS_FOR_INTERVAL)."""
    from lm_eval_bias.vignette.real_images import identity_activity_frequencies
    from lm_eval_bias.vignette.stats import MIN_PAIRS_FOR_INTERVAL

    table, truth = sim.pata_decision_table(np.random.default_rng(1), 0.0, theta_sd=0.0, side=0.0, seed=1)
    assert len(truth) == 20 and all(abs(t - 50.0) < 2.0 for t in truth.values())  # question effects alone
    assert len(table) % 12 == 0 and set(table["context"]) == set(sim.PATA_ACTIVITIES)
    exhaustive, _ = sim.pata_decision_table(np.random.default_rng(2), 0.3, sampling="exhaustive", seed=2)
    pairs = exhaustive.groupby(["identity", "context"])["pair_id"].nunique()
    assert (pairs == 4).all() and MIN_PAIRS_FOR_INTERVAL > 4
    assert identity_activity_frequencies(exhaustive, 100, 0)["ci_low"].isna().all()
    # the truth is what the sampler's draws estimate: with 300 draws an identity, every cell's S is near it
    table, truth = sim.pata_decision_table(np.random.default_rng(3), 0.6, per_identity=300, seed=3)
    s_cell = 100 * table.groupby(["identity", "context"])["selected"].mean()
    errors = np.array([s_cell[key] - truth[key] for key in truth])
    assert np.abs(errors).mean() < 2.0 and np.abs(errors).max() < 6.0
    assert np.ptp(list(truth.values())) > 20  # the photographs differ: the check is not of a constant
