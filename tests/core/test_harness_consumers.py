"""lm-eval's own consumers of results and logged samples work on every task (issue 27), through the real
``lm-eval-bias run`` command on the planted ``bias-probe`` model and the small synthetic sources:

- ``--log_samples`` read back by pandas and by ``datasets``' JSON loader: every metric column present on
  every line, none null;
- lm-eval's W&B logger in offline mode (results table, group table, sample tables) without "Logging to
  W&B failed";
- lm-eval's zeno export (its ``generate_system_df`` reads ``sample[metric]`` for every metric of the
  task's config; the script is not shipped in the lm-eval wheel, so its metric access is repeated here);
- ``--cache_requests true`` twice: the same results and the same samples size;
- two ranks gathered as lm-eval does (per-key value lists pickled per rank, concatenated on rank 0);
- ``--predict_only``;
- the printed table of ``--tasks reflect`` fits on two screens.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
#: every kind of task: REFLECT generated (the group) and scored by probability (multiple_choice), FACT-OR-FAIR
#: objective and a subjective context, Counterfactual VQA, every VIGNETTE paradigm (the group), a paraphrase
TASKS = ("reflect,focus_logprob,fact_or_fair_objective_gender,fact_or_fair_subjective_ingroup_race,cf_vqa,vignette,"
         "vignette_decision_para1")
LOGPROB_TASKS = ("focus_2afc_income_logprob", "focus_2afc_education_logprob", "focus_2afc_safety_logprob",
                 "focus_mcq_salary_logprob", "focus_mcq_education_logprob")
VIGNETTE_TASKS = ("vignette_factuality", "vignette_perception", "vignette_stereotype", "vignette_decision",
                  "vignette_decision_positional", "vignette_decision_textonly", "vignette_decision_para1")
REFLECT_TASKS = ("focus_2afc_income", "focus_2afc_education", "focus_2afc_safety", "focus_mcq_salary",
                 "focus_mcq_education", "focus_salary")
REFLECT_GROUPS = ("reflect", "focus_2afc", "focus_mcq")


@pytest.fixture(scope="module")
def all_data(small_focus_data, small_fof_data, small_cf_vqa_data, small_vignette_data, tmp_path_factory) -> Path:
    """One LM_EVAL_BIAS_DATA_DIR holding every benchmark's small synthetic source."""
    root = tmp_path_factory.mktemp("all_data")
    for source in (small_focus_data, small_fof_data, small_cf_vqa_data, small_vignette_data):
        for child in source.iterdir():
            (root / child.name).symlink_to(child)
    return root


def _env(data: Path, tmp: Path) -> dict[str, str]:
    return {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
            "LMEVAL_HASHMM": "0", "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "20", "LM_EVAL_BIAS_NULL_ITERS": "20",
            "WANDB_MODE": "offline", "WANDB_DIR": str(tmp), "WANDB_SILENT": "true",
            "LM_HARNESS_CACHE_PATH": str(tmp / "request_cache")}


def _run(args: list[str], data: Path, tmp: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([str(BIN / "lm-eval-bias"), "run", "--model", "bias-probe", *args], env=_env(data, tmp),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _samples_files(out: Path) -> dict[str, Path]:
    files = {}
    for file in sorted(out.rglob("samples_*.jsonl")):
        task = file.name[len("samples_"):].rsplit("_", 1)[0]
        files[task] = file
    return files


def _results(out: Path) -> dict:
    (file,) = list(out.rglob("results_*.json"))
    return json.loads(file.read_text())


@pytest.fixture(scope="module")
def logged_run(all_data, tmp_path_factory):
    """Every benchmark's tasks (REFLECT as its group) with logged samples and W&B offline."""
    tmp = tmp_path_factory.mktemp("consumers")
    done = _run(["--tasks", TASKS, "--limit", "8", "--log_samples", "--output_path", str(tmp / "out"),
                 "--wandb_args", "mode=offline,project=lm_eval_bias_tests"], all_data, tmp)
    return tmp, done.stdout + done.stderr


def test_wandb_offline_logs_every_table(logged_run):
    tmp, output = logged_run
    assert "Logging to W&B failed" not in output
    runs = list((tmp / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("*.wandb"))


def test_logged_samples_read_back_by_pandas_and_datasets_with_every_metric_on_every_line(logged_run):
    import datasets
    import pandas as pd

    from lm_eval_bias import analysis

    tmp, _ = logged_run
    files = _samples_files(tmp / "out")
    assert set(files) == {*REFLECT_TASKS, *LOGPROB_TASKS, "fact_or_fair_objective_gender",
                          "fact_or_fair_subjective_ingroup_race", "cf_vqa", *VIGNETTE_TASKS}
    for task, file in files.items():
        headline = list(analysis.headline_keys(task))
        frame = pd.read_json(file, lines=True)
        assert len(frame) == 8 and set(headline) <= set(frame.columns), task
        assert not frame[headline].isna().any().any(), task
        assert all(row == headline for row in frame["metrics"]), task
        loaded = datasets.load_dataset("json", data_files=str(file), split="train")
        for key in headline:  # one type per column: the compact record's string (a view's count: an integer)
            assert loaded.features[key].dtype in ("string", "int64") and None not in loaded[key], (task, key)
        assert any(loaded.features[key].dtype == "string" for key in headline), task


def test_zeno_export_finds_every_metric_of_the_config_in_every_sample(logged_run):
    """lm-eval's ``scripts/zeno_visualize.py`` ``generate_system_df``: ``{metric["metric"]: [x[metric["metric"]]
    for x in data] for metric in config["metric_list"]}`` (a KeyError before, for all but one doc), and
    ``x["filter"]`` per sample when the config has a filter list."""
    import pandas as pd

    tmp, _ = logged_run
    results = _results(tmp / "out")
    for task, file in _samples_files(tmp / "out").items():
        data = [json.loads(line) for line in file.read_text().splitlines()]
        config = results["configs"][task]
        system = {"id": [f"{x['doc_id']}.{x['filter']}" if config.get("filter_list") else x["doc_id"] for x in data]}
        system.update({m["metric"]: [x[m["metric"]] for x in data] for m in config["metric_list"]})
        assert pd.DataFrame(system).shape == (8, 1 + len(config["metric_list"])), task


def test_reflect_printed_table_fits_on_two_screens(logged_run):
    """lm-eval prints one row per result key (the ± column holds ``_stderr``): the REFLECT rows of the task
    and group tables, with their headers, stay within about two screens (~100 lines)."""
    _, output = logged_run
    rows, current = defaultdict(int), None
    for line in output.splitlines():
        if not line.startswith("|") or line.startswith("|--"):
            continue
        name = line.split("|")[1].strip().lstrip("- ").strip()
        current = name or current
        rows[current] += 1
    reflect_lines = sum(rows[name] for name in (*REFLECT_TASKS, *REFLECT_GROUPS))
    assert all(rows[task] <= 20 for task in REFLECT_TASKS), dict(rows)
    assert reflect_lines + 4 <= 110, dict(rows)  # + the two tables' header lines


def test_two_ranks_gathered_as_lm_eval_does_give_the_one_rank_results(logged_run, monkeypatch):
    """Each rank evaluates every other doc (lm-eval's rank slicing), pickles its per-key value lists and
    rank 0 concatenates them (``gather_object``): every headline value equals the one-rank result."""
    from lm_eval_bias import samples

    monkeypatch.setenv("LM_EVAL_BIAS_BOOTSTRAP_ITERS", "20")  # the run's settings (_env)
    monkeypatch.setenv("LM_EVAL_BIAS_NULL_ITERS", "20")
    tmp, _ = logged_run
    results = _results(tmp / "out")["results"]
    for task in ("focus_2afc_income", "focus_mcq_salary_logprob", "fact_or_fair_subjective_ingroup_race", "cf_vqa",
                 "vignette_decision", "vignette_perception"):
        data = [json.loads(line) for line in _samples_files(tmp / "out")[task].read_text().splitlines()]
        family = samples.aggregation_family(task)
        ranks = []
        for rank in range(2):
            per_key = defaultdict(list)
            for sample in data[rank::2]:
                for key, value in family.records_for(samples.sample_record(task, sample)).items():
                    per_key[key].append(value)
            ranks.append(pickle.dumps(dict(per_key)))
        gathered = defaultdict(list)
        for blob in ranks:
            for key, items in pickle.loads(blob).items():
                gathered[key].extend(items)
        for key in family.headline:
            value, expected = family.function(key)(gathered[key]), results[task][f"{key},none"]
            assert value == expected or (value != value and expected != expected), (task, key)


def test_cache_requests_twice_gives_the_same_results_and_samples(all_data, tmp_path):
    """The second run gets its requests and docs back from lm-eval's pickle cache (new objects): the same
    results, and every logged sample the same but for lm-eval's ``str()`` of the request's images in
    ``arguments`` (an object's repr with its address: the image store's pooled image in the first run, the
    PIL image unpickled from the cache in the second; not a metric)."""
    lines, values = [], []
    for k in range(2):
        out = tmp_path / f"out{k}"
        _run(["--tasks", "focus_2afc_income,vignette_decision", "--limit", "8", "--cache_requests", "true",
              "--log_samples", "--output_path", str(out)], all_data, tmp_path)
        assert list((tmp_path / "request_cache").glob("*.pickle"))
        lines.append({t: [json.loads(line) for line in f.read_text().splitlines()]
                      for t, f in _samples_files(out).items()})
        values.append(_results(out)["results"])
    assert json.dumps(values[0], sort_keys=True) == json.dumps(values[1], sort_keys=True)
    assert set(lines[0]) == set(lines[1]) == {"focus_2afc_income", "vignette_decision"}
    for task in lines[0]:
        first, second = ([{k: v for k, v in s.items() if k != "arguments"} for s in run[task]] for run in lines)
        assert first == second and len(first) == 8, task
        assert [len(json.dumps(s)) for s in first] == [len(json.dumps(s)) for s in second], task


def test_predict_only_logs_samples_without_metrics(all_data, tmp_path):
    done = _run(["--tasks", "focus_2afc_income,vignette_decision", "--limit", "4", "--predict_only",
                 "--output_path", str(tmp_path / "out")], all_data, tmp_path)
    files = _samples_files(tmp_path / "out")
    assert set(files) == {"focus_2afc_income", "vignette_decision"}
    first = json.loads(files["focus_2afc_income"].read_text().splitlines()[0])
    assert first["filtered_resps"] and first["doc"]["doc_id"]
    assert "Traceback" not in done.stderr
