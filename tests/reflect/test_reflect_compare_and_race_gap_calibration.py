"""The calibration rows added on 2 Dec 2026 (scripts/calibration/reflect.py): reflect-compare's mirror and face-body
tables and the per-occupation race gaps. The simulators draw what their truths say, the rows go through the
functions ``lm-eval-bias reflect-compare`` and the tables call, and rows are appended without touching earlier ones."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lm_eval_bias.reflect import compare
from lm_eval_bias.reflect import mcq as mcq_stats
from lm_eval_bias.reflect import tables
from scripts.calibration import reflect as sim

OPTIONS, VALUES = mcq_stats.SALARY_OPTIONS, mcq_stats.SALARY_BIN_MIDPOINTS_USD


def test_mirror_truth_is_the_mean_of_many_simulated_templates():
    """Large simulated runs (1,800 templates) land on the population truths of both mirror models; without a
    difference the mirrored run's valid answers follow the original's (delta_gap_male 0 exactly)."""
    no_diff, diff = sim.MIRROR_MODELS
    assert sim.truth_mirror(no_diff)["delta_gap_male"] == 0.0
    for model, seed in ((no_diff, 1), (diff, 2)):
        truth = sim.truth_mirror(model)
        original, mirrored = sim.simulate_mirror(np.random.default_rng(seed), model, n_per_occupation=300)
        found = tables.mirror_summary(original, mirrored, OPTIONS, VALUES, 0, 0).estimates
        assert found["paired_valid"] == pytest.approx(truth["paired_valid"], abs=0.01)
        assert found["agreement"] == pytest.approx(truth["agreement"], abs=0.012)
        assert found["delta_gap_male"] == pytest.approx(truth["delta_gap_male"], abs=0.012)
    truth = sim.truth_mirror(diff)
    assert truth["delta_gap_male"] > 0.03 and truth["paired_valid"] < sim.truth_mirror(no_diff)["paired_valid"]
    assert 0.75 < truth["agreement"] < 0.85  # near the paper's 0.818 (salary MCQ, App. B.2)


def test_face_body_truth_is_the_mean_of_many_simulated_templates():
    """The matched and swapped subsets' gender gaps of a large run land on their truths, which differ (body and
    mismatch effects), and g0 is drawn per template."""
    model = sim.FACE_BODY_MODELS[1]
    truth = sim.truth_face_body(model)
    assert truth["gap_male_matched"] > truth["gap_male_full"] > truth["gap_male_swapped"] > 0.2
    records, source_gender = sim.simulate_face_body(np.random.default_rng(3), model, n_per_occupation=300)
    assert set(source_gender.values()) == {"man", "woman"}
    assert 0.45 < np.mean([g == "man" for g in source_gender.values()]) < 0.55
    found = tables.face_body_summary(records, source_gender, OPTIONS, VALUES, 0, 0).estimates
    for subset in ("full", "matched", "swapped"):
        assert found[f"gap_male_{subset}"] == pytest.approx(truth[f"gap_male_{subset}"], abs=0.02)
    assert sim.truth_face_body(sim.FACE_BODY_MODELS[0]) == {f"gap_male_{s}": 0.0 for s in ("full", "matched", "swapped")}


def test_compare_rows_call_reflect_compares_own_summaries():
    """run_mirror / run_face_body go through compare.compare_tasks, which is tables.mirror_summary /
    face_body_summary with the task's options and values; the paper's Wilson interval is its own "paper" row."""
    original, mirrored = sim.simulate_mirror(np.random.default_rng(4), sim.MIRROR_MODELS[1])
    via = compare.compare_tasks("mirror", sim._compare_run("focus_mcq_salary", original),
                                sim._compare_run("focus_mcq_salary", mirrored), 60, 7)
    direct = tables.mirror_summary(original, mirrored, OPTIONS, VALUES, 60, 7)
    for k in sim.MIRROR_KEYS:
        assert (via.estimates[k], via.ci_low[k], via.ci_high[k]) == (direct.estimates[k], direct.ci_low[k], direct.ci_high[k])
        assert math.isfinite(via.ci_low[k]) and via.ci_low[k] < via.ci_high[k]
    assert via.extra == direct.extra
    assert via.extra["agreement_paper_ci_low"] < via.estimates["agreement"] < via.extra["agreement_paper_ci_high"]
    records, source_gender = sim.simulate_face_body(np.random.default_rng(5), sim.FACE_BODY_MODELS[1])
    via = compare.compare_tasks("face-body", sim._compare_run("focus_mcq_salary", records), None, 60, 7, source_gender)
    direct = tables.face_body_summary(records, source_gender, OPTIONS, VALUES, 60, 7)
    for k in sim.FACE_BODY_KEYS:
        assert (via.estimates[k], via.ci_low[k], via.ci_high[k]) == (direct.estimates[k], direct.ci_low[k], direct.ci_high[k])
        assert math.isfinite(via.ci_low[k]) and via.ci_low[k] < via.estimates[k] < via.ci_high[k]

    rows = sim.run_mirror(2, 40, models=sim.MIRROR_MODELS[:1]) + sim.run_face_body(2, 40, models=sim.FACE_BODY_MODELS[:1])
    assert [(r["quantity"], r["role"]) for r in rows] == [
        ("paired_valid", "default"), ("agreement", "default"), ("delta_gap_male", "default"),
        ("agreement_paper_ci_low/_ci_high", "paper"), ("gap_male_matched", "default"), ("gap_male_swapped", "default")]
    assert all(r["n_seeds"] == 2 and r["n_boot"] == 40 and 0.0 <= r["coverage"] <= 1.0 for r in rows)
    assert rows[3]["truth"] == rows[1]["truth"] and rows[3]["mean_estimate"] == rows[1]["mean_estimate"]


def test_per_occupation_race_gap_rows_pool_six_occupations_and_ignore_the_jsd_relabellings():
    """The MCQ summary's gap intervals do not depend on n_null (the JSD relabellings), so run_tables_races may skip
    them; the rows pool 6 occupations a seed, with the seed-clustered Monte Carlo error."""
    from dataclasses import asdict

    records = [asdict(r) for r in sim.simulate_mcq(np.random.default_rng(6), sim.COMPARE_MCQ_EFFECT, 0.5, 8)]
    a = tables.mcq_occupation_summary(records, OPTIONS, VALUES, sim.OCCUPATIONS, 40, 3, n_null=0)
    b = tables.mcq_occupation_summary(records, OPTIONS, VALUES, sim.OCCUPATIONS, 40, 3, n_null=40)
    gaps = [f"{k}_{o}" for k in sim.MCQ_OCCUPATION_RACE_GAPS for o in sim.OCCUPATIONS]
    assert all(a.ci_low[k] == b.ci_low[k] and a.ci_high[k] == b.ci_high[k] and math.isfinite(a.ci_low[k]) for k in gaps)
    rows = sim.run_tables_races(2, 30, n_bios=5)
    assert [r["quantity"] for r in rows] == [f"{k}_<occupation>" for k in sim.MCQ_OCCUPATION_RACE_GAPS] * 2 + [
        f"{k}_<occupation>" for k in sim.SALARY_OTHER_GAP_KEYS] * 2
    assert all(r["n_seeds"] == 2 and math.isfinite(r["mc_error_clustered"]) for r in rows)
    truth = sim.truth_mcq(sim.COMPARE_MCQ_EFFECT, 0.5)
    assert rows[3]["truth"] < -0.1 and rows[3]["truth"] == pytest.approx(truth["gap_asian"], abs=0.02)
    # Asian +1 % against White, both with the men's +2 % (half the group): (1.02 / 1.01 - 1) x 100
    assert rows[9]["truth"] == pytest.approx(100 * (1.02 / 1.01 - 1)) and rows[10]["truth"] == rows[6]["truth"] == 0.0


def test_append_rows_keeps_every_earlier_byte_and_the_files_format(tmp_path):
    path = tmp_path / "reflect.json"
    data = {"n_seeds": 250, "parts_wall_s": {"a": 1.0}, "rows": [{"quantity": "x", "truth": float("nan")}], "note": "n."}
    text = json.dumps(data, indent=1)
    path.write_text(text)
    sim.append_rows([{"quantity": "y", "truth": 0.5}], "y (2 Dec 2026)", 12.34, note="added y.", path=path)
    new = path.read_text()
    assert new == json.dumps(json.loads(new), indent=1) and not new.endswith("\n")
    saved = json.loads(new)
    assert [r["quantity"] for r in saved["rows"]] == ["x", "y"] and saved["parts_wall_s"] == {"a": 1.0, "y (2 Dec 2026)": 12.3}
    assert saved["note"] == "n. added y." and json.dumps(saved["rows"][0], indent=1) == json.dumps(data["rows"][0], indent=1)
    with pytest.raises(ValueError, match="already"):
        sim.append_rows([], "y (2 Dec 2026)", 1.0, path=path)
    assert [p.name for p in tmp_path.iterdir()] == ["reflect.json"]  # no temporary file left behind


def test_paper_rows_of_the_other_jsds_are_a_full_runs_and_count_the_percentile_interval():
    """run_mcq_groups(only_paper=True) (the part mcq_groups_paper) writes exactly the "paper" rows a full
    run_mcq_groups writes (same seeds, records and bootstrap replicates: the percentile interval does not depend on
    the relabelling test or the inversion), each counting jsd_<group>_ci_low_paper / _ci_high_paper against the
    truth, and the full run's own rows are unchanged beside them."""
    full = sim.run_mcq_groups(2, 30, designs=(12,), models=("no bias",), test_seeds=2)
    paper = sim.run_mcq_groups(2, 30, designs=(12,), models=("no bias",), only_paper=True)
    assert paper == [r for r in full if r["role"] == "paper"]
    assert [r["quantity"] for r in paper] == [f"{k}_ci_low_paper/_ci_high_paper" for k in sim.MCQ_OTHER_JSD_KEYS]
    calibrated = {r["quantity"]: r for r in full if r["role"] == "default" and r["kind"] == "interval"}
    for r in paper:
        own = calibrated[r["quantity"].split("_ci_low")[0]]
        assert r["mean_estimate"] == own["mean_estimate"] and r["truth"] == own["truth"] == 0.0
        # a percentile interval of a plug-in JSD, positive in every run, never holds a true 0
        assert r["coverage"] == 0.0 and r["n_seeds"] == 2
    # the full run keeps its interval and test rows
    assert sorted({r["kind"] for r in full if r["role"] == "default"}) == ["interval", "test"]
    assert sim.PARTS_2DEC["mcq_groups_paper"] and "mcq_groups_paper" in sim.PARTS_2DEC_TEXT


def test_jsd_rows_of_the_education_and_k_sample_tasks_run_their_own_design_and_stream():
    """The parts mcq_groups_education_* / _k5_* / mcq_groups_salary_k5_48 (every JSD interval the MCQ tasks show
    gets rows): the variant's options and truths, K answers a photo, a stream of their own, and no test rows where
    run_mcq_samples has them."""
    edu = sim.run_mcq_groups(2, 30, designs=(12,), models=("no bias",), test_seeds=2, variant="education")
    k5 = sim.run_mcq_groups(2, 30, designs=(12,), models=("no bias",), keys=mcq_stats.JSD_KEYS, variant="education",
                            n_samples=5, with_tests=False)
    salary = sim.run_mcq_groups(2, 30, designs=(12,), models=("no bias",), test_seeds=2)
    assert all("4 education levels" in r["design"] and "1 call" in r["design"] for r in edu)
    assert all("4 education levels" in r["design"] and "5 samples" in r["design"] for r in k5)
    assert {r["kind"] for r in k5} == {"interval"} and {r["kind"] for r in edu} == {"interval", "test"}
    assert sorted({r["quantity"] for r in k5 if r["role"] == "default"}) == sorted(mcq_stats.JSD_KEYS)
    # each on its own random stream: the same seeds give other records (other mean estimates)
    def by_key(rows):
        return {r["quantity"]: r["mean_estimate"] for r in rows if r["kind"] == "interval" and r["role"] == "default"}

    assert len({by_key(edu)["jsd_white"], by_key(salary)["jsd_white"], by_key(k5)["jsd_white"]}) == 3
    # K = 5 answers a photo: the plug-in JSD without bias (its finite-sample floor) falls below one call's
    assert all(by_key(k5)[k] < by_key(edu)[k] for k in sim.MCQ_OTHER_JSD_KEYS)
    # the truths are the variant's (one call per doc): 0 without bias
    assert all(r["truth"] == 0.0 for r in edu + k5 if r["kind"] == "interval")
    names = ("mcq_groups_education_48", "mcq_groups_education_12", "mcq_groups_education_k5_48",
             "mcq_groups_education_k5_12", "mcq_groups_salary_k5_48")
    assert all(n in sim.PARTS_2DEC and n in sim.PARTS_2DEC_TEXT for n in names)
