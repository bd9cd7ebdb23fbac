#!/usr/bin/env bash
# The project's own tests (unit, Hypothesis, pytester, end-to-end on the tiny checkpoint).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python -m pytest tests -n 2 -q "$@"
