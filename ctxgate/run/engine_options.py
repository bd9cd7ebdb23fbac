"""The options of the HTTP engines (``--backend openai``, ``--backend vllm``): where requests go,
how many at once and in what order, and how the suite's own vLLM servers start. Declared as every
option is (``run/options.py`` names them all, with these)."""

from __future__ import annotations

import os

from ctxgate.backends.servers import ENDPOINT_APIS, OPENAI_CONCURRENCY, EndpointSettings
from ctxgate.backends.vllm_server import ENGINE_BATCH
from ctxgate.retrying import origin
from ctxgate.run.flags import Option, positive, whole


def http_url(text: str) -> str:
    origin(text)  # the rule the clients' door reads URLs by
    return text


def _key_env(name: str) -> str:
    """Named on purpose, the variable must hold a key: an empty one would send none (the default,
    unset, sends "EMPTY", which a local server takes)."""
    if not os.environ.get(name):
        raise ValueError(
            f"names a variable that is unset or empty here (export {name}=YOUR_KEY first, or name "
            "the variable that holds the key)"
        )
    return name


BASE_URL = Option(
    "--base-url",
    "--backend openai: an OpenAI-compatible server, e.g. http://gpu7:8000/v1; repeat for replicas",
    action="append",
    parse=http_url,
    example="http://127.0.0.1:8000/v1",
)
TOKENIZER = Option(
    "--tokenizer", "the served model's tokenizer folder (default: --model when it is a folder)"
)
SERVED_MODEL = Option(
    "--served-model",
    "the model name the server serves (default: the only one it lists, or --model when that is "
    "not a folder)",
)
ENDPOINT_API = Option(
    "--endpoint-api",
    "--backend openai: completions (default: token ids, the tokenizer checked against the "
    "server's) or chat (one user message of text, for models served only as chat: GPT-4o, Gemini, "
    "Claude; --tokenizer counts)",
    default="completions",
    choices=ENDPOINT_APIS,
)
API_KEY_ENV = Option(
    "--api-key-env",
    "--backend openai: the environment variable holding the server's API key (default %(default)s)",
    default="OPENAI_API_KEY",
    parse=_key_env,
    metavar="NAME",
)
CONCURRENCY = Option(
    "--concurrency",
    "requests in flight per server replica, which the engine batches (default: "
    f"{OPENAI_CONCURRENCY} for --backend openai; for --backend vllm the engine's batch, "
    f"{ENGINE_BATCH} unless --vllm-arg sets --max-num-seqs, shared by the xdist workers on a "
    "server)",
    parse=whole(1),
    example="8",
)
NO_SHARED_FIRST = Option(
    "--no-shared-first",
    "--backend openai / vllm: send a case's samples in the order they are built, not each after "
    "the one it shares the longest prefix with (which a server's prefix cache then still holds)",
    action="store_true",
)
REQUEST_TIMEOUT = Option(
    "--request-timeout",
    "seconds per request of up to 128K tokens, a longer one in proportion (default %(default)s)",
    default=EndpointSettings.timeout_s,
    parse=positive,
)
REQUEST_RETRIES = Option(
    "--request-retries",
    "retries after 429/5xx/timeouts/dropped connections, with backoff (default %(default)s)",
    default=EndpointSettings.max_retries,
    parse=whole(0),
)
TP = Option(
    "--tp",
    "--backend vllm: GPUs per replica (default %(default)s); replicas = visible GPUs / tp",
    default=1,
    parse=whole(1),
    aliases=("--tensor-parallel-size",),
)
VLLM_PYTHON = Option(
    "--vllm-python",
    "--backend vllm: the python with vLLM (default: $CTXGATE_VLLM_PYTHON, else .venv-vllm)",
)
VLLM_ARG = Option(
    "--vllm-arg",
    "--backend vllm: one more argument for the vLLM server, e.g. "
    "--vllm-arg=--gpu-memory-utilization=0.8",
    action="append",
)
VLLM_START_TIMEOUT = Option(
    "--vllm-start-timeout",
    "--backend vllm: seconds a server may take to start (default %(default)s)",
    default=900.0,
    parse=positive,
)
