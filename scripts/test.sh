#!/usr/bin/env bash
# The project's own checks: ruff (lint and format), then the tests with mypy beside them (unit, Hypothesis, pytester,
# end-to-end on the tiny checkpoint, the engines against a real vLLM server). Two workers: a third on CI's two cores
# made the Ray tests slower by more than it saved. tests/conftest.py gives each file to one worker (a module's vLLM
# server or Ray cluster starts once), the longest files first. (Not xdist_group: under pytest 9.2, xdist 3.8's
# marker no longer groups anything.)
set -euo pipefail
cd "$(dirname "$0")/.."
# vLLM's environment installs beside the project's (each pip mostly waits on one core), and mypy
# (one core) checks the types beside the tests: its verdict is printed, and counted, after theirs
vllm_log=$(mktemp)
types_log=$(mktemp)
bash scripts/vllm_env.sh >"$vllm_log" 2>&1 &
vllm=$!
trap 'kill "$vllm" "${types:-}" 2>/dev/null || true; rm -f "$vllm_log" "$types_log"' EXIT
bash scripts/bootstrap.sh
bash scripts/browser.sh
# lint and format first: their configuration is in pyproject.toml
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy >"$types_log" 2>&1 &
types=$!
if ! wait "$vllm"; then
  cat "$vllm_log" >&2
  echo "scripts/test.sh: scripts/vllm_env.sh failed (its output above)" >&2
  exit 1
fi
status=0
.venv/bin/python -m pytest tests -n 2 -q --hypothesis-profile=fixed "$@" || status=$?
wait "$types" || status=1
cat "$types_log"
exit "$status"
