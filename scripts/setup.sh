#!/usr/bin/env bash
# Create .venv (if missing) and install lm-eval-bias with its test extras.
# torch is installed first and explicitly, pinned. From the default index (PyPI) that is, on Linux
# x86_64, the CUDA build (~20 nvidia-* packages, several GB). Set TORCH_INDEX_URL to install from
# another index instead, e.g. PyTorch's CPU-only wheels:
#   TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/setup.sh
# Safe to re-run; it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
if [ -n "${TORCH_INDEX_URL:-}" ]; then
  .venv/bin/python -m pip install -q "torch==2.13.0" --index-url "$TORCH_INDEX_URL"
else
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
.venv/bin/python -m pip install -q -e ".[test]"
echo "lm-eval-bias installed in $(pwd)/.venv"
