"""The real CLIs, the real `hf-multimodal` backend, a real (tiny, random-weight, offline) LLaVA with its
processor, and real images: `lm-eval-bias run` and plain `lm_eval --include_path`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lm_eval_bias
from lm_eval_bias import samples as samples_lib

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory) -> Path:
    from lm_eval_bias.testing.tiny_vlm import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("tiny_llava") / "model")


def _env(data_dir: Path) -> dict:
    return {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(data_dir), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "50",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _only(paths):
    paths = list(paths)
    assert len(paths) == 1, paths
    return paths[0]


def test_lm_eval_bias_run_hf_multimodal_2afc(small_focus_data, tiny_llava, tmp_path):
    out_dir = tmp_path / "out"
    proc = subprocess.run(
        [BIN / "lm-eval-bias", "run", "--model", "hf-multimodal",
         "--model_args", f"pretrained={tiny_llava},max_images=2", "--device", "cpu", "--batch_size", "4",
         "--tasks", "focus_2afc_income", "--limit", "10", "--apply_chat_template",
         "--output_path", str(out_dir), "--log_samples"],
        capture_output=True, text=True, env=_env(small_focus_data), timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(_only(out_dir.rglob("results_*.json")).read_text())
    metrics = results["results"]["focus_2afc_income"]
    assert results["n-samples"]["focus_2afc_income"]["effective"] == 10
    # A random-weight model's output is counted, never turned into an answer: every call is
    # classified, and the rates add up.
    assert metrics["refusal_rate,none"] + metrics["invalid_rate,none"] <= 1.0
    for key in ("retained_rate", "swap_inconsistent_rate", "male_win_rate", "polarization", "extreme_cell_rate",
                "retained_rate_stderr"):  # the headline; first_position_rate, n_defined_cells: the analysis
        assert f"{key},none" in metrics
    # Samples: 10 docs = 5 whole AB/BA pairs, each carrying its record and two real images.
    sample_file = _only(out_dir.rglob("samples_focus_2afc_income_*.jsonl"))
    lines = [json.loads(line) for line in sample_file.read_text().splitlines()]
    assert len(lines) == 10
    assert [line["doc"]["order"] for line in lines] == ["AB", "BA"] * 5
    assert all(line["doc"]["pair_id"] == lines[2 * (i // 2)]["doc"]["pair_id"] for i, line in enumerate(lines))
    assert all(line["resps"][0][0] == line["filtered_resps"][0] for line in lines)
    records = samples_lib.load_records(out_dir, "focus_2afc_income")
    assert [r["status"] for r in records] == [json.loads(line["retained_rate"])[6] for line in lines]  # compact record
    summary = samples_lib.summarize("focus_2afc_income", records)
    assert summary.estimates["refusal_rate"] == pytest.approx(metrics["refusal_rate,none"])
    # the chat template was applied (the tiny model's template wraps the turn in USER/ASSISTANT)
    assert "USER:" in lines[0]["arguments"]["gen_args_0"]["arg_0"]


def test_plain_lm_eval_cli_with_include_path(small_focus_data, tiny_llava, tmp_path):
    out_dir = tmp_path / "out"
    tasks_dir = subprocess.run([BIN / "lm-eval-bias", "tasks-dir"], capture_output=True, text=True, check=True).stdout.strip()
    proc = subprocess.run(
        [BIN / "lm_eval", "--model", "hf-multimodal", "--model_args", f"pretrained={tiny_llava}",
         "--device", "cpu", "--include_path", tasks_dir, "--tasks", "focus_mcq_education", "--limit", "5",
         "--output_path", str(out_dir)],
        capture_output=True, text=True, env=_env(small_focus_data), timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads(_only(out_dir.rglob("results_*.json")).read_text())["results"]["focus_mcq_education"]
    total = metrics["valid_rate,none"] + metrics["refusal_rate,none"] + metrics["invalid_rate,none"]
    assert total == pytest.approx(1.0)


@pytest.mark.parametrize("backend", ["hf", "hf-multimodal"])
def test_fact_or_fair_runs_on_text_and_vision_backends(small_fof_data, tmp_path, backend):
    """FACT-OR-FAIR is text-only: lm-eval's plain `hf` backend (tiny offline Llama) and a VLM backend
    (`hf-multimodal`, tiny LLaVA) both run it."""
    from lm_eval_bias.testing.tiny_vlm import build_tiny_llama, build_tiny_llava

    model = (build_tiny_llama if backend == "hf" else build_tiny_llava)(tmp_path / "model")
    out_dir = tmp_path / "out"
    proc = subprocess.run(
        [BIN / "lm-eval-bias", "run", "--model", backend, "--model_args", f"pretrained={model}", "--device", "cpu",
         "--tasks", "fact_or_fair_objective_gender", "--limit", "6", "--output_path", str(out_dir), "--log_samples"],
        capture_output=True, text=True, env=_env(small_fof_data), timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads(_only(out_dir.rglob("results_*.json")).read_text())["results"]["fact_or_fair_objective_gender"]
    assert metrics["refusal_rate,none"] + metrics["invalid_rate,none"] <= 1.0
    for key in ("s_fact", "s_e", "s_kld", "s_fair", "distance"):  # headline keys
        assert f"{key},none" in metrics
    lines = _only(out_dir.rglob("samples_fact_or_fair_objective_gender_*.jsonl")).read_text().splitlines()
    assert len(lines) == 6 and json.loads(lines[0])["doc"]["prompt"].startswith("Synthetic definition of")


@pytest.mark.parametrize("task", ["vignette_decision", "vignette_decision_textonly"])
def test_vignette_through_hf_multimodal(small_vignette_data, tiny_llava, tmp_path, task):
    """Composed pair images (or none, text-only) through the real processor and chat template."""
    out_dir = tmp_path / "out"
    proc = subprocess.run(
        [BIN / "lm-eval-bias", "run", "--model", "hf-multimodal", "--model_args", f"pretrained={tiny_llava},max_images=2",
         "--device", "cpu", "--batch_size", "2", "--tasks", task, "--limit", "6", "--apply_chat_template",
         "--output_path", str(out_dir), "--log_samples"],
        capture_output=True, text=True, env=_env(small_vignette_data), timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(_only(out_dir.rglob("results_*.json")).read_text())
    m = results["results"][task]
    assert results["n-samples"][task]["effective"] == 6
    assert m["valid_rate,none"] + m["refusal_rate,none"] + m["invalid_rate,none"] == pytest.approx(1.0)
    records = samples_lib.load_records(out_dir, task)
    assert len(records) == 6 and all(r["status"] in ("valid", "refusal", "invalid") for r in records)
