"""How requests are served with ``--backend openai`` (servers the user runs) and ``--backend vllm`` (servers the suite
starts): the engine's options, each declared once (``run/options.Option``), and ``read_engine``, which checks them
with the run's backend into the ``EngineSettings`` of the run's plan (``gate/plan.py``). The pytest plugin
(``plugins/engine.py``) then starts or checks the servers those settings name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxgate.backends.base import engine_dtype
from ctxgate.backends.devices import visible_gpus
from ctxgate.backends.endpoint import ENDPOINT_APIS, OPENAI_CONCURRENCY, EndpointSettings
from ctxgate.backends.vllm_server import ENGINE_BATCH, EngineSpec, engine_batch
from ctxgate.run.loading import ModelSpec, Served
from ctxgate.run.options import Option, OptionError

BASE_URL = Option(
    "--base-url",
    "--backend openai: an OpenAI-compatible server, e.g. http://gpu7:8000/v1; repeat for replicas",
    action="append",
)
TOKENIZER = Option("--tokenizer", "the served model's tokenizer folder (default: --model when it is a folder)")
SERVED_MODEL = Option(
    "--served-model",
    "the model name the server serves (default: the only one it lists, or --model when that is not a folder)",
)
ENDPOINT_API = Option(
    "--endpoint-api",
    "--backend openai: completions (default: token ids, the tokenizer checked against the server's) or chat (one "
    "user message of text, for models served only as chat: GPT-4o, Gemini, Claude; --tokenizer counts)",
    default="completions",
    choices=ENDPOINT_APIS,
)
API_KEY_ENV = Option(
    "--api-key-env",
    "--backend openai: the environment variable holding the server's API key (default %(default)s)",
    default="OPENAI_API_KEY",
    metavar="NAME",
)
CONCURRENCY = Option(
    "--concurrency",
    f"requests in flight per server replica, which the engine batches (default: {OPENAI_CONCURRENCY} for --backend "
    f"openai; for --backend vllm the engine's batch, {ENGINE_BATCH} unless --vllm-arg sets --max-num-seqs, shared "
    "by the xdist workers on a server)",
    type=int,
)
REQUEST_TIMEOUT = Option(
    "--request-timeout",
    "seconds per request of up to 128K tokens, a longer one in proportion (default %(default)s)",
    default=600.0,
    type=float,
)
REQUEST_RETRIES = Option(
    "--request-retries",
    "retries after 429/5xx/timeouts/dropped connections, with backoff (default %(default)s)",
    default=4,
    type=int,
)
TP = Option(
    "--tp",
    "--backend vllm: GPUs per replica (default %(default)s); replicas = visible GPUs / tp",
    default=1,
    type=int,
    aliases=("--tensor-parallel-size",),
)
VLLM_PYTHON = Option(
    "--vllm-python", "--backend vllm: the python with vLLM (default: $CTXGATE_VLLM_PYTHON, else .venv-vllm)"
)
VLLM_ARG = Option(
    "--vllm-arg",
    "--backend vllm: one more argument for the vLLM server, e.g. --vllm-arg=--gpu-memory-utilization=0.8",
    action="append",
)
VLLM_START_TIMEOUT = Option(
    "--vllm-start-timeout",
    "--backend vllm: seconds a server may take to start (default %(default)s)",
    default=900.0,
    type=float,
)
ENGINE = (
    BASE_URL,
    TOKENIZER,
    SERVED_MODEL,
    ENDPOINT_API,
    API_KEY_ENV,
    CONCURRENCY,
    REQUEST_TIMEOUT,
    REQUEST_RETRIES,
    TP,
    VLLM_PYTHON,
    VLLM_ARG,
    VLLM_START_TIMEOUT,
)


@dataclass(frozen=True)
class EngineSettings:
    """Where requests go and how: the servers (given by --base-url, or started by the plugin for --backend vllm),
    the tokenizer to check them against, the served model's name, and the request and vLLM options."""

    base_urls: tuple[str, ...] = ()
    server_logs: tuple[str, ...] = ()  # --backend vllm: each server's log, for the error when one dies
    tokenizer: str | None = None
    served_model: str | None = None
    endpoint_api: str = ENDPOINT_API.default
    api_key_env: str = API_KEY_ENV.default
    concurrency: int = OPENAI_CONCURRENCY
    fills_batch: bool = False  # concurrency is the engine's batch (no --concurrency), shared by a server's workers
    request_timeout: float = REQUEST_TIMEOUT.default
    request_retries: int = REQUEST_RETRIES.default
    tp: int = TP.default
    vllm_python: str | None = None
    vllm_args: tuple[str, ...] = ()
    vllm_start_timeout: float = VLLM_START_TIMEOUT.default
    launch: EngineSpec | None = None  # --backend vllm --ray: how each replica starts its server

    def served(self, opening: ModelSpec) -> Served:
        """What the backend sends to, as ``load_backend`` takes it, with what the suite knows of the numerics of
        the servers it started itself (vllm)."""
        assert self.tokenizer is not None
        endpoint = EndpointSettings(
            self.base_urls,
            self.served_model,
            self.concurrency,
            self.request_timeout,
            max_retries=self.request_retries,
            key_env=self.api_key_env,
            api=self.endpoint_api,
        )
        numerics: dict[str, Any] = {}
        if opening.backend == "vllm":
            numerics = {
                "dtype": engine_dtype(opening.dtype, bool(visible_gpus())),
                "tensor_parallel": self.tp,
                "vllm_args": list(self.vllm_args),
            }
            if opening.checkpoint and opening.checkpoint.served_as:
                numerics["served_as"] = opening.checkpoint.served_as
        return Served(endpoint, self.tokenizer, self.server_logs, numerics, self.launch, self.vllm_start_timeout)


def read_engine(value: Callable[[str], Any], backend: str, chat_template: str) -> EngineSettings:
    """The engine options as pytest or argparse read them (``value(dest)``; None: not taken, its default), checked
    against the run's backend and chat setting: a value that cannot be used is one OptionError."""

    def get(option: Option) -> Any:
        given = value(option.dest)
        return option.default if given is None else given

    for option in (CONCURRENCY, TP, REQUEST_TIMEOUT, VLLM_START_TIMEOUT):
        if get(option) is not None and get(option) <= 0:
            raise OptionError(f"{option.flag} {get(option)} must be positive, e.g. {option.flag} {option.default or 8}")
    if get(REQUEST_RETRIES) < 0:
        raise OptionError(f"--request-retries {get(REQUEST_RETRIES)} must be 0 or more, e.g. --request-retries 4")
    urls = tuple(get(BASE_URL) or ())
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise OptionError(f"--base-url {url!r} is not an http(s) URL: e.g. http://127.0.0.1:8000/v1")
    if urls and backend != "openai":
        raise OptionError(
            "--base-url is for --backend openai (a server you run); with --backend vllm the suite starts its own"
        )
    if get(ENDPOINT_API) == "chat" and backend != "openai":
        raise OptionError("--endpoint-api chat is for --backend openai (a server you run)")
    if get(ENDPOINT_API) == "chat" and chat_template == "off":
        raise OptionError("--endpoint-api chat sends user messages, which the server wraps: drop --chat-template off")
    vllm_args = tuple(get(VLLM_ARG) or ())
    try:
        batch = engine_batch(vllm_args)
    except ValueError as exc:
        raise OptionError(str(exc)) from None
    return EngineSettings(
        base_urls=urls,
        tokenizer=get(TOKENIZER),
        served_model=get(SERVED_MODEL),
        endpoint_api=get(ENDPOINT_API),
        api_key_env=get(API_KEY_ENV),
        concurrency=get(CONCURRENCY) or (batch if backend == "vllm" else OPENAI_CONCURRENCY),
        fills_batch=get(CONCURRENCY) is None and backend == "vllm",
        request_timeout=get(REQUEST_TIMEOUT),
        request_retries=get(REQUEST_RETRIES),
        tp=get(TP),
        vllm_python=get(VLLM_PYTHON),
        vllm_args=vllm_args,
        vllm_start_timeout=get(VLLM_START_TIMEOUT),
    )
