"""VIGNETTE per-cell significance (PairComp, polarity, log-odds), per-activity factuality,
per-question decision tests and activity-contrast perception: hand-computed cases from the paper's
definitions (Sec. 5) and the planted model through the harness."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit
from scipy.stats import binom, norm
from scipy.stats import t as student_t

from lm_eval_bias.core import jackknife
from lm_eval_bias.vignette import stats as vg


def _rows(pair, left, right, context, chosen, dimension="d", parameter=""):
    doc = f"{pair}|{context}|{parameter}|{left}|{chosen}"
    return [(doc, pair, left, context, right, int(chosen == left), dimension, parameter),
            (doc, pair, right, context, left, int(chosen == right), dimension, parameter)]


def _table(rows):
    return pd.DataFrame([r for block in rows for r in block],
                        columns=["doc_id", "pair_id", "identity", "context", "partner", "selected", "dimension",
                                 "parameter"])


def test_pair_comp_tests_by_hand():
    # six image pairs A|B (context x, one doc each), A chosen every time; one pair A|C (context y), C chosen
    rows = [_rows(f"p{k}", "A", "B", "x", "A") for k in range(6)] + [_rows("q", "A", "C", "y", "C")]
    tests = vg.pair_comp_tests(_table(rows))
    # S(A | B) = 100; S(A | not B) = S over context y with C = 0 -> PairComp 100
    assert tests.loc[("A", "B"), "s_with"] == pytest.approx(100.0)
    assert tests.loc[("A", "B"), "pair_comp"] == pytest.approx(100.0)
    assert tests.loc[("A", "B"), "pair_comp"] == pytest.approx(vg.pair_comp(_table(rows), "A", "B"))
    # sign flip over 6 equal contributions: 2 of 2^6 patterns reach |sum| -> p = 1/32, for both cells
    assert tests.loc[("A", "B"), "p_value"] == pytest.approx(2 / 64)
    assert tests.loc[("B", "A"), "p_value"] == pytest.approx(2 / 64)
    assert tests.loc[("A", "B"), "n_pairs"] == 6
    # A|C: one pair, p = 1; Holm over the dimension's two unordered pairs: 2 * 1/32 = 1/16
    assert tests.loc[("A", "C"), "p_value"] == 1.0
    assert tests.loc[("A", "B"), "p_holm"] == pytest.approx(1 / 16)
    assert tests.loc[("B", "A"), "p_holm"] == pytest.approx(1 / 16)
    # B is only ever paired with A: S(B | not A) undefined
    assert math.isnan(tests.loc[("B", "A"), "pair_comp"])
    significant = vg.pair_comp_significance_matrix(tests, ["A", "B", "C"], alpha=0.07)
    assert significant.loc["A", "B"] and significant.loc["B", "A"] and not significant.loc["A", "C"]


def test_pair_comp_tests_match_the_matrix_and_reject_a_planted_pairing():
    rng = np.random.default_rng(3)
    rows = []
    ids = ["A", "B", "C", "D"]
    for k in range(240):
        a, b = rng.choice(ids, 2, replace=False)
        context = f"c{k % 5}"
        for q in range(3):
            # A beats B 90 % of the time; every other pairing is a coin flip
            p_left = 0.9 if (a, b) == ("A", "B") else 0.1 if (a, b) == ("B", "A") else 0.5
            rows.append(_rows(f"p{k}", a, b, context, a if rng.random() < p_left else b, parameter=str(q)))
    table = _table(rows)
    tests = vg.pair_comp_tests(table)
    matrix = vg.pair_comp_matrix(table, ids)
    for (a, b), value in tests["pair_comp"].items():
        assert value == pytest.approx(matrix.loc[a, b], nan_ok=True)
    assert tests.loc[("A", "B"), "p_holm"] < 0.001 and tests.loc[("B", "A"), "p_holm"] < 0.001
    others = tests.drop([("A", "B"), ("B", "A")])
    assert (others["p_holm"] > 0.05).all()


def test_polarity_tests_by_hand():
    terms = {"kind": ("morality", "high"), "cruel": ("morality", "low")}
    # four portrait pairs A|B: A called kind, B called cruel every time
    rows = [_rows(f"p{k}", "A", "B", t, "A" if t == "kind" else "B") for k in range(4) for t in terms]
    cells = vg.polarity_tests(_table(rows), terms, n_boot=50, seed=1)
    assert cells.loc[("A", "morality"), "polarity"] == pytest.approx(100.0)
    assert cells.loc[("B", "morality"), "polarity"] == pytest.approx(-100.0)
    # d_p = 100 (1 - 1/2) / 4 + 100 (1/2 - 0) / 4 = 25 per pair; 4 pairs: |sum| = 100 is the largest of
    # the 16 sign patterns, reached by 2 of them (all + and all -): P(|T*| > 100) = 0, P(|T*| = 100) = 2/16.
    # Ties counted against the observation: p = 2/16; randomised (default): p = 0 + U 2/16, U the cell's
    # tie weight (uniform from [seed, 23], one per cell in the table's order); mid-p: U = 1/2.
    counted = vg.polarity_tests(_table(rows), terms, seed=1, ties="count")
    assert counted.loc[("A", "morality"), "p_value"] == pytest.approx(0.125)
    assert counted.loc[("A", "morality"), "p_holm"] == pytest.approx(0.25)  # Holm over the dimension's 2 cells
    u = np.random.default_rng([1, 23]).random(2)
    assert list(cells.index) == [("A", "morality"), ("B", "morality")]
    assert cells["p_value"].to_numpy() == pytest.approx(u * 0.125)
    low, high = sorted(u * 0.125)  # Holm over the 2 cells: 2 x the smaller, then max(that, the larger)
    holm = {low: min(1.0, 2 * low), high: min(1.0, max(2 * low, high))}
    assert cells["p_holm"].to_numpy() == pytest.approx([holm[p] for p in u * 0.125])
    mid = vg.polarity_tests(_table(rows), terms, ties="mid")
    assert mid.loc[("A", "morality"), "p_value"] == pytest.approx(0.0625)
    # every pair alike: every replicate is 100
    assert cells.loc[("A", "morality"), "ci_low"] == pytest.approx(100.0)
    assert cells.loc[("A", "morality"), "ci_high"] == pytest.approx(100.0)
    assert cells.loc[("A", "morality"), "n_pairs"] == 4
    assert cells["polarity"].to_numpy() == pytest.approx(
        vg.polarity(_table(rows), terms).stack().reindex(cells.index).to_numpy())


def test_randomised_sign_flip_p_has_exact_level_on_a_lattice():
    # six contributions of 1: T* = sum of six +-1, |T*| = 6 in 2 of 64 patterns, 4 in 12, 2 in 30,
    # 0 in 20. Counting ties, p < 0.05 only at |T| = 6 (p = 2/64): level 2/64 = 0.031. Randomised,
    # p = P(|T*| > |T|) + U P(|T*| = |T|): |T| = 6 always rejects (p = U 2/64), |T| = 4 rejects when
    # 2/64 + U 12/64 < 0.05, i.e. U < 0.1: level 2/64 + 0.1 x 12/64 = 0.05 exactly.
    c = np.ones(6)
    signs = 1 - 2 * ((np.arange(64)[:, None] >> np.arange(6)) & 1)
    counted = np.array([vg._sign_flip_p(s * c) for s in signs])
    assert np.mean(counted < 0.05) == pytest.approx(2 / 64)
    level = 0.0
    for s in signs:  # P_U(p(U) < 0.05) for each equally likely pattern, p linear in U
        p0, p1 = vg._sign_flip_p(s * c, 0.0), vg._sign_flip_p(s * c, 1.0)
        level += np.clip((0.05 - p0) / (p1 - p0), 0, 1) / 64
    assert level == pytest.approx(0.05)
    assert vg._sign_flip_p(np.array([2.0, -1.0]), 0.5) == pytest.approx(0.5 + 0.5 * 0.5)  # |T*| in {1, 3}


def test_polarity_test_ignores_an_overall_preference():
    # A is chosen 80 % of the time for every term: polarity 0 in truth, and the test must not reject
    terms = {f"h{k}": ("status", "high") for k in range(5)} | {f"l{k}": ("status", "low") for k in range(5)}
    rejections = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        rows = [_rows(f"p{k}", "A", "B", t, "A" if rng.random() < 0.8 else "B") for k in range(30) for t in terms]
        cells = vg.polarity_tests(_table(rows), terms)
        rejections.append(cells.loc[("A", "status"), "p_value"] < 0.05)
    assert np.mean(rejections) <= 0.15


def test_log_odds_tests_estimate_and_planted_activity():
    rng = np.random.default_rng(5)
    rows = []
    for k in range(300):
        a, b = rng.choice(["A", "B", "C"], 2, replace=False)
        context = ["x", "y", "z"][k % 3]
        # A is chosen 90 % in x and 50 % elsewhere; no other identity depends on the context
        p_left = 0.9 if (a == "A" and context == "x") else 0.1 if (b == "A" and context == "x") else 0.5
        for q in range(2):
            rows.append(_rows(f"p{k}", a, b, context, a if rng.random() < p_left else b, parameter=str(q)))
    table = _table(rows)
    cells = vg.log_odds_tests(table, n_boot=200, seed=2)
    reference = vg.log_odds(table)
    for (identity, context), value in cells["log_odds"].items():
        assert value == pytest.approx(reference.loc[identity, context])
    assert cells.loc[("A", "x"), "log_odds"] > 1 and cells.loc[("A", "x"), "p_holm"] < 0.01
    assert cells.loc[("A", "x"), "ci_low"] > 0
    # its partners are chosen less in x (their log-odds there is negative)
    assert cells.loc[("B", "x"), "log_odds"] < 0 and cells.loc[("C", "x"), "log_odds"] < 0
    # coin flips everywhere: no cell significant
    coin = []
    for k in range(300):
        a, b = rng.choice(["A", "B", "C"], 2, replace=False)
        for q in range(2):
            coin.append(_rows(f"p{k}", a, b, ["x", "y", "z"][k % 3], a if rng.random() < 0.5 else b, parameter=str(q)))
    coin = _table(coin)
    assert (vg.log_odds_tests(coin, n_boot=200, seed=2)["p_holm"] > 0.05).all()
    from scipy.stats import t as student

    z = student.ppf(0.975, cells["n_pairs"] - 1)
    assert cells["ci_high"].to_numpy() == pytest.approx((cells["log_odds"] + z * cells["stderr"]).to_numpy())
    assert math.isnan(vg.log_odds_tests(table, n_boot=0, seed=2)["stderr"].iloc[0])
    # power: a t-test has no floor on its p, so the family can reject; MDE from the median sd of the
    # dimension with the most tested cells at Holm's first step; no tested cell: no tests in the family
    power = vg.log_odds_family_power(cells)
    tested = cells[cells["p_value"].notna()]
    assert power.can_reject and power.n_tests == len(tested) and power.min_attainable_p == 0.0
    assert power.mde == pytest.approx((norm.ppf(1 - 0.05 / (2 * len(tested))) + norm.ppf(0.8))
                                      * float(np.median(tested["stderr"])))
    none = vg.log_odds_family_power(vg.log_odds_tests(table, n_boot=0, seed=2))
    assert none.n_tests == 0 and not none.can_reject and none.statement == "no tests in this family"


def test_group_rates_and_factuality_by_activity_by_hand():
    frame = pd.DataFrame({
        "pair_id": ["p1", "p1", "p2", "p3", "p3", "p4"],
        "activity": ["cook", "cook", "cook", "run", "run", "run"],
        "identity": ["A", "B", "A", "A", "B", "B"],
        "dimension": "d",
        "correct": [True, True, False, True, True, True],
    })
    out = vg.factuality_by_activity(frame, n_boot=0, seed=0)
    assert out.loc["cook", "accuracy"] == pytest.approx(2 / 3) and out.loc["run", "accuracy"] == 1.0
    assert (out.loc["cook", "n"], out.loc["cook", "n_pairs"]) == (3, 2)
    few = vg.factuality_by_activity(frame, n_boot=200, seed=0)  # 2 pairs an activity: below the minimum
    assert few[["stderr", "ci_low", "ci_high"]].isna().all().all()
    # "run" answered by 12 pairs, one answer each, always right: the mid-p interval [0.05^(1/12), 1] (half of
    # P(X = 12) = theta^12 is 0.025 at the lower end); "cook": 12 pairs, 2 answers each, one pair of three
    # wrong twice -> 16 / 24, jackknife SE by hand (one stratum), Korn & Graubard's effective-size Wilson
    k = 12
    rows = [(f"r{i}", "run", "A", True) for i in range(k)]
    rows += [(f"c{i}", "cook", "A", i % 3 != 0) for i in range(k) for _ in range(2)]
    big = pd.DataFrame(rows, columns=["pair_id", "activity", "identity", "correct"]).assign(dimension="d")
    out = vg.factuality_by_activity(big, n_boot=1, seed=0)
    q = student_t.ppf(0.975, k - 1)
    assert out.loc["run", "ci_high"] == 1.0 and out.loc["run", "ci_low"] == pytest.approx(0.05 ** (1 / k))
    y = np.array([0.0 if i % 3 == 0 else 2.0 for i in range(k)])
    loo = (y.sum() - y) / (2 * (k - 1))
    se = math.sqrt((k - 1) / k * np.sum((loo - loo.mean()) ** 2))
    assert out.loc["cook", "accuracy"] == pytest.approx(2 / 3) and out.loc["cook", "stderr"] == pytest.approx(se)
    p = 2 / 3
    # SE^2 = 11/12 (4 x 0.060606^2 + 8 x 0.030303^2) = 0.020202: n_eff = (2/9) / 0.020202 = 11 (design
    # effect 24 / 11), n* = 11 (t_23 / t_11)^2 = 11 x (2.0687 / 2.2010)^2 = 9.7172 answers; Wilson with z:
    # z^2 / n* = 0.39532, centre (2/3 + 0.19766) / 1.39532 = 0.61945, half 1.95996 sqrt(0.22222 / 9.7172
    # + 3.8415 / 377.70) / 1.39532 = 0.25533 -> [0.3641, 0.8748]
    assert p * (1 - p) / se**2 == pytest.approx(11.0)
    n_star = 11.0 * (student_t.ppf(0.975, 23) / q) ** 2
    assert n_star == pytest.approx(9.7172, abs=1e-3)
    assert out.loc["cook", "ci_low"] == pytest.approx(0.3641, abs=5e-4)
    assert out.loc["cook", "ci_high"] == pytest.approx(0.8748, abs=5e-4)
    # narrower than the logit-t interval of the same SE with t_11, which it replaced (coverage 97-98 %)
    assert out.loc["cook", "ci_low"] > expit(logit(p) - q * se / (p * (1 - p))) + 0.03
    per_identity = vg.factuality_by_activity(frame, n_boot=0, seed=0, by=("identity", "activity"))
    assert per_identity.loc[("A", "cook"), "accuracy"] == 0.5 and per_identity.loc[("B", "run"), "n"] == 2


def test_activity_contrast_by_hand():
    # identity "old man" asked struggle: cooking vs cycling in 3 image pairs, cycling chosen every time
    records = []
    for k in range(3):
        doc = f"p{k}|struggle"
        for activity, chosen in (("cooking", 0), ("cycling", 1)):
            records.append((doc, f"p{k}", "old man", activity, "struggle", "age", "male", chosen))
    choices = pd.DataFrame(records, columns=["doc_id", "pair_id", "identity", "activity", "parameter", "dimension",
                                             "gender", "selected"])
    options = vg.activity_option_table(choices)
    assert list(options["partner"]) == ["cycling", "cooking"] * 3
    tests = vg.activity_contrast_tests(choices, n_boot=100, seed=0)
    assert tests.loc[("struggle", "cycling"), "selection_frequency"] == 100.0
    assert tests.loc[("struggle", "cooking"), "share"] == 0.0
    # 3 pairs, all the same sign: 2 of 8 patterns reach |T|, none exceeds it: mid-p = (2/8) / 2 = 1/8;
    # Holm over the two activities
    assert tests.loc[("struggle", "cycling"), "p_value"] == pytest.approx(0.125)
    assert tests.loc[("struggle", "cycling"), "p_holm"] == pytest.approx(0.25)
    assert math.isnan(tests.loc[("struggle", "cycling"), "ci_low"])  # 3 pairs: below MIN_PAIRS_FOR_INTERVAL


def test_decision_dimension_tests_split_by_question():
    rows = [_rows(f"p{k}", "A", "B", "cook", "A", parameter="ability") for k in range(13)]
    rows += [_rows(f"p{k}", "A", "B", "cook", "B" if k % 2 else "A", parameter="morality") for k in range(13)]
    tests = vg.decision_dimension_tests(_table(rows))
    assert tests.loc[("ability", "A"), "selection_frequency"] == 100.0
    assert tests.loc[("ability", "A"), "p_holm"] < 0.01
    assert tests.loc[("morality", "A"), "selection_frequency"] == pytest.approx(100 * 7 / 13)
    assert tests.loc[("morality", "A"), "p_value"] > 0.5


# -- the planted model through the harness ------------------------------------------------------------------
def _run(small_vignette_data, model_args):
    import os

    from tests.reflect.test_reflect_pipeline import metrics_of, run_probe

    os.environ["LM_EVAL_BIAS_DATA_DIR"] = str(small_vignette_data)
    try:
        results = run_probe(["vignette_decision"], model_args=model_args, bootstrap_iters=50,
                            metadata={"pairs_per_identity": 6})
    finally:
        os.environ.pop("LM_EVAL_BIAS_DATA_DIR", None)
    from lm_eval_bias.samples import sample_record

    records = [sample_record("vignette_decision", s) for s in results["samples"]["vignette_decision"]]
    return metrics_of(results, "vignette_decision"), records


def test_planted_pairwise_preference_makes_its_paircomp_cell_significant(small_vignette_data):
    from lm_eval_bias import samples

    metrics, records = _run(small_vignette_data, "vignette_prefer=old man")
    tests = vg.pair_comp_tests(samples.vignette_option_table(records))
    assert tests.loc[("old man", "young man"), "s_with"] == 100.0
    assert tests.loc[("old man", "young man"), "p_holm"] < 0.05
    assert tests.loc[("young man", "old man"), "p_holm"] < 0.05
    significant = tests[tests["p_holm"] < 0.05]
    assert set(significant.index) == {("old man", "young man"), ("young man", "old man")}
    assert metrics["n_paircomp_cells_significant"] == 2.0
    # the preference holds for every decision question: each question's identity test finds it
    for q in ("ability", "sociability", "morality", "agency", "status", "appearance"):
        assert metrics[f"n_identities_significant_question_{q}"] >= 1.0, q

    metrics, records = _run(small_vignette_data, "")  # hash-uniform answers: no preference planted
    tests = vg.pair_comp_tests(samples.vignette_option_table(records))
    assert (tests["p_holm"] >= 0.05).all()
    assert metrics["n_paircomp_cells_significant"] == 0.0


def test_report_tables_mark_the_planted_cells(small_vignette_data, tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(small_vignette_data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "50",
           "LM_EVAL_BIAS_NULL_ITERS": "50", "LM_EVAL_BIAS_REPORT_BOOTSTRAP_ITERS": "20"}
    cmd = [str(bin_dir / "lm-eval-bias"), "run", "--model", "bias-probe", "--model_args", "vignette_prefer=old man",
           "--tasks", "vignette_decision,vignette_factuality,vignette_perception,vignette_stereotype",
           "--output_path", str(tmp_path / "runs" / "a"), "--log_samples",
           "--metadata", json.dumps({"pairs_per_identity": 6})]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = subprocess.run([str(bin_dir / "lm-eval-bias"), "report", str(tmp_path / "runs"), "--output",
                           str(tmp_path / "report")], capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    tables = next(p for p in (tmp_path / "report" / "tables").iterdir() if p.is_dir() and "vignette_prefer" in p.name)
    paircomp = pd.read_csv(tables / "vignette_decision_decision_paircomp_tests.csv", index_col=[0, 1])
    assert paircomp.loc[("old man", "young man"), "p_holm"] < 0.05
    assert paircomp.loc[("old man", "young man"), "s_with"] == 100.0
    by_question = pd.read_csv(tables / "vignette_decision_by_question_dimension.csv", index_col=[0, 1])
    assert all(str(v) == "100.0*" for v in by_question.loc[("age", "old man")])
    assert all(str(v) == "0.0*" for v in by_question.loc[("age", "young man")])
    accuracy = pd.read_csv(tables / "vignette_factuality_accuracy_by_activity.csv", index_col=0)
    assert (accuracy["accuracy"] == 1.0).all() and len(accuracy) >= 5  # nobody misrecognised in this run
    # accuracy 1: the t-Wilson interval over the pairs, [n / (n + t^2), 1]; none below MIN_PAIRS_FOR_INTERVAL pairs
    shown = accuracy["n_pairs"] >= vg.MIN_PAIRS_FOR_INTERVAL
    assert (accuracy.loc[shown, "ci_high"] == 1.0).all() and (accuracy.loc[shown, "ci_low"] < 1.0).all()
    assert accuracy.loc[~shown, "ci_low"].isna().all()
    contrast = pd.read_csv(tables / "vignette_perception_activity_contrast.csv", index_col=[0, 1])
    assert set(contrast.index.get_level_values(0)) == {"struggle", "capability", "enjoyment", "dislike"}
    inside = (contrast["ci_low"] <= contrast["share"]) & (contrast["share"] <= contrast["ci_high"])
    assert (inside | contrast["ci_low"].isna()).all()
    # one answer per image pair: every share with an interval has the mid-p binomial interval of its counts
    shown = contrast[contrast["ci_low"].notna()]
    assert len(shown) > 0
    for _, row in shown.iterrows():
        low, high = jackknife.mid_p_interval(int(round(row["share"] * row["n"] / 100)), int(row["n"]))
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(100 * low, abs=1e-3), pytest.approx(100 * high, abs=1e-3))
    polarity = pd.read_csv(tables / "vignette_stereotype_polarity_tests.csv", index_col=[0, 1])
    # old man is given every term (vignette_low_terms empty): polarity 0 in every SSCM dimension
    assert (polarity.xs("old man", level=0)["polarity"] == 0.0).all()


def test_activity_contrast_keys_from_records():
    from lm_eval_bias.vignette import tasks as vignette

    records = []
    for k in range(14):
        a1, a2 = ("cooking", "cycling") if k % 2 else ("cycling", "cooking")  # sides alternate
        records.append({"doc_id": f"p{k}|struggle", "pair_id": f"p{k}", "paradigm": "perception",
                        "pair_kind": "activity", "left": "old man", "right": "old man", "asked": "old man",
                        "context": "old man", "dimension": "age", "gender": "male", "parameter": "struggle",
                        "question_type": "activity_choice", "status": "valid", "option_activity": [a1, a2],
                        "chosen_activity": "cycling", "chosen_identity": None})
    out = vignette.summarize(records)
    assert out["activity_selection_spread_struggle"] == pytest.approx(100.0)
    # 14 pairs, all one sign: z = sqrt(14), p = 1.8e-4; Holm over the 2 activities: both significant
    assert out["n_activities_significant_struggle"] == 2.0
    assert out["activity_selection_spread_struggle_p_null"] < 0.05
    assert math.isnan(out["activity_selection_spread_enjoyment"])


def test_activity_contrast_share_of_one_answer_per_pair_gets_the_mid_p_interval():
    # one perception question, activity "cycling" offered in 12 image pairs (one answer each), chosen in 9:
    # its share is 9 of 12 independent answers -> the mid-p binomial interval, not the pairs' logit-t
    records = []
    for k in range(12):
        for activity, chosen in (("cooking", int(k >= 9)), ("cycling", int(k < 9))):
            records.append((f"p{k}|struggle", f"p{k}", "old man", activity, "struggle", "age", "male", chosen))
    choices = pd.DataFrame(records, columns=["doc_id", "pair_id", "identity", "activity", "parameter", "dimension",
                                             "gender", "selected"])
    tests = vg.activity_contrast_tests(choices, n_boot=1, seed=0)
    row = tests.loc[("struggle", "cycling")]
    assert row["share"] == pytest.approx(75.0)
    low, high = jackknife.mid_p_interval(9, 12)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(100 * low), pytest.approx(100 * high))
    # the defining tail equations at both ends (Lancaster's mid-p), and narrower than the logit-t interval
    # with 11 df that the jackknife gives (SE = sqrt(p (1 - p) / 11) for one binary answer per pair)
    assert binom.sf(9, 12, low) + binom.pmf(9, 12, low) / 2 == pytest.approx(0.025)
    assert binom.cdf(8, 12, high) + binom.pmf(9, 12, high) / 2 == pytest.approx(0.025)
    se = math.sqrt(0.75 * 0.25 / 11)
    lt_low, lt_high = jackknife.logit_t_interval(0.75, se, 11, 12)
    assert lt_low < low and high < lt_high
    # the complementary share of cooking is its mirror image
    other = tests.loc[("struggle", "cooking")]
    assert (other["ci_low"], other["ci_high"]) == (pytest.approx(100 * (1 - high)), pytest.approx(100 * (1 - low)))
