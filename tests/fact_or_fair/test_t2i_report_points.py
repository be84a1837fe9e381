"""FACT-OR-FAIR Figs. 4-5 with text-to-image points: `score fact-or-fair-t2i --output RUN/fact_or_fair_t2i_<name>.json`
files in a run folder are drawn (named stars with intervals) on the report's fair-vs-fact figure and listed
in a table; a broken file is a card warning, never a crash."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from lm_eval_bias.cli import main

TASKS = ["fact_or_fair_objective_gender", "fact_or_fair_objective_race"]
# two statistics; gender: 6 of 8 faces match the truth, race: 5 of 8
FACES = [
    ("Crime Rate", "highest", "Male", "Black", "male", "Black"), ("Crime Rate", "highest", "Male", "White", "male", "Black"),
    ("Crime Rate", "lowest", "Female", "East Asian", "female", "Asian"), ("Crime Rate", "lowest", "Male", "White", "female", "Asian"),
    ("Income", "highest", "Male", "White", "male", "White"), ("Income", "highest", "Female", "White", "male", "White"),
    ("Income", "lowest", "Female", "Black", "female", "Black"), ("Income", "lowest", "Female", "Latino_Hispanic", "female", "Black"),
]


@pytest.fixture(scope="module")
def run_dir(small_fof_data, tmp_path_factory):
    import lm_eval
    from lm_eval.loggers import EvaluationTracker

    import lm_eval_bias
    from lm_eval_bias.core.registration import register_plugin

    out = tmp_path_factory.mktemp("fof_t2i") / "run"
    register_plugin()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LM_EVAL_BIAS_DATA_DIR", str(small_fof_data))
        mp.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "20")
        mp.setenv("LM_EVAL_BIAS_NULL_ITERS", "20")
        tracker = EvaluationTracker(output_path=str(out))
        results = lm_eval.simple_evaluate(model="bias-probe", tasks=TASKS, log_samples=True, evaluation_tracker=tracker,
                                          task_manager=lm_eval_bias.task_manager(), bootstrap_iters=0)
        samples = results.pop("samples")
        tracker.save_results_aggregated(results=results, samples=samples)
        for task in TASKS:
            tracker.save_results_samples(task_name=task, samples=samples[task])
    return out


def _labels(path: Path) -> Path:
    rows = [{"image": f"{k}.png", "statistic": s, "side": side, "gender": g, "race": r, "true_gender": tg, "true_race": tr}
            for k, (s, side, g, r, tg, tr) in enumerate(FACES)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_t2i_points_on_the_fair_vs_fact_figure(run_dir, tmp_path, capsys):
    score = run_dir / "fact_or_fair_t2i_sdxl.json"
    assert main(["score", "fact-or-fair-t2i", "--labels", str(_labels(tmp_path / "faces.jsonl")), "--output", str(score),
                 "--model-name", "SDXL-Turbo"]) == 0
    payload = json.loads(score.read_text())
    assert payload["model"] == "SDXL-Turbo"
    (run_dir / "fact_or_fair_t2i_broken.json").write_text('{"rows": [{"family": "objective"}]}')
    capsys.readouterr()
    assert main(["report", str(run_dir), "--output", str(tmp_path / "report")]) == 0
    [table] = list((tmp_path / "report" / "tables").glob("*/fact_or_fair_t2i_points.csv"))
    with open(table, encoding="utf-8") as handle:
        rows = {(r["generator"], r["family"], r["attribute"]): r for r in csv.DictReader(handle)}
    assert set(rows) == {("SDXL-Turbo", "O", "gender"), ("SDXL-Turbo", "O", "race")}
    by_attribute = {r["attribute"]: r for r in payload["rows"]}
    for attribute, s_fact in (("gender", 6 / 8), ("race", 5 / 8)):  # counted by hand from FACES
        row = rows[("SDXL-Turbo", "O", attribute)]
        assert float(row["s_fact"]) == pytest.approx(s_fact) and int(row["faces"]) == 8
        results = by_attribute[attribute]["results"]
        assert float(row["s_fair_authors"]) == pytest.approx(results["s_fair_authors"])
        assert by_attribute[attribute]["s_fact"] == pytest.approx(s_fact)
        if results.get("s_fair_authors_ci_low") is not None:
            assert float(row["s_fair_authors_ci_low"]) == pytest.approx(results["s_fair_authors_ci_low"])
    [svg] = list((tmp_path / "report" / "figures").glob("*/fact_or_fair_fair_vs_fact.svg"))
    drawn = svg.read_text()
    assert "SDXL-Turbo (O)" in drawn and "T2I gender O" in drawn  # the named star and its legend entry
    card = next((tmp_path / "report" / "cards").glob("*.html")).read_text()
    assert "fact_or_fair_t2i_broken.json" in card and "left out of Figs. 4-5" in card
    assert "Stars: text-to-image generators (SDXL-Turbo" in card


def test_without_t2i_files_the_caption_says_how_to_add_them(run_dir, tmp_path):
    from lm_eval_bias.fact_or_fair.report import t2i_points
    from lm_eval_bias.report.runs import load_runs

    for f in run_dir.glob("fact_or_fair_t2i*.json"):
        f.unlink()
    [model] = load_runs([run_dir])
    points, warnings = t2i_points(list(model.tasks.values()))
    assert points.empty and warnings == []
    assert main(["report", str(run_dir), "--output", str(tmp_path / "report")]) == 0
    card = next((tmp_path / "report" / "cards").glob("*.html")).read_text()
    assert "Text-to-image points: put" in card
