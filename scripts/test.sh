#!/usr/bin/env bash
# The project's own tests (unit, Hypothesis, pytester, end-to-end on the tiny checkpoint, the engines against a real
# vLLM server). The vLLM tests share one server in one xdist worker (--dist loadgroup).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bash scripts/vllm_env.sh
exec .venv/bin/python -m pytest tests -n 2 --dist loadgroup -q "$@"
