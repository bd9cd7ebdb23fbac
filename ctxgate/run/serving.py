"""How requests are served with ``--backend openai`` (servers the user runs) and ``--backend vllm``
(servers the suite starts): ``read_engine`` checks the engine's options into the plan's
``EngineSettings``; ``served`` turns them, and the servers started, into what a backend sends to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ctxgate.backends.base import engine_dtype
from ctxgate.backends.devices import visible_gpus
from ctxgate.backends.endpoint import OPENAI_CONCURRENCY, EndpointSettings
from ctxgate.backends.vllm_server import EngineSpec, engine_batch
from ctxgate.run.loading import ModelSpec, Served
from ctxgate.run.options import (
    API_KEY_ENV,
    BASE_URL,
    CONCURRENCY,
    ENDPOINT_API,
    REQUEST_RETRIES,
    REQUEST_TIMEOUT,
    SERVED_MODEL,
    TOKENIZER,
    TP,
    VLLM_ARG,
    VLLM_PYTHON,
    VLLM_START_TIMEOUT,
    OptionError,
)


@dataclass(frozen=True)
class EngineSettings:
    """Where requests go and how: the engine options (``run/options.ENGINE``) as read."""

    base_urls: tuple[str, ...] = ()
    tokenizer: str | None = None
    served_model: str | None = None
    endpoint_api: str = ENDPOINT_API.default
    api_key_env: str = API_KEY_ENV.default
    concurrency: int = OPENAI_CONCURRENCY
    # concurrency is the engine's batch (no --concurrency), shared by a server's workers
    fills_batch: bool = False
    request_timeout: float = REQUEST_TIMEOUT.default
    request_retries: int = REQUEST_RETRIES.default
    tp: int = TP.default
    vllm_python: str | None = None
    vllm_args: tuple[str, ...] = ()
    vllm_start_timeout: float = VLLM_START_TIMEOUT.default


def read_engine(
    values: Mapping[str, Any], backend: str, chat_template: str, tokenizer: str | None
) -> EngineSettings:
    """The engine options (``values`` by dest) checked against the run's backend and chat setting
    (one OptionError); ``tokenizer``: the located checkpoint's, unless --tokenizer is given."""
    urls = values[BASE_URL.dest] or ()
    if urls and backend != "openai":
        raise OptionError(
            "--base-url is for --backend openai (a server you run); with --backend vllm the "
            "suite starts its own"
        )
    if backend == "openai" and not urls:
        raise OptionError(
            "--backend openai needs --base-url URL (repeat it for replicas), e.g. --base-url "
            "http://127.0.0.1:8000/v1"
        )
    api = values[ENDPOINT_API.dest]
    if api == "chat" and backend != "openai":
        raise OptionError("--endpoint-api chat is for --backend openai (a server you run)")
    if api == "chat" and chat_template == "off":
        raise OptionError(
            "--endpoint-api chat sends user messages, which the server wraps: drop "
            "--chat-template off"
        )
    vllm_args = values[VLLM_ARG.dest] or ()
    try:
        batch = engine_batch(vllm_args)
    except ValueError as exc:
        raise OptionError(str(exc)) from None
    concurrency = values[CONCURRENCY.dest]
    # settings named as their option's dest, taken as read
    same = (SERVED_MODEL, ENDPOINT_API, API_KEY_ENV, REQUEST_TIMEOUT, REQUEST_RETRIES, TP)
    return EngineSettings(
        base_urls=urls,
        tokenizer=values[TOKENIZER.dest] or tokenizer,
        concurrency=concurrency or (batch if backend == "vllm" else OPENAI_CONCURRENCY),
        fills_batch=concurrency is None and backend == "vllm",
        vllm_python=values[VLLM_PYTHON.dest],
        vllm_args=vllm_args,
        vllm_start_timeout=values[VLLM_START_TIMEOUT.dest],
        **{o.dest: values[o.dest] for o in same},
    )


def served(
    engine: EngineSettings,
    spec: ModelSpec,
    base_urls: tuple[str, ...] | None = None,
    server_logs: tuple[str, ...] = (),
    launch: EngineSpec | None = None,
    concurrency: int | None = None,
) -> Served:
    """What the backend sends to (``load_backend``): the settings' servers or those started for the
    run (``base_urls``, with their logs; a cluster's replicas start their own from ``launch``), with
    the numerics of the suite's own (vllm). ``concurrency``: an xdist worker's share of a batch."""
    assert engine.tokenizer is not None, "the plan resolves the servers' tokenizer"
    endpoint = EndpointSettings(
        engine.base_urls if base_urls is None else base_urls,
        engine.served_model,
        concurrency or engine.concurrency,
        engine.request_timeout,
        max_retries=engine.request_retries,
        key_env=engine.api_key_env,
        api=engine.endpoint_api,
    )
    numerics: dict[str, Any] = {}
    if spec.backend == "vllm":
        numerics = {
            "dtype": engine_dtype(spec.dtype, bool(visible_gpus())),
            "tensor_parallel": engine.tp,
            "vllm_args": list(engine.vllm_args),
        }
        if spec.checkpoint and spec.checkpoint.served_as:
            numerics["served_as"] = spec.checkpoint.served_as
    return Served(
        endpoint, engine.tokenizer, server_logs, numerics, launch, engine.vllm_start_timeout
    )
