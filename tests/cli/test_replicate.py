"""``lm-eval-bias replicate``: a run's values beside the papers' printed ones, through the real command.

The runs are lm-eval results JSONs as lm-eval writes them (no logged samples: the command then reads
the results' values), with values chosen so every printed line is known by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from lm_eval_bias.cli import main as cli_main
from lm_eval_bias.core import reference


def _results(folder: Path, model: str, task: str, values: dict[str, float]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    results = {"results": {task: {"alias": task, **{f"{k},none": v for k, v in values.items()}}},
               "configs": {task: {"task": task, "metadata": {"version": 1.0}}}, "versions": {task: 1.0},
               "n-samples": {task: {"original": 612, "effective": 612}},
               "config": {"model": "openai-chat-completions", "model_args": {"model": model}},
               "lm_eval_version": "0.4.13"}
    path = folder / "results_2026-01-01T00-00-00.000000.json"
    path.write_text(json.dumps(results), encoding="utf-8")
    return path


CF = {"consistency_demography": 0.58, "consistency_demography_ci_low": 0.52, "consistency_demography_ci_high": 0.64,
      "cc_auc_demography": 0.61, "cc_auc_demography_ci_low": 0.55, "cc_auc_demography_ci_high": 0.66}


def test_same_model_prints_paper_and_yours_in_the_papers_units(tmp_path, capsys):
    _results(tmp_path / "run" / "o3", "o3", "cf_vqa", CF)
    assert cli_main(["replicate", str(tmp_path / "run"), "--output", str(tmp_path / "cmp.csv")]) == 0
    out = capsys.readouterr().out
    assert "o3: the papers' values for this model" in out
    lines = [l for l in out.splitlines() if "consistency_demography" in l]
    # Table 2 prints 66.7 (%) for o3; ours 0.58 [0.52, 0.64] -> 58.0 [52.0, 64.0] at the paper's 1 decimal
    assert any("Table 2 · o3 · Demography Cons." in l and l.endswith("paper: 66.7 · yours: 58.0 [52.0, 64.0]")
               for l in lines), lines
    # Table 3 (Base on the HNER query subset) prints 65.5 and says so
    assert any("Table 3 · o3 · Base" in l and "paper: 65.5 · yours: 58.0 [52.0, 64.0] (Base/BAEP/HNER on the HNER"
               in l for l in lines), lines
    cc = next(l for l in out.splitlines() if "cc_auc_demography" in l and "Table 2" in l)
    assert cc.endswith("paper: 0.68 · yours: 0.61 [0.55, 0.66]")  # CC is printed as a fraction
    assert not any("GPT-5" in l for l in out.splitlines())        # only the same model's values
    table = pd.read_csv(tmp_path / "cmp.csv")
    row = table[(table["table"] == "Table 2") & (table["key"] == "consistency_demography")].iloc[0]
    assert (row["paper value"], row["yours"], row["same model"]) == (66.7, pytest.approx(58.0), True)
    assert row["difference"] == pytest.approx(58.0 - 66.7)


def test_another_model_gets_every_models_values_as_context(tmp_path, capsys):
    _results(tmp_path / "run" / "mine", "my-own-vlm", "cf_vqa", CF)
    assert cli_main(["replicate", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "my-own-vlm: not a model of the papers" in out
    table2 = [l for l in out.splitlines() if "consistency_demography" in l and "Table 2 ·" in l]
    n_models = len({v.model for v in reference.load("cf_vqa") if v.table == "Table 2" and v.model})
    assert len(table2) == n_models == 9
    assert any("paper (GPT-5): 62.3 · yours: 58.0 [52.0, 64.0]" in l for l in table2)


def test_model_name_picks_the_papers_model(tmp_path, capsys):
    _results(tmp_path / "run" / "mine", "my-endpoint", "cf_vqa", CF)
    assert cli_main(["replicate", str(tmp_path / "run"), "--model-name", "GPT-5"]) == 0
    out = capsys.readouterr().out
    assert "paper: 62.3 · yours: 58.0 [52.0, 64.0]" in out and "paper (o3)" not in out


def test_fact_or_fair_prints_the_authors_s_fair_and_marks_the_misprint(tmp_path, capsys):
    _results(tmp_path / "run" / "gpt", "gpt-4o-2024-08-06", "fact_or_fair_objective_race",
             {"s_fact": 59 / 108, "s_fact_ci_low": 0.45, "s_fact_ci_high": 0.64})
    assert cli_main(["replicate", str(tmp_path / "run")]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if "Table 4" in l and "s_fact" in l)
    assert "paper: 54.62 · yours: 54.63 [45.00, 64.00]" in line and "MISPRINT" in line


def test_errors_are_one_line(tmp_path, capsys):
    assert cli_main(["replicate", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: replicate: ") and "missing" in err[0]
    (tmp_path / "empty").mkdir()
    assert cli_main(["replicate", str(tmp_path / "empty")]) == 2
    assert capsys.readouterr().err.startswith("error: replicate: ")


def test_a_run_without_printed_keys_says_so(tmp_path, capsys):
    _results(tmp_path / "run" / "m", "m", "cf_vqa", {"n_pairs": 102.0})
    assert cli_main(["replicate", str(tmp_path / "run")]) == 0
    assert "no result key of cf_vqa is printed in the papers" in capsys.readouterr().out
