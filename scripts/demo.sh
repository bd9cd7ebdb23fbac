#!/usr/bin/env bash
# The main job on the embedded default: every RULER and HELMET task x 256/512/1K/2K tokens on the shipped tiny
# checkpoint, with the shipped fixture data, two xdist workers, then the report. Extra arguments go to pytest
# (e.g. --samples 100).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
mkdir -p out
.venv/bin/python -m pytest --model fixtures/tiny-llama-niah --lengths 256,512,1k,2k --samples 20 -n 2 \
  --squad fixtures/data/squad_v2_validation_tiny.jsonl \
  --hotpotqa fixtures/data/hotpotqa_distractor_validation_tiny.jsonl --data-dir fixtures/helmet_data \
  --report out/demo.json --junitxml out/demo-junit.xml -q "$@"
echo
cat out/demo.md
