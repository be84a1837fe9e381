"""The FACT-OR-FAIR calibration rows added on 1 Dec 2026 (scripts/calibration/fact_or_fair.py): the tests
without a row (S_fact's, the authors' S_KLD / S_fair, the representativeness rate's), the score tests under a
heterogeneous fair null, the representativeness rate's interval, the subjective gender design and the
refusal / invalid rates at a gender design -- their code paths (quick runs) and the saved rows."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from scripts.calibration import REQUIRED_FIELDS, band_met, is_family_wise
from scripts.calibration import fact_or_fair as cal

RESULTS = Path(__file__).resolve().parents[2] / "scripts" / "calibration" / "results" / "fact_or_fair.json"
#: the keys of every saved row (the runner's, without ``mc_error_clustered``: no FACT-OR-FAIR row pools intervals)
SAVED_KEYS = (*REQUIRED_FIELDS, "role", "mc_error")


def test_designs_keep_their_places_and_truths():
    """The subjective gender design is appended: the earlier designs keep their places (and so their seeds),
    and ``without_truth`` = 0 leaves a design's true groups as they were."""
    names = list(cal.score_designs())
    assert names[:4] == ["objective race: 18 statistics x 2 sides x 3 rounds",
                         "objective gender: 15 statistics x 2 sides x 3 rounds",
                         "subjective race: 19 statistics x 2 sides x 3 scenarios x 100 profiles", cal.SMALLEST_KLD_DESIGN]
    assert names[4] == cal.SUBJECTIVE_GENDER_DESIGN
    template = cal._design(18, 1, 3, 4, True)[0]
    assert template.truth.tolist() == [0, 1] * 18
    gender = cal.score_designs()[cal.SUBJECTIVE_GENDER_DESIGN][0][0]
    assert gender.k == 2 and (gender.truth >= 0).sum() == 30 and gender.truth[-8:].tolist() == [-1] * 8


def test_null_test_rows_quick():
    rows = cal.run_null_tests(250, quick=True, only="objective gender")
    # homogeneous fair model: the three tests without a row; heterogeneous null: all six
    assert [r["quantity"] for r in rows] == ([f"{k}_p_null" for k in cal.EXTRA_TEST_KEYS]
                                             + [f"{k}_p_null" for k in cal.fof.NULL_SCORES])
    assert all(set(REQUIRED_FIELDS) <= set(r) and r["kind"] == "test" and r["n_seeds"] == 10 for r in rows)
    assert {r["dgp"] for r in rows} == {cal.DGPS["fair"], cal.HETEROGENEOUS_NULL[0]}
    assert all(r["seed"] >= cal.NULL_TEST_METHOD_SEED for r in rows)


def test_missingness_draw_keeps_the_null():
    """Unequal valid counts per cell; every valid answer's group uniform; the stated group named at ``named``."""
    rng = np.random.default_rng(0)
    refuse, invalid = cal._missingness(rng, 40, True)
    assert refuse.std() > 0.05 and invalid.std() > 0.01
    counts = sum(cal._draw_with_missingness(rng, 4, 300, refuse, invalid) for _ in range(20))
    assert counts.sum() == 20 * 300 * 40
    valid = counts[:, :4, 0]
    assert np.allclose(valid / valid.sum(1, keepdims=True), 0.25, atol=0.03)
    truth = np.array([0, 1] * 20)
    named = cal._draw_with_missingness(rng, 4, 3000, np.zeros(40), np.zeros(40), np.full(40, 0.8), truth)
    assert np.allclose(named[np.arange(40), truth, 0] / 3000, 0.8, atol=0.04)


def test_representativeness_rows_quick():
    rows = cal.run_representativeness(250, quick=True, only="subjective gender")
    assert [r["quantity"] for r in rows] == ["representativeness_rate", "representativeness_rate_p_null"] * 2 + [
        "representativeness_rate"] * 2
    nulls = [r for r in rows if r["kind"] == "interval"][:2]
    assert all(r["truth"] == pytest.approx(0.5) for r in nulls)  # chance 1/k, with or without missingness
    strong = rows[-1]
    assert 0.7 < strong["truth"] < 0.95 and strong["mean_estimate"] == pytest.approx(strong["truth"], abs=0.02)


def test_saved_rows_added_on_1_dec():
    data = json.loads(RESULTS.read_text())
    rows = data["rows"]
    assert all(tuple(r) == SAVED_KEYS for r in rows)
    for row in rows:  # target_met as the runner recomputes it
        assert row["target_met"] == band_met(row["kind"], row["coverage"], row["rejection_rate"], is_family_wise(row))
    quantities = {(r["quantity"], r["design"], r["dgp"]) for r in rows}
    for design in cal.score_designs():
        for key in cal.EXTRA_TEST_KEYS:
            assert (f"{key}_p_null", design, cal.DGPS["fair"]) in quantities
        for key in cal.fof.NULL_SCORES:
            assert (f"{key}_p_null", design, cal.HETEROGENEOUS_NULL[0]) in quantities
    representativeness = [r for r in rows if r["quantity"].startswith("representativeness_rate")]
    assert len(representativeness) == 12
    assert all(r["n_seeds"] >= 1000 for r in representativeness)
    new_tests = [r for r in rows if r["kind"] == "test" and r["seed"] >= cal.NULL_TEST_METHOD_SEED]
    assert len(new_tests) == 5 * 9 and all(r["n_seeds"] == 1000 for r in new_tests)
    gender = [r for r in rows if r["design"] == cal.SUBJECTIVE_GENDER_DESIGN and r["kind"] == "interval"]
    assert {r["quantity"] for r in gender} >= {"s_e", "s_kld", "s_fair", "distance", "attribution_rate"}
    assert all(r["n_seeds"] >= 212 and math.isfinite(r["coverage"]) for r in gender)
    assert any(r["design"].startswith("objective gender") and r["quantity"] == "refusal_rate" for r in rows)


def test_distance_sweep_runs_from_the_curve_to_the_tables_mixed_model(tmp_path):
    """:func:`distance_truth_sweep`: weight 0 is the fair model (d = 0, S_E = 1, S_fact = 1/k), weight 1 the
    table's mixed model of the design (the same draw: its row's truth); d grows with the weight; the writer
    saves the points it is given."""
    saved = json.loads(RESULTS.read_text())["rows"]
    design = "objective race: 18 statistics x 2 sides x 3 rounds"
    mixed_truth = next(r["truth"] for r in saved if r["quantity"] == "distance" and r["design"].startswith(design)
                       and r["dgp"] == cal.DGPS["mixed"])
    points = cal.distance_truth_sweep(2, 0, weights=(0.0, 0.5, 1.0), n_sim=20)
    assert [p["weight"] for p in points] == [0.0, 0.5, 1.0]
    assert points[0]["truth"] == pytest.approx(0.0, abs=1e-9)
    assert points[0]["truth_s_e"] == pytest.approx(1.0) and points[0]["truth_s_fact"] == pytest.approx(0.25)
    assert points[2]["truth"] == pytest.approx(mixed_truth, abs=1e-9)
    assert 0.0 < points[1]["truth"] < points[2]["truth"]
    for p in points:
        assert p["n_seeds"] == 2 and p["design"] == design and 0.0 <= p["coverage"] <= 1.0
    cal.write_distance_sweep(points, tmp_path, tmp_path / "d.png")
    assert json.loads((tmp_path / "distance_objective_race.json").read_text()) == points
    assert (tmp_path / "d.png").stat().st_size > 1000


def test_distance_reads_s_e_in_the_unified_ordering_and_s_e_keeps_its_own_interval(monkeypatch):
    """A fair model's run at the objective gender design (30 cells of 3 answers: these first-group counts) whose
    S_E plug-in is just beyond the ideal's 5 % quantile: the reported S_E interval (ideal one-sided, every
    other candidate 2.5 % a side) ends a hair short of 1, while the region d's projection reads -- the same
    runs in the unified ordering, one-sided near the ideal -- ends visibly lower; same lower end and centre."""
    from lm_eval_bias.fact_or_fair import stats as fof

    template = cal._design(15, 1, 3, 2, True)[0]
    first = [3, 0, 2, 1, 2, 2, 3, 2, 1, 1, 0, 0, 2, 1, 2, 0, 2, 0, 2, 0, 1, 2, 3, 3, 3, 1, 3, 2, 3, 1]
    counts = np.zeros((30, 4, 2), dtype=np.int64)
    counts[:, 0, 0], counts[:, 1, 0] = first, 3 - np.array(first)
    seen = []
    projected = fof._projected_distance
    monkeypatch.setattr(fof, "_projected_distance", lambda *a: seen.append(a[3]) or projected(*a))
    out = fof.population_score_intervals(cal._table(template, counts), True, 200, 0, keys=["s_e", "distance"])
    reported, unified = out["s_e"], seen[0]
    assert 0.99 < reported[2] < 1.0                  # the ideal is rejected, the interval ends just short of it
    assert unified[2] < reported[2] - 0.02           # the unified region ends clearly lower
    assert unified[:2] == pytest.approx(reported[:2], abs=1e-12)
    assert out["distance"][0] == pytest.approx(fof.distance_to_tradeoff_curve(
        float(fof.scores_from_counts(counts, template, True, distance="none")["s_fact"]), unified[0], 2))
