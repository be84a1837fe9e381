"""Model labels come from model_args (a model path, an API model name): the report escapes them in
leaderboard.md (no raw HTML, no table syntax), leaderboard.csv (no spreadsheet formula), leaderboard.json
(valid JSON: null, never NaN) and index.html, and every file parses back."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from lm_eval_bias.report.render import csv_cell, csv_safe, md_escape

EVIL = "<script>alert(1)</script>|=cmd|' /C calc'!A0"
FORMULA = "=cmd|' /C calc'!A0"
MATH = "@SUM(1+1) $\\frac{x$ *[a](b)*_`c`\\\nd"  # also mathtext that matplotlib cannot parse


def test_markdown_cell_escaping():
    assert md_escape(EVIL) == "&lt;script&gt;alert(1)&lt;/script&gt;\\|=cmd\\|' /C calc'!A0"
    assert md_escape("a & b") == "a &amp; b"
    assert md_escape("*[a](b)*_`c`\\\nd") == "\\*\\[a\\](b)\\*\\_\\`c\\`\\\\ d"
    assert md_escape("x\r\ny\rz") == "x y z"


def test_csv_cells_never_start_a_formula_but_numbers_stay_numbers():
    for text in ("=1+2", "+1+2", "-1+2", "@SUM(A1)", "\t=1", "\r=1", "-cmd"):
        assert csv_cell(text) == "'" + text
    for value in (-0.12, "-0.12", "+3", "plain", "<b>", 7, None):
        assert csv_cell(value) == value
    frame = pd.DataFrame({"model": ["=evil()", "ok"], "score": [-0.12, 0.5]}).set_index("model")
    frame.index.name = "=idx"
    text = csv_safe(frame).to_csv()
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [["'=idx", "score"], ["'=evil()", "-0.12"], ["ok", "0.5"]]
    assert frame.index[0] == "=evil()"  # the input is not changed


@pytest.fixture(scope="module")
def report(tmp_path_factory, small_focus_data):
    """A real bias-probe run (and one that refuses everything: NaN metrics), filed under hostile labels."""
    import os

    from lm_eval_bias.cli import main
    from lm_eval_bias.report import build_report

    root = tmp_path_factory.mktemp("escaping")
    saved = {k: os.environ.get(k) for k in ("LM_EVAL_BIAS_DATA_DIR", "LM_EVAL_BIAS_BOOTSTRAP_ITERS")}
    os.environ.update(LM_EVAL_BIAS_DATA_DIR=str(small_focus_data), LM_EVAL_BIAS_BOOTSTRAP_ITERS="20")
    try:
        for name, args in (("plain", "seed=1"), ("refusing", "refusal_rate=1.0")):
            main(["run", "--model", "bias-probe", "--model_args", args, "--tasks", "focus_2afc_income", "--limit", "90",
                  "--device", "cpu", "--output_path", str(root / "raw" / name), "--log_samples"])
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    for k, (label, source) in enumerate(((EVIL, "plain"), (FORMULA, "plain"), (MATH, "refusing"))):
        target = root / "runs" / f"m{k}"
        shutil.copytree(root / "raw" / source, target)
        for results_file in target.rglob("results_*.json"):
            results = json.loads(results_file.read_text())
            results["config"]["model_args"]["pretrained"] = label  # the label is the model path
            results_file.write_text(json.dumps(results))
    build_report([root / "runs"], root / "report")
    return root / "report"


def test_leaderboard_markdown_is_escaped(report):
    text = (report / "leaderboard.md").read_text()
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;\\|=cmd\\|' /C calc'!A0" in text
    lines = text.splitlines()
    assert len(lines) == 5  # header, rule, three models: no label broke a row
    cells = [len(re.split(r"(?<!\\)\|", line)) for line in lines]
    assert len(set(cells)) == 1, cells


def test_leaderboard_csv_has_no_formula_and_parses(report):
    rows = list(csv.reader(io.StringIO((report / "leaderboard.csv").read_text())))
    assert [row[0] for row in rows[1:]] == [EVIL, "'" + FORMULA, "'" + MATH]
    for row in rows[1:]:
        for cell in row[1:]:
            assert cell == "" or math.isfinite(float(cell)) or math.isnan(float(cell))
    for row in rows:
        assert not any(cell.startswith(("=", "+", "@", "\t", "\r")) for cell in row)
    spearman = (report / "tables" / "cross_model_spearman_focus_2afc_income.csv").read_text()
    assert list(csv.reader(io.StringIO(spearman)))[0][1:] == [EVIL, "'" + FORMULA, "'" + MATH]


def test_leaderboard_json_is_strict_json(report):
    def no_constants(name):
        raise AssertionError(f"{name} in leaderboard.json")

    listed = json.loads((report / "leaderboard.json").read_text(), parse_constant=no_constants)
    assert [entry["model"] for entry in listed] == [EVIL, FORMULA, MATH]
    refusing = listed[2]["metrics"]["focus_2afc_income:male_win_rate"]
    assert refusing["value"] is None  # NaN (no retained comparison) is null


def test_html_escapes_labels(report):
    page = (report / "index.html").read_text()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;|=cmd|&#x27; /C calc&#x27;!A0" in page
    assert page.count("&lt;script&gt;alert(1)") >= 3  # model table, comparison and leaderboard headers
    cards = [p.read_text() for p in (report / "cards").glob("*.html")]
    assert len(cards) == 3 and all("<script>" not in card for card in cards)
    assert sum("<h1>Bias card: &lt;script&gt;alert(1)&lt;/script&gt;|=cmd|" in card for card in cards) == 1
    assert Path(report / "figures" / "_comparison" / "cross_model_spearman_focus_2afc_income.png").stat().st_size > 1000
