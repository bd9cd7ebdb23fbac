#!/usr/bin/env bash
# Create .venv (if missing) and install ctxgate with its test extras. Idempotent; safe to re-run: a .venv this script
# completed for the same pyproject.toml and torch requirement is left as it is (pip's own check of it takes some 15 s).
# TORCH_SPEC overrides the torch requirement (default: torch==2.13.0, the CPU wheel on the project machines;
# on a GPU node pip resolves the CUDA build of the same version).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
TORCH="${TORCH_SPEC:-torch==2.13.0}"
STAMP=.venv/.bootstrapped
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1) $TORCH"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
  && .venv/bin/python -c "import importlib.metadata as m; m.distribution('ctxgate')" >/dev/null 2>&1; then
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  .venv/bin/python -m pip install -q "$TORCH"
fi
.venv/bin/python -m pip install -q -e ".[dev]"
# the tests' DeepSpeed checkpoints: DeepSpeed is source only and its setup imports torch, so it is built against the
# torch above; DS_BUILD_OPS=0 compiles none of its kernels
if ! .venv/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('deepspeed') is None)"; then
  .venv/bin/python -m pip install -q setuptools wheel
  DS_BUILD_OPS=0 .venv/bin/python -m pip install -q --no-build-isolation "deepspeed>=0.16"
fi
echo "$WANT" > "$STAMP"
