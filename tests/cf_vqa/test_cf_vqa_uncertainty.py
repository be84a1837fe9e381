"""Counterfactual VQA uncertainty and robustness: the vectorised pair bootstrap and permutation null
against the reference formulas, planted models (an attribute-flipping model and a uniform-random
answerer), truncated answers, run settings, the tiny offline CLIP retriever and the relevance scale."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lm_eval_bias.cf_vqa import stats
from lm_eval_bias.cf_vqa.stats import PairResponse as P

CATEGORIES = ("Demography", "Culture", "Environment", "Behavior", "Aesthetic")
LETTERS = "ABCD"


def _simulate(n_pairs: int, seed: int, flip: float = 0.0, random_answers: bool = False, runs: int = 3):
    """Pairs of a planted model: on each pair the model has a preferred option (uniform over pairs,
    kept across runs as a presented letter); b- moves to another option with probability ``flip``.
    ``random_answers``: both sides answer uniformly at random (a model that ignores the image pair).
    Confidences from {0.6, 0.8, 0.9}."""
    rng = np.random.default_rng(seed)
    pairs, letters = [], {}
    for i in range(n_pairs):
        pid, cat = f"p{i}", CATEGORIES[i % len(CATEGORIES)]
        pref = int(rng.integers(4))
        for r in range(runs):
            if random_answers:
                a, b = int(rng.integers(4)), int(rng.integers(4))
            else:
                a = pref
                b = (pref + int(rng.integers(1, 4))) % 4 if rng.random() < flip else pref
            ca, cb = (float(rng.choice([0.6, 0.8, 0.9])) for _ in range(2))
            pairs.append(P(pid, LETTERS[a], LETTERS[b], ca, cb, r, cat))
            letters[(pid, r)] = (a, b)
    return pairs, letters


def test_vectorised_metrics_equal_the_reference_formulas_on_resampled_pairs():
    rng = np.random.default_rng(0)
    for trial in range(15):
        pairs = []
        for i in range(int(rng.integers(3, 25))):
            for r in range(3):
                sides = [(None, 0.0) if rng.random() < 0.2 else (LETTERS[rng.integers(4)], float(rng.choice([.3, .7, 1.])))
                         for _ in range(2)]
                pairs.append(P(f"p{i}", sides[0][0], sides[1][0], sides[0][1], sides[1][1], r, CATEGORIES[i % 2]))
        grid = stats.pair_grid(pairs)
        weights = rng.integers(0, 3, size=(3, len(grid.pair_ids)))
        weights[:, 0] = 1
        got = stats.grid_metrics(grid, weights)
        for b in range(3):  # a bootstrap replicate = the pair list with pairs repeated by their weight
            drawn = [P(f"{p.pair_id}#{c}", p.answer_plus, p.answer_minus, p.conf_plus, p.conf_minus, p.run, p.category)
                     for p in pairs for c in range(weights[b, grid.pair_ids.index(p.pair_id)])]
            for key, fn in (("consistency", stats.consistency), ("cc_auc", stats.cc_auc), ("sr_auc", stats.sr_auc),
                            ("refusal_asymmetry_rate", stats.refusal_asymmetry_rate)):
                assert got[key][b] == pytest.approx(fn(drawn), abs=1e-12), (trial, key)


def test_permutation_moves_b_minus_within_category_only():
    strata = np.array([0, 0, 1, 1, 1, 2])
    donors = stats.permuted_minus(strata, 50, seed=3)
    assert (strata[donors] == strata[None, :]).all()
    assert all(sorted(row) == list(range(6)) for row in donors.tolist())
    assert (donors[:, 5] == 5).all()  # a category of one pair has nothing to swap with


def test_attribute_flipping_model_low_consistency_above_the_null_floor():
    pairs, letters = _simulate(400, seed=11, flip=0.5)
    out = stats.pair_summary(stats.pair_grid(pairs, letters=letters), n_boot=400, n_perm=400, seed=5)[None]
    truth = 0.5  # b- keeps the preferred option with probability 1 - flip
    assert out["consistency"] == pytest.approx(truth, abs=0.04)
    assert out["consistency_ci_low"] < truth < out["consistency_ci_high"]
    assert 0.005 < out["consistency_stderr"] < 0.03
    assert out["consistency_null"] == pytest.approx(0.25, abs=0.03)  # preferred options spread over 4 letters
    assert out["consistency_p_null"] < 0.01 and out["cc_auc_p_null"] < 0.01
    assert out["n_pairs"] == 400 and out["n_pair_runs"] == 1200
    per_category = stats.pair_summary(stats.pair_grid(pairs, letters=letters), 200, 200, 5)["Culture"]
    assert per_category["n_pairs"] == 80 and per_category["consistency_ci_low"] < truth < per_category["consistency_ci_high"]


def test_uniform_random_answerer_sits_at_chance_and_the_null_does_not_reject():
    pairs, letters = _simulate(400, seed=2, random_answers=True)
    out = stats.pair_summary(stats.pair_grid(pairs, letters=letters), n_boot=400, n_perm=400, seed=9)[None]
    assert out["consistency"] == pytest.approx(0.25, abs=0.03)
    assert out["consistency_ci_low"] < 0.25 < out["consistency_ci_high"]
    for key in stats.NULL_METRICS:
        assert out[f"{key}_null"] == pytest.approx(out[key], abs=0.03)
        assert out[f"{key}_p_null"] > 0.05
    assert out["sr_auc"] > 0.6  # SR-AUC is far from 0 without any link: why it needs its floor


def test_no_interval_with_too_few_pairs_and_no_null_without_letters():
    pairs, letters = _simulate(3, seed=1)
    out = stats.pair_summary(stats.pair_grid(pairs, letters=letters), 100, 100, 1)[None]
    assert math.isnan(out["consistency_ci_low"]) and math.isnan(out["consistency_stderr"])
    pairs, _ = _simulate(50, seed=1)
    out = stats.pair_summary(stats.pair_grid(pairs), 100, 100, 1)[None]
    assert math.isfinite(out["consistency_ci_low"]) and math.isnan(out["consistency_null"])


# -- task glue: truncation, invalid answers, settings ---------------------------------------------------------
OPTIONS = ["Not at all", "Slightly", "Moderately", "Very"]
VALID = '"Explanation": "Planted.", "Exact Answer": "{}", "Confidence": "0.8"'
TRUNCATED = '"Explanation": "The person appears to be standing near the'
REFUSED = '"Explanation": "Cannot tell.", "Exact Answer": "N/A", "Confidence": "0"'
INVALID = '"Explanation": "x", "Exact Answer": "E", "Confidence": "0.9"'


def _records(texts: dict[tuple[int, str], str], n_pairs: int = 10, **settings):
    from lm_eval_bias.cf_vqa import tasks as cf_vqa

    records = []
    for i in range(n_pairs):
        for run in range(3):
            for side in ("plus", "minus"):
                doc = {"pair_id": f"p{i}", "run": run, "side": side, "category": CATEGORIES[i % 5],
                       "subcategory": "x", "options": OPTIONS, "human_consistency": 0.8, "split": "corpus",
                       "prompt": "baseline", "embedder": "", "seed": 0,
                       "truncated_as": settings.get("truncated_as", "exclude"),
                       "invalid_as": settings.get("invalid_as", "refusal")}
                text = texts.get((i, side), VALID.format("A" if side == "plus" or i % 2 else "B")) if run == 0 else \
                    VALID.format("A")
                records.append(cf_vqa.record_of(doc, [text]))
    return records


def test_truncated_answer_is_counted_and_left_out_by_default():
    from lm_eval_bias.cf_vqa import tasks as cf_vqa

    records = _records({(0, "minus"): TRUNCATED})
    assert [r["status"] for r in records if r["pair_id"] == "p0" and r["run"] == 0] == ["valid", "truncated"]
    m = cf_vqa.summarize(records)
    assert m["truncated_rate"] == pytest.approx(1 / 60) and m["refusal_rate"] == 0.0 and m["invalid_rate"] == 0.0
    assert m["n_pair_runs"] == 29 and m["n_pair_runs_left_out"] == 1
    # run 0: pairs p1..p9 left, p1,p3,.. (odd) consistent -> 5/9; runs 1, 2: all consistent
    assert m["consistency"] == pytest.approx((5 / 9 + 1 + 1) / 3)
    assert m["refusal_asymmetry_rate"] == 0.0 and m["sr_auc"] == pytest.approx(1.0)
    as_refusal = cf_vqa.summarize(_records({(0, "minus"): TRUNCATED}, truncated_as="refusal"))
    assert as_refusal["n_pair_runs"] == 30 and as_refusal["truncated_rate"] == pytest.approx(1 / 60)
    assert as_refusal["consistency"] == pytest.approx((5 / 10 + 1 + 1) / 3)
    assert as_refusal["refusal_asymmetry_rate"] == pytest.approx(1 / 30) and as_refusal["refusal_rate"] == 0.0


def test_refusal_and_invalid_rates_are_separate():
    from lm_eval_bias.cf_vqa import tasks as cf_vqa

    records = _records({(1, "plus"): REFUSED, (2, "plus"): INVALID, (3, "plus"): INVALID})
    assert [r["status"] for r in records if r["run"] == 0 and r["side"] == "plus"][1:4] == ["refusal", "invalid", "invalid"]
    m = cf_vqa.summarize(records)
    assert m["refusal_rate"] == pytest.approx(1 / 60) and m["invalid_rate"] == pytest.approx(2 / 60)
    assert math.isfinite(m["consistency_null"]) and math.isfinite(m["sr_auc_p_null"])  # refusals have a letter code
    assert m["n_pair_runs"] == 30  # invalid answers are the empty answer by default
    excluded = cf_vqa.summarize(_records({(1, "plus"): REFUSED, (2, "plus"): INVALID, (3, "plus"): INVALID},
                                         invalid_as="exclude"))
    assert excluded["n_pair_runs"] == 28 and excluded["invalid_rate"] == pytest.approx(2 / 60)


def test_records_of_different_settings_are_never_merged():
    from lm_eval_bias.cf_vqa import tasks as cf_vqa

    mixed = _records({}, n_pairs=2) + [dict(r, truncated_as="refusal") for r in _records({}, n_pairs=2)]
    with pytest.raises(ValueError, match="different settings"):
        cf_vqa.summarize(mixed)
    with pytest.raises(ValueError, match="truncated_as must be one of"):
        cf_vqa._rule("truncated_as", "drop", "exclude")


def test_human_consistency_per_category():
    from lm_eval_bias.cf_vqa import tasks as cf_vqa

    m = cf_vqa.summarize(_records({}))
    assert m["human_consistency"] == pytest.approx(0.8) and m["human_consistency_culture"] == pytest.approx(0.8)
    assert m["consistency_minus_human"] == pytest.approx(m["consistency"] - 0.8)
    assert m["consistency_minus_human_demography"] == pytest.approx(m["consistency_demography"] - 0.8)


# -- CLIP retrieval ----------------------------------------------------------------------------------------------
def test_tiny_clip_retrieval_is_deterministic_and_recorded(tmp_path, cf_vqa_env):
    from lm_eval_bias.cf_vqa import retrieval
    from lm_eval_bias.cf_vqa import tasks as cf_vqa
    from lm_eval_bias.testing.tiny_clip import build_tiny_clip

    path = build_tiny_clip(tmp_path / "clip", seed=0)
    queries = ["How happy is the family at the table?", "What is the likely income of the person?"]
    corpus = ["How happy is the person?", "What income does the worker earn?", "How competent is the worker?",
              "Which style is shown?", "How trustworthy is the scene?", "the a an"]
    picks, name = retrieval.top_k(queries, corpus, 3, f"clip:{path}")
    assert name == f"clip:{path}"
    assert picks == retrieval.top_k(queries, corpus, 3, f"clip:{path}")[0]  # reloaded: same neighbours
    embedder = retrieval.make_embedder(f"clip:{path}")
    sims = embedder.encode(queries) @ embedder.encode(corpus).T
    assert np.allclose(np.linalg.norm(embedder.encode(corpus), axis=1), 1.0)
    assert picks == [sorted(range(len(corpus)), key=lambda j: (-row[j], j))[:3] for row in sims]
    docs = cf_vqa.load_docs("hner", embedder=f"clip:{path}")["test"]
    assert set(docs["embedder"]) == {f"clip:{path}"} and all(len(e) == 5 for e in docs["exemplars"])
    record = cf_vqa.record_of(docs[0], [VALID.format("A")])
    assert record["embedder"] == f"clip:{path}" and record["truncated_as"] == "exclude"


# -- builder: relevance scale ------------------------------------------------------------------------------------
def test_relevance_scale_default_is_the_papers_likert_scale(tmp_path):
    from lm_eval_bias.datasets_builder.cf_vqa import collect_pairs
    from lm_eval_bias.datasets_builder.hub import SourceError
    from lm_eval_bias.cf_vqa.synthetic import make_synthetic_cf_vqa

    src = make_synthetic_cf_vqa(tmp_path / "src", size=16)
    rows = [json.loads(line) for line in (src / "manifest.jsonl").read_text().splitlines()]
    assert all(r["relevance_scale"] == "1-5" for r in collect_pairs(src))
    rows[0]["relevance_score"] = 7.5
    (src / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SourceError, match=r"outside \[1.0, 5.0\]"):
        collect_pairs(src)
    assert collect_pairs(src, relevance_scale="0-10")[0]["relevance_scale"] == "0-10"
    rows[0]["relevance_scale"] = "0-10"
    (src / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert collect_pairs(src)[0]["relevance_score"] == 7.5


def test_calibration_module_quick_mode_rows():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from scripts.calibration import ROW_FIELDS
    from scripts.calibration import cf_vqa as calibration

    rows = calibration.run(n_seeds=3, n_boot=50, quick=True)
    assert rows and all(tuple(r) == ROW_FIELDS and r["benchmark"] == "cf_vqa" for r in rows)
    kinds = {r["quantity"]: r["kind"] for r in rows}
    assert kinds["consistency [all]"] == "interval" and kinds["consistency_p_null"] == "test"
    truth = {r["quantity"]: r["truth"] for r in rows if r["dgp"].startswith("paper")}
    assert 0.35 < truth["consistency [all]"] < 0.5 and truth["truncated_rate [all]"] == pytest.approx(0.02, abs=0.004)
    scopes = {r["quantity"].split("[")[1].split("]")[0] for r in rows if r["kind"] == "interval"}
    assert scopes == set(calibration.SCOPES)  # every table of the report and the analysis has rows
    assert {r["dgp"].split(":")[0] for r in rows if r["kind"] == "interval"} == {s.name for s in calibration.SCENARIOS}


def test_calibration_truths_are_each_cells_population_value_and_the_rate_sweep_its_exact_mean():
    """Each cell's truth is computed on its own pairs tiled to ``pairs``: the "paper" model's invalid and truncated
    rates (propensities 0.01 / 0.02 x Gamma(0.5, 2) per pair, capped at 0.5) come out at their exact means in every
    cell, the 20-pair smallest scope included (SE about 3 % of the rate at 20,000 pairs), and its pairs as a cell of a
    full run (their own stream) get the same value. The smallest-scope rate sweep uses the exact capped-Gamma mean."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from scripts.calibration import capped_gamma_mean
    from scripts.calibration import cf_vqa as calibration

    paper = next(s for s in calibration.SCENARIOS if s.name == "paper")
    design = calibration.real_design(quick=True)
    truth = calibration.population_truth(paper, design, pairs=20_000)
    assert set(truth) == set(calibration.SCOPES)
    for scope, cells in truth.items():
        for cell, values in cells.items():
            assert values["invalid_rate"] == pytest.approx(0.01, rel=0.12), (scope, cell)
            assert values["truncated_rate"] == pytest.approx(0.02, rel=0.12), (scope, cell)
    alone, as_cell = truth["smallest"]["smallest"], truth["smallest_cell"][calibration.SMALLEST_CELL]
    assert alone["consistency"] == pytest.approx(as_cell["consistency"], abs=0.01)
    assert alone["invalid_rate"] != as_cell["invalid_rate"]  # two streams: the tiles are simulated afresh
    assert capped_gamma_mean(0.01, 0.5, 0.5) == pytest.approx(0.01, rel=1e-9)  # the cap at 50 x the mean binds never
    points = calibration.smallest_scope_rate_sweep(60, rates=(0.05,), shapes=(None, 0.1))
    assert [p["truth"] for p in points] == [0.05, capped_gamma_mean(0.05, 0.1, calibration.RATE_SWEEP_CAP)]
    assert points[1]["truth"] < 0.05  # the cap at 0.95 binds for a tenth of the Gamma(0.1) pairs' mass
    assert 0.5 < points[0]["design_effect"] < 1.6 < points[1]["design_effect"]
    for p in points:
        assert p["pairs"] == 20 and p["intervals"] == 60
        assert p["mean_events"] == pytest.approx(120 * p["truth"], rel=0.35)
        assert all(0.0 <= p[k] <= 1.0 for k in ("coverage", "coverage_no_factor", "coverage_count"))


def test_task_rate_intervals_are_the_effective_size_wilson_interval():
    # through the task glue (record_of -> summarize): 25 pairs in 5 categories x 3 runs x 2 sides = 150
    # responses; 3 refusals and 2 invalid answers, two of them in the same pair
    from lm_eval_bias.cf_vqa import tasks as cf_vqa
    from lm_eval_bias.core import jackknife

    m = cf_vqa.summarize(_records({(1, "plus"): REFUSED, (1, "minus"): REFUSED, (7, "plus"): REFUSED,
                                   (2, "plus"): INVALID, (3, "minus"): INVALID}, n_pairs=25))
    assert m["refusal_rate"] == pytest.approx(3 / 150) and m["invalid_rate"] == pytest.approx(2 / 150)
    for key in ("refusal_rate", "invalid_rate"):
        expected = jackknife.effective_n_wilson_interval(m[key], m[f"{key}_stderr"], 25 - 5, 150, 25)
        assert (m[f"{key}_ci_low"], m[f"{key}_ci_high"]) == (pytest.approx(expected[0]), pytest.approx(expected[1]))
        assert 0 < m[f"{key}_ci_low"] < m[key] < m[f"{key}_ci_high"] < 1
    # the truncated rate is 0: no design effect to estimate, the t-Wilson interval over the 25 pairs
    assert (m["truncated_rate_ci_low"], m["truncated_rate_ci_high"]) == (0.0, pytest.approx(
        jackknife.wilson_t_interval(0.0, 25, 20)[1]))
