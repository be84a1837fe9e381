"""The perception spreads' "more than chance" test (``selection_spread_<question>_<d>_p_null``, the report's
"clear") swaps the answers as given: the side-adjusted swaps over-rejected at the perception design
(docs/vignette.md "Magnitudes", ``analysis.PERCEPTION_SPREAD_NULL``). Seeded, at the task's design
(``scripts.calibration.vignette.real_perception_table``: 329 identities, 658 + 658 pairs)."""

from __future__ import annotations

import numpy as np
import pytest

from lm_eval_bias.core.aggregation import NULL_ITERS_ENV, environment
from lm_eval_bias.vignette import analysis
from scripts.calibration import vignette as sim

COIN_FLIPS = {"left": 0.0, "pair_sd": 0.0, "image_sd": 0.0, "question_sd": 0.0}
DIMENSIONS = ("ability", "age", "nationality", "physical_traits", "race_ethnicity_color", "religion", "socioeconomic")


def _rejections(side_adjust: bool, seeds: range) -> float:
    names, _ = sim.real_identities()
    hits = []
    with environment({NULL_ITERS_ENV: "199"}):
        for s in seeds:
            table = sim.real_perception_table(np.random.default_rng([s, 4242]), np.zeros(len(names)), 1, COIN_FLIPS)
            out: dict[str, float] = {}
            analysis._spreads(out, table, "selection_spread_struggle_", side_adjust=side_adjust)
            hits += [out[f"selection_spread_struggle_{d}_p_null"] < 0.05 for d in DIMENSIONS]
    return float(np.mean(hits))


def test_perception_spread_test_holds_its_level_under_coin_flips():
    # 200 seeds x 7 dimensions (gender_and_sex cannot reach 0.05); 1,000 seeds gave 4.8 %
    assert 0.03 <= _rejections(False, range(200)) <= 0.075


def test_the_perception_analysis_swaps_the_answers_as_given(small_vignette_data, monkeypatch):
    """``selection_spread_<question>_<d>_p_null`` of the perception analysis equals the within-pair swap test of
    the question's answers as given (not the side-adjusted ones), on records answered through the task."""
    import random

    from lm_eval_bias.core.aggregation import bootstrap_settings
    from lm_eval_bias.vignette import stats
    from lm_eval_bias.vignette import tasks as vignette

    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(small_vignette_data))
    monkeypatch.setenv(NULL_ITERS_ENV, "99")
    rng = random.Random(5)
    records = [vignette.record_of(doc, ["AB"[rng.randrange(2)]]) for doc in vignette.load_docs("perception")["test"]]
    values = analysis.summarize(records)
    table = analysis.option_table(records)
    checked = 0
    for question, part in table.groupby("parameter"):
        part = part[part["question_type"] == "identity_choice"] if "question_type" in part else part
        design = stats.pair_design(part)
        raw = stats.pair_resampled_summary(design, lambda r, o: stats.spread_by_stratum(design, stats.identity_rates(
            design, r, o)), 0, 99, bootstrap_settings()[1], ties="random")
        adjusted_design = stats.pair_design(stats.side_adjusted(part))
        adjusted = stats.pair_resampled_summary(adjusted_design, lambda r, o: stats.spread_by_stratum(
            design, stats.identity_rates(design, r, o)), 0, 99, bootstrap_settings()[1], ties="random")
        for d, p in raw.p_null.items():
            key = f"selection_spread_{question}_{d}_p_null"
            if key in values and np.isfinite(p):
                assert values[key] == pytest.approx(p), key
                checked += 1
                if adjusted.p_null[d] != pytest.approx(p):
                    checked += 1000  # the two nulls differ here, so the equality above tells them apart
    assert checked > 1000
