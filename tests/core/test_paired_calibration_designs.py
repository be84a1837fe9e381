"""The designs that calibrate the leaderboard's paired intervals of the headline keys
(``scripts.calibration.paired.headline_difference_rows``): each truth is what its simulation estimates, and the
pair-weighted Counterfactual VQA curves are the curves of the resampled pairs, as the report recomputes them."""

from __future__ import annotations

import numpy as np
import pytest

from lm_eval_bias.cf_vqa import stats as cf_stats
from scripts.calibration import paired


@pytest.mark.parametrize("key", ["cc_auc", "sr_auc", "consistency"])
def test_pair_weighted_curves_are_the_curves_of_the_resampled_pairs(key):
    (responses, _), _ = paired.cf_vqa_responses(np.random.default_rng(3), (1.5, 1.0), n_pairs=60)
    weights = np.random.default_rng(4).multinomial(60, np.full(60, 1 / 60))  # a bootstrap draw: zeros and repeats
    ids = sorted({r.pair_id for r in responses})
    by_pair = {i: [r for r in responses if r.pair_id == i] for i in ids}
    resampled = [cf_stats.PairResponse(f"{r.pair_id}#{copy}", r.answer_plus, r.answer_minus, r.conf_plus, r.conf_minus,
                                       run=r.run, category=r.category)
                 for i, w in zip(ids, weights) for copy in range(w) for r in by_pair[i]]
    scalar = {"cc_auc": cf_stats.cc_auc, "sr_auc": cf_stats.sr_auc, "consistency": cf_stats.consistency}[key]
    batched = paired._cf_vqa_statistic(responses, key)
    assert batched(weights[None, :])[key][0] == pytest.approx(scalar(resampled), abs=1e-12)
    assert batched(np.ones((1, 60), dtype=np.int64))[key][0] == pytest.approx(scalar(responses), abs=1e-12)
    assert sum(r.answer_plus is None for r in responses) > 0  # refusals (c = 0) are in the curves


def test_salary_and_mcq_gap_truths_are_what_a_large_design_estimates():
    big = paired.salary_counts(np.random.default_rng(5), (1.0, 0.5), per_occupation=300)[0]
    for model, delta in zip(big, (1.0, 0.5)):
        values = paired._batch_statistic(model, "gap_pct_male")(np.ones((1, 1800)))["gap_pct_male"][0]
        assert values == pytest.approx(paired.salary_gap_truth(delta, "gap_pct_male"), abs=0.15)
        black = paired._batch_statistic(model, "gap_pct_black")(np.ones((1, 1800)))["gap_pct_black"][0]
        assert black == pytest.approx(paired.salary_gap_truth(delta, "gap_pct_black"), abs=0.2)
    assert paired.salary_gap_truth(1.0, "gap_pct_male") == pytest.approx(100 * (np.exp(0.05) - 1))
    assert paired.salary_gap_truth(1.0, "gap_pct_black") == pytest.approx(100 * (np.exp(-0.06) - 1))
    big = paired.mcq_counts(np.random.default_rng(6), (0.1, 0.0), per_occupation=1000)[0]
    for model, beta in zip(big, (0.1, 0.0)):
        gap = paired._batch_statistic(model, "gap_male")(np.ones((1, 6000)))["gap_male"][0]
        assert gap == pytest.approx(paired.mcq_gap_truth(beta), abs=0.01)
    assert paired.mcq_gap_truth(0.1) > 0.05 and paired.mcq_gap_truth(0.0) == pytest.approx(0.0, abs=0.005)


def test_rate_and_fact_truths_are_what_the_designs_estimate():
    simulate, truth_of = paired.rate_design(np.full(20_000, 6), [0] * 20_000, 1.0, 0.3)
    (a, b), _ = simulate(np.random.default_rng(7), (-3.0, -2.6))
    for (events, trials), beta in zip((a, b), (-3.0, -2.6)):
        assert events.sum() / trials.sum() == pytest.approx(truth_of(beta), abs=0.003)
    correct = []
    for s in range(300):
        (first, _), _ = paired.fof_objective_choices(np.random.default_rng(s), (1.0, 1.0))
        correct.append(np.mean(first == np.repeat(np.arange(36) % 2, 3)))
        if s == 0:  # the statistic the rows resample is the task's S_fact of these answers: the share correct
            s_fact = paired._fof_statistic(first, "s_fact")(np.ones((1, 108)))["s_fact"][0]
            assert s_fact == pytest.approx(correct[0], abs=1e-12)
    assert np.mean(correct) == pytest.approx(paired.fof_fact_truth(1.0), abs=0.01)
    assert paired.fof_fact_truth(1.0) - paired.fof_fact_truth(0.5) > 0.05


def test_every_headline_difference_the_leaderboard_shows_has_calibration_rows():
    """Each headline key of the report is either shown with the paired interval of a difference, and then a design
    of ``scripts/calibration/paired.py`` has saved default rows for it (coverage of the interval under identical
    models and a real difference, rejection of the tie test), or is a plug-in magnitude (no interval of the
    difference). A headline key added later fails here until it is calibrated or classified."""
    import json
    from pathlib import Path

    from lm_eval_bias.report.card import SECTIONS

    headline = {family: set(keys) for section in SECTIONS for family, keys in section.HEADLINE.items()}
    designs = paired.LEADERBOARD_INTERVAL_DESIGNS
    assert set(designs) | set(paired.LEADERBOARD_MAGNITUDES) == set(headline)
    for family, keys in headline.items():
        assert keys == set(designs.get(family, {})) | set(paired.LEADERBOARD_MAGNITUDES.get(family, ())), family
    rows = json.loads((Path(paired.__file__).parent / "results" / "paired.json").read_text())["rows"]
    saved = {(r["quantity"], r["kind"]) for r in rows if r["role"] == "default"}
    for family, names in designs.items():
        for key, name in names.items():
            for label, kind in (("paired interval of a − b, identical models", "interval"),
                                ("paired test, identical models", "test"),
                                ("paired interval of a − b, real difference", "interval")):
                assert (f"{name}: {label}", kind) in saved, (family, key, label)
