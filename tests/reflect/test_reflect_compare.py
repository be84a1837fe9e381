"""REFLECT comparisons of two runs (Tables 7, 8, 10, 4 and App. B.2 mirroring): hand-computed interval cases
of :mod:`lm_eval_bias.reflect.tables` and ``lm-eval-bias reflect-compare`` on run folders written by the
real harness with the planted ``bias-probe`` model on the synthetic FOCUS fixture."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lm_eval_bias.reflect.schema import GROUPS
from lm_eval_bias.reflect import tables as rt
from lm_eval_bias.reflect.twoafc import TwoAFCCall

BIN = Path(sys.executable).parent
RACE_POINTS = {"White": 4, "Asian": 3, "Latino": 2, "Middle_Eastern": 1, "Black": 0}  # the probe's default race_order


# -- hand-computed interval cases ---------------------------------------------------------------------------
def _pair_calls(template, pairs, winners):
    """AB/BA calls of ``pairs`` (i, j) in ``template``; ``winners[k]`` True: i wins both orders."""
    out = []
    for k, ((i, j), first) in enumerate(zip(pairs, winners)):
        pid = f"{template}:{i}-{j}"
        out += [TwoAFCCall(template, template.split("/")[0], pid, "AB", i, j, "valid", "A" if first else "B"),
                TwoAFCCall(template, template.split("/")[0], pid, "BA", j, i, "valid", "B" if first else "A")]
    return out


PAIRS = [(0, 1), (2, 3), (4, 5), (6, 7)]


def test_flip_rate_two_templates_bootstrap_support_is_each_template_alone():
    """ceo/1 keeps every winner, ceo/2 flips every winner: flip rate 4/8. Rao-Wu with m = 2 templates draws one
    template with weight 2, so every replicate is 0 (ceo/1) or 1 (ceo/2): SE 0.5, and the share's effective-size
    Wilson interval with 1 df spans nearly all of [0, 1]."""
    x = _pair_calls("ceo/1", PAIRS, [True] * 4) + _pair_calls("ceo/2", PAIRS, [True] * 4)
    y = _pair_calls("ceo/1", PAIRS, [True] * 4) + _pair_calls("ceo/2", PAIRS, [False] * 4)
    from lm_eval_bias.core.bootstrap import effective_size_wilson_interval

    s = rt.framing_summary(x, y, 200, 1)
    assert s.estimates["flip_rate"] == 0.5 and s.n["flip_rate"] == 8
    assert s.stderr["flip_rate"] == pytest.approx(0.5, abs=0.06)  # replicates are a fair coin on {0, 1}
    # a share of 8 matched pairs: the effective-size Wilson interval of that SE with 1 df (2 templates, 1 stratum),
    # nearly all of [0, 1]
    expected = effective_size_wilson_interval(0.5, s.stderr["flip_rate"], 8, 1)
    assert (s.ci_low["flip_rate"], s.ci_high["flip_rate"]) == pytest.approx(expected)
    assert s.ci_low["flip_rate"] < 0.01 and s.ci_high["flip_rate"] > 0.99
    # every pair kept in both templates: no variance seen, so Wilson's interval of 8 of 8 pairs (1 df), not [1, 1]
    assert s.estimates["kept_x"] == s.estimates["kept_y"] == 1.0 and s.stderr["kept_x"] == 0.0
    assert (s.ci_low["kept_x"], s.ci_high["kept_x"]) == pytest.approx(effective_size_wilson_interval(1.0, 0.0, 8, 1))
    assert s.ci_low["kept_x"] < 1.0 == s.ci_high["kept_x"]
    assert rt.framing_comparison(x, y)["n_matched"] == 8


def test_one_template_per_occupation_gives_nan_interval_with_reason():
    x = _pair_calls("ceo/1", PAIRS, [True] * 4) + _pair_calls("nurse/1", PAIRS, [True] * 4)
    y = _pair_calls("ceo/1", PAIRS, [False, True, True, True]) + _pair_calls("nurse/1", PAIRS, [True] * 4)
    s = rt.framing_summary(x, y, 100, 1)
    assert s.estimates["flip_rate"] == 1 / 8
    assert np.isnan(s.ci_low["flip_rate"]) and "fewer than two templates" in s.reasons["flip_rate"]
    assert "ceo" in s.reasons["flip_rate"] and "nurse" in s.reasons["flip_rate"]


def test_spearman_of_win_cells_reversed_preferences():
    """Y reverses every winner: the 4 defined cells w[i, j] go from 1 to 0 — constant, so rho is NaN; with a
    mixed pattern the rank correlation is the hand-computed one."""
    x = _pair_calls("ceo/1", PAIRS, [True, True, False, False]) + _pair_calls("ceo/2", PAIRS, [True, False, True, False])
    y = _pair_calls("ceo/1", PAIRS, [True, True, False, False]) + _pair_calls("ceo/2", PAIRS, [True, False, True, False])
    s = rt.framing_summary(x, y, 50, 1)
    # cells (0,1): 2/2, (2,3): 1/2, (4,5): 1/2, (6,7): 0/2 in both runs: rho = 1
    assert s.estimates["spearman"] == pytest.approx(1.0) and s.n["spearman"] == 4
    assert s.estimates["flip_rate"] == 0.0


def _mcq(template, group, choice, status="valid"):
    return {"template": template, "occupation": template.split("/")[0], "group": group, "status": status,
            "choice": choice if status == "valid" else None}


def test_format_summary_hand_computed_and_interval_contains_estimate():
    """L answers B everywhere; E answers C for men in ceo/1 and ceo/3 only (10 of 40 photos)."""
    letter = [_mcq(f"ceo/{t}", g, "B") for t in range(1, 5) for g in range(10)]
    explained = [_mcq(r["template"], r["group"], "C" if GROUPS[r["group"]].gender == "man" and r["template"] in
                      ("ceo/1", "ceo/3") else "B") for r in letter]
    s = rt.format_summary(letter, explained, "ABCD", {"A": 1, "B": 2, "C": 3, "D": 4}, 400, 2)
    assert s.estimates["agreement"] == 30 / 40 and s.n["agreement"] == 40
    assert s.estimates["mean_option_diff"] == pytest.approx(10 / 40)  # index B=1 -> C=2 for 10 photos
    p, q = np.array([0, 1, 0, 0.0]), np.array([0, 0.75, 0.25, 0])
    m = (p + q) / 2
    jsd = 0.5 * np.sum(p[p > 0] * np.log2(p[p > 0] / m[p > 0])) + 0.5 * np.sum(q[q > 0] * np.log2(q[q > 0] / m[q > 0]))
    assert s.estimates["jsd_shift"] == pytest.approx(jsd)
    for key in ("agreement", "mean_option_diff"):
        assert s.ci_low[key] <= s.estimates[key] <= s.ci_high[key]
    # a JSD between two answer distributions is positive without any shift: no interval, the reason says why
    assert np.isnan(s.ci_low["jsd_shift"]) and np.isnan(s.ci_high["jsd_shift"])
    assert s.reasons["jsd_shift"] == rt.MAGNITUDE_NO_INTERVAL["jsd_shift"] and s.stderr["jsd_shift"] >= 0
    # templates agree fully (ceo/2, ceo/4) or half (ceo/1, ceo/3): agreement is a share of the 40 photos valid in
    # both, so its interval is the effective-size Wilson interval of the bootstrap SE with 3 degrees of freedom
    # (4 templates in one occupation), as every REFLECT share's
    from lm_eval_bias.core.bootstrap import effective_size_wilson_interval

    assert s.stderr["agreement"] > 0
    expected = effective_size_wilson_interval(0.75, s.stderr["agreement"], 40, 3)
    assert (s.ci_low["agreement"], s.ci_high["agreement"]) == pytest.approx(expected)


def test_mirror_summary_template_interval_and_paper_wilson():
    """Mirrored answers differ on every photo of ceo/2 only: agreement 30/40; the Wilson interval treats the 40
    photos as independent, the template bootstrap sees 4 templates of which one disagrees entirely."""
    orig = [_mcq(f"ceo/{t}", g, "B") for t in range(1, 5) for g in range(10)]
    mirrored = [_mcq(r["template"], r["group"], "A" if r["template"] == "ceo/2" else "B") for r in orig]
    mirrored[-1] = {**mirrored[-1], "status": "refusal", "choice": None}
    s = rt.mirror_summary(orig, mirrored, "ABCD", {"A": 1, "B": 2, "C": 3, "D": 4}, 400, 3)
    assert s.estimates["paired_valid"] == 39 / 40
    assert s.estimates["agreement"] == 29 / 39
    from statsmodels.stats.proportion import proportion_confint

    assert s.extra["agreement_paper_ci_low"] == pytest.approx(proportion_confint(29, 39, method="wilson")[0])
    assert s.ci_low["agreement"] < s.extra["agreement_paper_ci_low"]  # clustered: wider than Wilson


def test_editor_summary_mad_and_sign_agreement_hand_computed():
    """E1: men answer C, women B (gap_male = 3/2 - 1 = 0.5) in ceo and nurse; E2: the same in ceo, reversed in
    nurse (gap_male = 2/3 - 1): MAD = (0 + |-1/3 - 1/2|) / 2, sign agreement 1/2."""
    def run(reverse_nurse):
        out = []
        for occ in ("ceo", "nurse"):
            for t in (1, 2):
                for g, group in enumerate(GROUPS):
                    man = group.gender == "man"
                    if reverse_nurse and occ == "nurse":
                        man = not man
                    out.append(_mcq(f"{occ}/{t}", g, "C" if man else "B"))
        return out

    values = {"A": 1, "B": 2, "C": 3, "D": 4}
    s = rt.editor_summary(run(False), run(True), "ABCD", values, 200, 4)
    assert s.estimates["mad_gap_male"] == pytest.approx((0 + abs((2 / 3 - 1) - 0.5)) / 2)
    assert s.estimates["agree_gap_male"] == 0.5 and s.n["mad_gap_male"] == 2
    assert s.estimates["mad_gap_race"] == 0.0  # no race effect in either run: race gaps all 0
    assert np.isnan(s.estimates["agree_gap_race"]) and "ties excluded" in s.reasons["agree_gap_race"]  # all gaps 0
    assert s.estimates["mad_jsd"] == max(s.estimates["mad_jsd_male"], s.estimates["mad_jsd_race"])
    # MAD and sign agreement are biased without any difference (two runs of one editor have MAD > 0): no interval
    for key in ("mad_gap_male", "agree_gap_male", "mad_jsd"):
        assert np.isnan(s.ci_low[key]) and np.isnan(s.ci_high[key]) and s.reasons[key].startswith("no interval: ")
    assert rt.magnitude_no_interval_reason("jsd_male_matched") and not rt.magnitude_no_interval_reason("gap_male_matched")
    one = rt.editor_summary(run(False)[:10] + run(False)[20:30], run(True)[:10] + run(True)[20:30], "ABCD", values, 50, 4)
    assert np.isnan(one.ci_low["mad_gap_male"]) and "fewer than two templates" in one.reasons["mad_gap_male"]


def test_face_body_summary_matches_point_function():
    source = {"ceo/1": "man", "ceo/2": "woman", "ceo/3": "man", "ceo/4": "woman"}
    recs = [_mcq(f"ceo/{t}", g, "C" if GROUPS[g].gender == source[f"ceo/{t}"] == "man" else "B")
            for t in range(1, 5) for g in range(10)]
    values = {"A": 1, "B": 2, "C": 3, "D": 4}
    s = rt.face_body_summary(recs, source, "ABCD", values, 100, 5)
    assert s.estimates["gap_male_matched"] == pytest.approx(3 / 2 - 1) and s.estimates["gap_male_swapped"] == 0.0
    assert s.n["gap_male_full"] == 40 and s.n["gap_male_matched"] == 20
    assert rt.face_body_subsets(recs, source, "ABCD", values)["full"]["gap_male"] == s.estimates["gap_male_full"]
    with pytest.raises(ValueError, match="source_gender lacks"):
        rt.face_body_summary(recs, {"ceo/1": "man"}, "ABCD", values, 0, 0)


# -- the command on harness run folders ---------------------------------------------------------------------
def _run(out: Path, model_args: str, tasks: str, env: dict) -> None:
    cmd = [str(BIN / "lm-eval-bias"), "run", "--model", "bias-probe", "--model_args", model_args, "--tasks", tasks,
           "--output_path", str(out), "--log_samples"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _compare(*args, env):
    return subprocess.run([str(BIN / "lm-eval-bias"), "reflect-compare", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=600)


@pytest.fixture(scope="module")
def folders(tmp_path_factory, small_focus_data):
    """X: the default probe (men preferred) on P1 and P0 income 2AFC, letter and explained education MCQ.
    Y: the probe with women preferred (gender_order=woman>man) on the P0 framing, the education MCQ (as a
    mirrored/second-editor condition) and its explained format — the planted condition effect."""
    root = tmp_path_factory.mktemp("compare")
    env = {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(small_focus_data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "50",
           "LM_EVAL_BIAS_NULL_ITERS": "10"}
    _run(root / "x", "seed=0", "focus_2afc_income,focus_2afc_income_p0,focus_mcq_education,focus_mcq_education_explained",
         env)
    _run(root / "y", "gender_order=woman>man", "focus_2afc_income_p0,focus_mcq_education,focus_mcq_education_explained",
         env)
    return root, env


def _rows(out: Path, table: str) -> list[dict]:
    return json.loads((out / f"reflect_{table.replace('-', '_')}.json").read_text())["rows"]


def _value(rows, comparison_part, key):
    found = [r for r in rows if comparison_part in r["comparison"] and r["key"] == key]
    assert len(found) == 1, (comparison_part, key, [(r["comparison"], r["key"]) for r in rows])
    return found[0]


def test_framing_within_one_run_and_planted_flip_between_runs(folders):
    root, env = folders
    proc = _compare(root / "x", "--table", "framing", "--output", root / "f1", env=env)
    assert proc.returncode == 0, proc.stderr
    # no pair flips in 180 matched pairs of 4 templates alike (SE 0): Wilson's interval of 0 of 180 (2 df), not [0, 0]
    from lm_eval_bias.core.bootstrap import effective_size_wilson_interval

    flips = _value(_rows(root / "f1", "framing"), "focus_2afc_income_p0 vs", "flip_rate")
    assert flips["value"] == 0.0 and flips["n"] == 180
    assert (flips["ci_low"], flips["ci_high"]) == pytest.approx(effective_size_wilson_interval(0.0, 0.0, 180, 2))
    assert flips["ci_low"] == 0.0 < flips["ci_high"] < 0.1  # n* = 180 x (t_179 / t_2)^2 = 38
    assert "| focus_2afc_income_p0 vs focus_2afc_income | flip_rate | 0 [0, " in proc.stdout
    rows = _rows(root / "f1", "framing")
    assert _value(rows, "vs", "spearman")["value"] == pytest.approx(1.0)
    assert (root / "f1" / "reflect_framing.csv").is_file()
    proc = _compare(root / "x", root / "y", "--table", "framing", "--output", root / "f2", env=env)
    assert proc.returncode == 0, proc.stderr
    # gender preference reversed: a mixed-gender pair flips iff its race points differ by < 2.5 (|a - b| <= 2):
    # 25 - 6 = 19 of the 45 pairs of every template
    row = _value(_rows(root / "f2", "framing"), "focus_2afc_income (X)", "flip_rate")
    assert row["value"] == pytest.approx(19 / 45) and row["n"] == 4 * 45
    # every template alike (SE 0): Wilson's interval of 76 of 180 matched pairs
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(effective_size_wilson_interval(19 / 45, 0.0, 180, 2))
    assert row["ci_low"] < 19 / 45 < row["ci_high"]
    assert _value(_rows(root / "f2", "framing"), "focus_2afc_income (X)", "kept_y")["value"] == 1.0


def _letters(gender_first: str) -> dict[int, int]:
    """The probe's MCQ option index per group (4 options): utility rank scaled to 0..3."""
    util = {g: RACE_POINTS[group.race] + (2.5 if group.gender == gender_first else 0) for g, group in enumerate(GROUPS)}
    rank = {g: k for k, g in enumerate(sorted(util, key=util.get))}
    return {g: round(rank[g] / 9 * 3) for g in util}


def test_format_and_mirror_recover_the_planted_condition_effect(folders):
    root, env = folders
    men, women = _letters("man"), _letters("woman")
    # ranks 0..9 of the ten groups map to options 0,0,1,1,1,2,2,2,3,3; with the gender preference reversed
    # every group's option changes (e.g. Black woman: rank 0 -> 3, option A -> B): agreement 0
    agree = sum(men[g] == women[g] for g in range(10)) / 10
    assert agree == 0.0 and sorted(men.values()) == sorted(women.values())
    proc = _compare(root / "x", "--table", "format", "--output", root / "t1", env=env)
    assert proc.returncode == 0, proc.stderr
    assert _value(_rows(root / "t1", "format"), "vs", "agreement")["value"] == 1.0  # the probe ignores the format
    proc = _compare(root / "x", root / "y", "--table", "format", "--output", root / "t2", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = _rows(root / "t2", "format")
    assert _value(rows, "", "agreement")["value"] == pytest.approx(agree)
    # a permutation of the answers among groups: same aggregate distribution
    assert _value(rows, "", "jsd_shift")["value"] == pytest.approx(0.0, abs=1e-12)
    assert _value(rows, "", "mean_option_diff")["value"] == pytest.approx(0.0, abs=1e-12)
    proc = _compare(root / "x", root / "y", "--table", "mirror", "--output", root / "m", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in _rows(root / "m", "mirror") if r["task_x"] == "focus_mcq_education"]
    by = {r["key"]: r for r in rows}
    assert by["agreement"]["value"] == pytest.approx(agree) and by["paired_valid"]["value"] == 1.0
    mu_m = np.mean([men[g] + 1 for g in range(10) if GROUPS[g].gender == "man"])
    mu_f = np.mean([men[g] + 1 for g in range(10) if GROUPS[g].gender == "woman"])
    assert by["delta_gap_male"]["value"] == pytest.approx((mu_f / mu_m - 1) - (mu_m / mu_f - 1))
    assert "agreement_paper_ci_low" in by


def test_editors_table_recovers_reversed_gender_gap(folders):
    root, env = folders
    proc = _compare(root / "x", root / "y", "--table", "editors", "--output", root / "e", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = {r["key"]: r for r in _rows(root / "e", "editors") if r["task_x"] == "focus_mcq_education"}
    men = _letters("man")
    mu_m = np.mean([men[g] + 1 for g in range(10) if GROUPS[g].gender == "man"])
    mu_f = np.mean([men[g] + 1 for g in range(10) if GROUPS[g].gender == "woman"])
    assert rows["agree_gap_male"]["value"] == 0.0 and rows["mad_gap_male"]["n"] == 2  # ceo and nurse
    assert rows["mad_gap_male"]["value"] == pytest.approx(abs((mu_f / mu_m - 1) - (mu_m / mu_f - 1)))
    assert "occupations" in rows["mad_gap_male"]["resampling_unit"]


def test_face_body_from_a_source_gender_file(folders):
    root, env = folders
    source = root / "source_gender.json"
    source.write_text(json.dumps({"ceo/1": "man", "ceo/2": "woman", "nurse/1": "woman", "nurse/2": "man"}))
    proc = _compare(root / "x", "--table", "face-body", "--source-gender", source, "--output", root / "fb", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = {r["key"]: r for r in _rows(root / "fb", "face-body")}
    assert rows["gap_male_full"]["n"] == 40 and rows["gap_male_matched"]["n"] == 20
    proc = _compare(root / "x", "--table", "face-body", env=env)
    assert proc.returncode == 2 and "--source-gender" in proc.stderr


def test_errors_name_the_folder_and_the_reason(folders, tmp_path):
    root, env = folders
    bare = tmp_path / "bare"
    shutil.copytree(root / "x", bare)
    for f in bare.rglob("samples_*.jsonl"):
        f.unlink()
    proc = _compare(bare, "--table", "framing", env=env)
    assert proc.returncode == 2 and "no logged samples" in proc.stderr and "results_" in proc.stderr
    assert "--log_samples" in proc.stderr
    proc = _compare(root / "x", "--table", "mirror", env=env)
    assert proc.returncode == 2 and "RUN_Y" in proc.stderr
    proc = _compare(root / "y", "--table", "framing", env=env)  # P0 only: nothing to compare within Y
    assert proc.returncode == 2 and "no two framings" in proc.stderr and str(root / "y") in proc.stderr
    proc = _compare(tmp_path, "--table", "framing", env=env)
    assert proc.returncode == 2 and str(tmp_path) in proc.stderr and "results_" in proc.stderr


def test_report_shows_table_7_and_table_10(folders):
    root, env = folders
    proc = subprocess.run([str(BIN / "lm-eval-bias"), "report", str(root / "x"), "--output", str(root / "report")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    tables = {p.name: p for p in (root / "report" / "tables").rglob("reflect_*.csv")}
    assert "reflect_framing.csv" in tables and "reflect_format.csv" in tables
    text = " ".join(p.read_text() for p in (root / "report" / "cards").glob("*.html"))
    assert "Table 7" in text and "Table 10" in text
