"""Bias report: built from real lm-eval output folders of planted-bias runs, checked on its CSV tables,
leaderboard and cross-model correlations, robust to partial runs, and opened in headless Chromium."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lm_eval_bias.focus_schema import GROUPS
from lm_eval_bias.models.bias_probe import BiasProbeLM

BIN = Path(sys.executable).parent
TASKS = ("focus_2afc_income,focus_mcq_salary,focus_salary,fact_or_fair_objective_gender,"
         "fact_or_fair_subjective_baseline_gender,cf_vqa,vignette_stereotype,vignette_decision")
MODEL_A = "vignette_prefer=old woman,vignette_low_terms=unfriendly|dishonest|incompetent|disreputable,cf_flip=0.5"
MODEL_B = "race_order=Black>Latino>White>Asian>Middle_Eastern,gender_order=woman>man"
PARTIAL = "refusal_rate=1.0"


def _run(out: Path, model_args: str, tasks: str, env: dict, limit: int | None = None) -> None:
    cmd = [str(BIN / "lm-eval-bias"), "run", "--model", "bias-probe", "--model_args", model_args, "--tasks", tasks,
           "--output_path", str(out), "--log_samples"] + (["--limit", str(limit)] if limit else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def report(tmp_path_factory, small_focus_data, small_fof_data, small_cf_vqa_data, small_vignette_data):
    root = tmp_path_factory.mktemp("report")
    data = root / "data"
    data.mkdir()
    for folder in (small_focus_data / "focus", small_focus_data / "focus_bios", small_fof_data / "fact_or_fair",
                   small_cf_vqa_data / "cf_vqa", small_vignette_data / "vignette"):
        os.symlink(folder, data / folder.name)
    env = {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "50"}
    _run(root / "runs" / "a", MODEL_A, TASKS, env)
    _run(root / "runs" / "b", MODEL_B, TASKS, env)
    _run(root / "runs" / "partial", PARTIAL, "focus_2afc_income,vignette_decision", env, limit=4)
    env_report = {**env}
    proc = subprocess.run([str(BIN / "lm-eval-bias"), "report", str(root / "runs"), "--output", str(root / "report")],
                          capture_output=True, text=True, env=env_report, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root / "report"


def _model_folder(report: Path, kind: str, needle: str) -> Path:
    matches = [p for p in (report / kind).iterdir() if p.is_dir() and needle in p.name]
    assert len(matches) == 1, [p.name for p in (report / kind).iterdir()]
    return matches[0]


def _expected_win_matrix(**kwargs) -> np.ndarray:
    utilities = BiasProbeLM(**kwargs).utilities
    n = len(GROUPS)
    w = np.array([[float(utilities[i] > utilities[j]) for j in range(n)] for i in range(n)])
    np.fill_diagonal(w, np.nan)
    return w


def test_win_matrix_csv_shows_the_planted_preference(report):
    for needle, kwargs in (("vignette_prefer", {}), ("race_order", {"race_order": "Black>Latino>White>Asian>Middle_Eastern",
                                                                     "gender_order": "woman>man"})):
        table = pd.read_csv(_model_folder(report, "tables", needle) / "focus_2afc_income_win_matrix.csv", index_col=0)
        assert list(table.index) == [f"{g.race} {g.gender}" for g in GROUPS]
        np.testing.assert_array_equal(table.values, _expected_win_matrix(**kwargs))


def test_spearman_and_leaderboard(report):
    from scipy.stats import spearmanr

    table = pd.read_csv(report / "tables" / "cross_model_spearman_focus_2afc_income.csv", index_col=0)
    assert table.shape == (3, 3)
    label_a, label_b, label_partial = (next(m for m in table.index if n in m) for n in ("vignette_prefer", "race_order",
                                                                                       "refusal_rate"))
    assert table.loc[label_a, label_a] == 1.0 and table.loc[label_b, label_b] == 1.0
    assert table.loc[label_partial].isna().all()  # no retained comparison: no correlation, not a crash
    a = _expected_win_matrix()
    b = _expected_win_matrix(race_order="Black>Latino>White>Asian>Middle_Eastern", gender_order="woman>man")
    upper = np.triu_indices(10, k=1)
    assert table.loc[label_a, label_b] == pytest.approx(spearmanr(a[upper], b[upper]).statistic)

    board = pd.read_csv(report / "leaderboard.csv", index_col=0)
    assert len(board) == 3 and any("race_order" in m for m in board.index)
    row = board.loc[[m for m in board.index if "race_order" in m][0]]
    from tests.test_reflect_pipeline import expected_2afc_deterministic

    male, _ = expected_2afc_deterministic(BiasProbeLM(race_order="Black>Latino>White>Asian>Middle_Eastern",
                                                      gender_order="woman>man").utilities)
    assert row["focus_2afc_income:male_win_rate"] == pytest.approx(male) and male < 0.5
    assert row["focus_2afc_income:male_win_rate:ci95_low"] <= male <= row["focus_2afc_income:male_win_rate:ci95_high"]
    listed = json.loads((report / "leaderboard.json").read_text())
    assert {entry["model"] for entry in listed} == set(board.index)
    assert listed[0]["metrics"]["focus_2afc_income:male_win_rate"]["ci95"] is not None
    assert (report / "leaderboard.md").read_text().count("\n| bias-probe") == 3


def test_vignette_and_cf_vqa_tables(report):
    folder = _model_folder(report, "tables", "vignette_prefer")
    identities = pd.read_csv(folder / "vignette_decision_decision_identities.csv", index_col=0)
    assert identities.loc["old woman", "selection_frequency"] == 100.0
    assert identities.loc["young woman", "selection_frequency"] == 0.0
    assert identities.loc["old woman", "correction"] == "holm"
    polarity = pd.read_csv(folder / "vignette_stereotype_polarity.csv", index_col=0)
    assert (polarity.loc["old woman"] == 100.0).all()
    categories = pd.read_csv(folder / "cf_vqa_categories.csv", index_col=0)
    assert set(categories.columns) == {"cf_vqa"}
    assert (categories.loc[[i for i in categories.index if i.startswith("consistency ·")], "cf_vqa"] < 1.0).all()
    figures = _model_folder(report, "figures", "vignette_prefer")
    for name in ("focus_2afc_income_win_matrix", "focus_2afc_income_race_gender", "focus_mcq_salary_gaps",
                 "focus_salary_gaps_by_occupation", "fact_or_fair_tradeoff", "cf_vqa_curves", "vignette_stereotype_polarity"):
        assert (figures / f"{name}.png").stat().st_size > 2000, name


def test_partial_run_sections_say_what_is_missing(report):
    html = (report / "index.html").read_text()
    assert "No FACT-OR-FAIR task in this run." in html and "No Counterfactual VQA task in this run." in html
    assert "vignette_decision: no valid identity choice, nothing to draw." in html
    folder = _model_folder(report, "tables", "refusal_rate")
    headline = pd.read_csv(folder / "focus_2afc_income_headline.csv", index_col=0)
    assert headline.loc["refusal_rate", "value"] == 1.0 and headline.loc["retained_rate", "value"] == 0.0


def test_html_is_self_contained_and_opens_in_chromium(report, tmp_path):
    html = (report / "index.html").read_text()
    assert "data:image/png;base64," in html and "http://" not in html and "https://" not in html
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install Debian's chromium (see .ci/run)")
        pytest.skip("chromium not installed")

    def open_page(page: Path, shot: Path) -> str:
        proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               "--enable-logging=stderr", "--v=0", "--window-size=1280,2000", f"--screenshot={shot}",
                               page.as_uri()], capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stderr

    # the console check itself catches errors
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>throw new Error('planted failure')</script></body></html>")
    assert "Uncaught Error: planted failure" in open_page(bad, tmp_path / "bad.png")

    log = open_page(report / "index.html", tmp_path / "report.png")
    console = [line for line in log.splitlines() if ":CONSOLE" in line]
    assert console == [], console
    from PIL import Image

    with Image.open(tmp_path / "report.png") as shot:
        assert shot.size == (1280, 2000)
        assert len(shot.convert("L").getcolors(maxcolors=100000) or []) > 50  # not a blank page
