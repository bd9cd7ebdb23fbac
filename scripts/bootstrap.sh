#!/usr/bin/env bash
# Create .venv (if missing) and install ctxgate with its test extras. Idempotent; safe to re-run.
# TORCH_SPEC overrides the torch requirement (default: torch==2.13.0, the CPU wheel on the project machines;
# on a GPU node pip resolves the CUDA build of the same version).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  .venv/bin/python -m pip install -q "${TORCH_SPEC:-torch==2.13.0}"
fi
.venv/bin/python -m pip install -q -e ".[dev]"
