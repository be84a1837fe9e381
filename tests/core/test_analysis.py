"""The full analysis from logged samples (``lm-eval-bias analyze``, ``lm_eval_bias.analysis``), through the
real commands on a planted-bias run:

- every key the tasks reported before the headline change comes out of the samples, equal to the
  statistics functions applied to records built here by hand from each sample's doc and response
  (REFLECT), and every headline value equals lm-eval's results exactly (every benchmark);
- the CSV has the n and interval columns (n counted by hand), the JSON every key, the LaTeX booktabs
  tables with 3-decimal rounding;
- errors are one line and leave no half-written file.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
TASKS = ("focus_2afc_income", "focus_mcq_salary", "focus_salary", "fact_or_fair_objective_gender", "vignette_decision")
SETTINGS = {"LM_EVAL_BIAS_BOOTSTRAP_ITERS": "30", "LM_EVAL_BIAS_NULL_ITERS": "30", "LM_EVAL_BIAS_BOOTSTRAP_SEED": "7"}


@pytest.fixture(scope="module")
def analysed(small_focus_data, small_fof_data, small_vignette_data, tmp_path_factory):
    """A planted run (--log_samples) of one task per family, then ``lm-eval-bias analyze`` on it."""
    tmp = tmp_path_factory.mktemp("analysis")
    data = tmp / "data"
    data.mkdir()
    for source in (small_focus_data, small_fof_data, small_vignette_data):
        for child in source.iterdir():
            (data / child.name).symlink_to(child)
    env = {**os.environ, **SETTINGS, "LM_EVAL_BIAS_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "LMEVAL_HASHMM": "0"}
    run = subprocess.run([str(BIN / "lm-eval-bias"), "run", "--model", "bias-probe", "--model_args",
                          "race_order=White>Asian>Latino>Middle_Eastern>Black,refusal_rate=0.1,seed=3",
                          "--tasks", ",".join(TASKS), "--limit", "120", "--log_samples", "--output_path", str(tmp / "run")],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    done = subprocess.run([str(BIN / "lm-eval-bias"), "analyze", str(tmp / "run"), "--output", str(tmp / "out")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (results_file,) = list((tmp / "run").rglob("results_*.json"))
    return tmp, json.loads(results_file.read_text()), done


def _samples(tmp: Path, task: str) -> list[dict]:
    (file,) = list((tmp / "run").rglob(f"samples_{task}_2*.jsonl"))
    return [json.loads(line) for line in file.read_text().splitlines()]


def _same(a: float | None, b: float | None) -> bool:
    a = math.nan if a is None else a
    b = math.nan if b is None else b
    return a == b or (math.isnan(a) and math.isnan(b))


def test_the_command_writes_csv_json_and_latex_for_every_task(analysed):
    tmp, _, done = analysed
    written = sorted(p.name for p in (tmp / "out").iterdir())
    assert written == sorted(f"{t}.{ext}" for t in TASKS for ext in ("csv", "json", "tex"))
    assert f"wrote {3 * len(TASKS)} files" in done.stdout


def test_every_headline_value_is_the_one_in_lm_evals_results(analysed):
    tmp, results, _ = analysed
    for task in TASKS:
        values = json.loads((tmp / "out" / f"{task}.json").read_text())["values"]
        reported = {k.split(",")[0]: v for k, v in results["results"][task].items() if "," in k and v != "N/A"}
        headline = json.loads((tmp / "out" / f"{task}.json").read_text())["headline"]
        assert headline and set(headline) <= set(reported), task
        for key in headline:
            assert _same(values[key], reported[key]), (task, key, values[key], reported[key])


def _hand_2afc_records(samples: list[dict]) -> list[dict]:
    """2AFC records from each sample's doc and raw response, by hand: the probe answers a bare letter or
    refuses in words."""
    out = []
    for s in samples:
        doc, text = s["doc"], s["filtered_resps"][0].strip()
        letter = text if text in ("A", "B") else None
        out.append({"template": doc["template"], "occupation": doc["occupation"], "pair_id": doc["pair_id"],
                    "order": doc["order"], "group_a": doc["group_a"], "group_b": doc["group_b"],
                    "status": "valid" if letter else "refusal", "choice": letter,
                    "missing_groups": doc["missing_groups"]})
    return out


def test_every_2afc_key_equals_the_statistics_on_records_built_by_hand(analysed, monkeypatch):
    """0 mismatches over every key the task reported before (the family's keys and the tables keys):
    the analysis of the samples files vs. the same statistics functions on hand-built records."""
    from lm_eval_bias.reflect import tasks as reflect

    for name, value in SETTINGS.items():
        monkeypatch.setenv(name, value)
    tmp, _, _ = analysed
    records = _hand_2afc_records(_samples(tmp, "focus_2afc_income"))
    assert {r["status"] for r in records} == {"valid", "refusal"}
    expected = {**reflect.FAMILIES["2afc"].values(records), **reflect.TABLE_FAMILIES["2afc"].values(records)}
    from lm_eval_bias.reflect import analysis as reflect_analysis  # issue 31: the families' power statements

    expected.update(reflect_analysis.power_keys(reflect_analysis.power_statements("2afc", expected, records)))
    values = json.loads((tmp / "out" / "focus_2afc_income.json").read_text())["values"]
    assert set(values) == set(expected) and len(values) > 100
    mismatches = [k for k in expected if not _same(values[k], expected[k])]
    assert mismatches == []


def test_csv_rows_carry_n_and_intervals_counted_by_hand(analysed):
    import pandas as pd

    from lm_eval_bias.reflect.schema import GROUPS

    tmp, _, _ = analysed
    frame = pd.read_csv(tmp / "out" / "focus_2afc_income.csv", keep_default_na=False, na_values=[""])
    assert {"quantity", "metric", "group", "estimate", "stderr", "ci_low", "ci_high", "n", "section", "where"} <= set(frame)
    samples = _samples(tmp, "focus_2afc_income")
    rows = frame.set_index("quantity")
    for race in ("asian", "white"):
        involving = sum(race in {GROUPS[s["doc"]["group_a"]].race.lower(), GROUPS[s["doc"]["group_b"]].race.lower()}
                        for s in samples)
        row = rows.loc[f"win_rate_{race}"]
        assert (row["metric"], row["group"], row["n"], row["where"]) == ("win_rate", race, involving, "analysis")
        assert row["ci_low"] <= row["estimate"] <= row["ci_high"]
    assert rows.loc["polarization", "where"] == "results" and rows.loc["polarization", "n"] == len(samples)
    assert rows.loc["polarization", "section"] == "Sec. 4.1 (Pol)"
    assert rows.loc["p_win_rate_asian", "holm"] >= rows.loc["p_win_rate_asian", "estimate"]


def test_latex_tables_are_booktabs_with_three_decimals(analysed):
    tmp, _, _ = analysed
    text = (tmp / "out" / "focus_2afc_income.tex").read_text()
    values = json.loads((tmp / "out" / "focus_2afc_income.json").read_text())["values"]
    assert text.count(r"\begin{table}") >= 4 and text.count(r"\toprule") == text.count(r"\bottomrule")
    line = next(x for x in text.splitlines() if x.startswith("white &") and "win" not in x)
    assert f"{values['win_rate_white']:.3f}" in line and f"{values['win_rate_white_ci_low']:.3f}" in line
    assert r"middle\_eastern" in text  # escaped for LaTeX


def test_analysis_in_python_by_group(analysed, monkeypatch):
    from lm_eval_bias import analysis

    for name, value in SETTINGS.items():  # the run's resampling settings (other tests may have left others)
        monkeypatch.setenv(name, value)
    tmp, _, _ = analysed
    run = analysis.analyze(tmp / "run", ["focus_mcq_salary", "vignette_decision"])
    mcq = run["focus_mcq_salary"]
    jsd = mcq.by_group("jsd")
    assert set(jsd.index) == {"female", "male", "asian", "black", "latino", "middle_eastern", "white"}
    assert {"estimate", "null", "p_null", "n"} <= set(jsd.columns)
    # JSD's interval needs MIN_JSD_DF between-template df (templates - occupations); NaN below, never an interval
    # of the plug-in
    from lm_eval_bias.reflect.mcq import MIN_JSD_DF

    df = mcq.values["n_templates"] - mcq.values["n_occupations"]
    if df < MIN_JSD_DF:
        assert "ci_low" not in jsd.columns or jsd["ci_low"].isna().all()
    else:
        assert (0 <= jsd["ci_low"]).all() and (jsd["ci_low"] <= jsd["ci_high"]).all()
    assert jsd.loc["female", "estimate"] == mcq.values["jsd_female"]
    spreads = run["vignette_decision"].by_group("selection_spread")
    assert spreads.loc["age", "where"] == "results" and spreads.loc["age", "n"] > 0
    with pytest.raises(KeyError, match="no metric 'nonsense' by group"):
        mcq.by_group("nonsense")


def test_errors_are_one_line_and_leave_no_file(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    missing = subprocess.run([str(BIN / "lm-eval-bias"), "analyze", str(tmp_path / "nowhere"), "--output",
                              str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.startswith("error: analyze: ")
    assert len(missing.stderr.strip().splitlines()) == 1 and "Traceback" not in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = subprocess.run([str(BIN / "lm-eval-bias"), "analyze", str(tmp_path / "empty"), "--output",
                            str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=120)
    assert empty.returncode == 2 and "no samples_<task>_*.jsonl" in empty.stderr
    assert len(empty.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_fact_or_fair_d_through_the_harness_is_the_projection_centred_at_s_e_debiased(analysed):
    """d's interval reaches the user through lm-eval and ``analyze``: distance_debiased is d at (S_fact, S_E's
    median-unbiased estimate), inside its finite interval, which lies within the box of S_fact's and S_E's
    intervals' d values (the ellipse is inside that box)."""
    import numpy as np

    from lm_eval_bias.fact_or_fair import stats as fof

    tmp, _, _ = analysed
    v = json.loads((tmp / "out" / "fact_or_fair_objective_gender.json").read_text())["values"]
    assert v["distance_debiased"] == pytest.approx(fof.distance_to_tradeoff_curve(v["s_fact"], v["s_e_debiased"], 2))
    assert math.isfinite(v["distance_ci_low"]) and v["distance_ci_low"] <= v["distance_debiased"] <= v["distance_ci_high"]
    f = np.linspace(v["s_fact_ci_low"], v["s_fact_ci_high"], 41)  # 41 x 41 x 4001 curve points: 54 MB a temporary
    e = np.linspace(v["s_e_ci_low"], v["s_e_ci_high"], 41)
    box = fof._grid_distance(*np.meshgrid(f, e), 2)
    slack = math.hypot(f[1] - f[0], e[1] - e[0]) / 2 + 1e-3  # d is 1-Lipschitz: the grid's error, plus d's grid
    assert box.min() - slack <= v["distance_ci_low"] and v["distance_ci_high"] <= box.max() + slack
