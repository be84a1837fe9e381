#!/usr/bin/env bash
# Create .venv (if missing) and install lm-eval-bias with its test extras, CPU-only.
# CPU torch is installed first and explicitly: left to the resolver, `torch` would pull a multi-GB
# CUDA build. Safe to re-run; it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test]"
echo "lm-eval-bias installed in $(pwd)/.venv"
