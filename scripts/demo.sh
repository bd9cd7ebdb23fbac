#!/usr/bin/env bash
# The main job on the embedded default: every task (RULER, HELMET and the families) x 256/512/1K/2K tokens on the shipped tiny
# checkpoint, with the shipped fixture data, two xdist workers, then the report (out/demo.json, .md and .html). The judged tasks (Cite, NarrativeQA,
# Summ) are judged by fixtures/judge_server.py, an offline OpenAI-compatible stand-in started here on 127.0.0.1;
# a real run passes --judge-model gpt-4o-2024-05-13 (key from OPENAI_API_KEY) or a vLLM/SGLang --judge-base-url.
# Extra arguments go to pytest (e.g. --samples 100). DEMO_OUT names the output folder (default: out).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
OUT="${DEMO_OUT:-out}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# the fixture data plus long NarrativeQA / Multi-LexSum documents, which HELMET's length selection needs (~7 MB)
.venv/bin/python fixtures/make_helmet_fixtures.py --long-documents "$OUT/helmet_data"
# the families model cards report now: LongBench v2's schema with made-up questions, MRCR v2's stand-in writings
# (RULERv2 reads its shipped samples, GraphWalks generates its graphs); each family's generation budget turned
# down where the tiny checkpoint's 8K window could not hold the reference's
.venv/bin/python fixtures/make_longbench2_fixture.py "$OUT/helmet_data" >/dev/null
mkdir -p "$OUT/helmet_data/mrcr_v2" && cp -R ctxgate/ext/mrcr2/sample/mrcr_v2/. "$OUT/helmet_data/mrcr_v2/"
.venv/bin/python fixtures/judge_server.py --port 0 > "$OUT/judge-server.url" &
JUDGE=$!
trap 'kill $JUDGE 2>/dev/null' EXIT
for _ in $(seq 50); do [ -s "$OUT/judge-server.url" ] && break; sleep 0.1; done
.venv/bin/python -m pytest --model fixtures/tiny-llama-niah --lengths 256,512,1k,2k --samples 20 -n 2 \
  --squad fixtures/data/squad_v2_validation_tiny.jsonl \
  --hotpotqa fixtures/data/hotpotqa_distractor_validation_tiny.jsonl --data-dir "$OUT/helmet_data" \
  --judge-model ctxgate-lexical-judge --judge-base-url "$(head -1 "$OUT/judge-server.url")" \
  --ruler2-tokens-to-generate 16 --mrcr2-tokens-to-generate 16 \
  --report "$OUT/demo.json" --junitxml "$OUT/demo-junit.xml" -q "$@"
echo
cat "$OUT/demo.md"
echo
echo "HTML report (heatmaps, needle depths, every sample): $OUT/demo.html"
