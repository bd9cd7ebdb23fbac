#!/usr/bin/env bash
# Evaluate every checkpoint that appears in a training output folder and keep reports/trend/ current.
#   ci/watch.sh /runs/exp42 -- --lengths 8k,32k,128k -n auto
set -euo pipefail
RUN_DIR="$1"; shift
exec ctxgate watch "$RUN_DIR" --reports "reports/$(basename "$RUN_DIR")" --interval 120 --settle 60 "$@"
