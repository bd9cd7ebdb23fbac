"""Backends served over HTTP: ``--backend openai`` (servers the user runs) and ``--backend vllm`` (servers the
suite starts and owns).

For vLLM, the controller (the one process without xdist) starts the replicas (visible GPUs / ``--tp``; one on a
machine without GPUs) while it configures, before xdist starts any worker, and hands worker gwN replica N mod R
(``pytest_configure_node``). They are stopped at ``pytest_unconfigure``, which also runs after Ctrl-C, and die
with the controller if it is killed. A server that will not start is a startup error: no case runs and the report
says why, with the tail of the server's log.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ctxgate.backends.checkpoint import CheckpointError, check_tokenizer
from ctxgate.backends.vllm_server import EngineError, EngineSpec, VLLMServer, find_python, replica_devices, start_all

SERVERS_KEY = pytest.StashKey[list[VLLMServer]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("ctxgate-engine", "ctxgate engines: --backend openai / vllm")
    g.addoption(
        "--base-url",
        action="append",
        default=None,
        help="--backend openai: an OpenAI-compatible server, e.g. http://gpu7:8000/v1; repeat for replicas",
    )
    g.addoption(
        "--tokenizer", default=None, help="the served model's tokenizer folder (default: --model when it is a folder)"
    )
    g.addoption(
        "--served-model",
        default=None,
        help="the model name the server serves (default: the only one it lists, or --model when that is not a folder)",
    )
    g.addoption(
        "--concurrency",
        type=int,
        default=8,
        help="requests in flight per server replica (default %(default)s); the engine batches them",
    )
    g.addoption("--request-timeout", type=float, default=600.0, help="seconds per request (default %(default)s)")
    g.addoption(
        "--request-retries",
        type=int,
        default=4,
        help="retries after 429/5xx/timeouts/dropped connections, with backoff (default %(default)s)",
    )
    g.addoption(
        "--tp",
        "--tensor-parallel-size",
        dest="tp",
        type=int,
        default=1,
        help="--backend vllm: GPUs per replica (default %(default)s); replicas = visible GPUs / tp",
    )
    g.addoption(
        "--vllm-python",
        default=None,
        help="--backend vllm: the python with vLLM (default: $CTXGATE_VLLM_PYTHON, else .venv-vllm)",
    )
    g.addoption(
        "--vllm-arg",
        action="append",
        default=None,
        help="--backend vllm: one more argument for the vLLM server, e.g. --vllm-arg=--gpu-memory-utilization=0.8",
    )
    g.addoption(
        "--vllm-start-timeout",
        type=float,
        default=900.0,
        help="--backend vllm: seconds a server may take to start (default %(default)s)",
    )


def engine_settings(config: pytest.Config, settings: Any) -> dict[str, Any]:
    """The engine options as Settings fields, checked."""
    for flag in ("--concurrency", "--tp", "--request-timeout", "--vllm-start-timeout"):
        if config.getoption(flag) <= 0:
            raise pytest.UsageError(f"{flag} {config.getoption(flag)} must be positive")
    if config.getoption("--request-retries") < 0:
        raise pytest.UsageError("--request-retries must be 0 or more")
    urls = tuple(config.getoption("--base-url") or ())
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise pytest.UsageError(f"--base-url {url!r} is not an http(s) URL: e.g. http://127.0.0.1:8000/v1")
    if urls and settings.backend != "openai":
        raise pytest.UsageError(
            "--base-url is for --backend openai (a server you run); with --backend vllm the suite starts its own"
        )
    return {
        "base_urls": urls,
        "tokenizer": config.getoption("--tokenizer"),
        "served_model": config.getoption("--served-model"),
        "concurrency": config.getoption("--concurrency"),
        "request_timeout": config.getoption("--request-timeout"),
        "request_retries": config.getoption("--request-retries"),
        "tp": config.getoption("tp"),
        "vllm_python": config.getoption("--vllm-python"),
        "vllm_args": tuple(config.getoption("--vllm-arg") or ()),
        "vllm_start_timeout": config.getoption("--vllm-start-timeout"),
    }


def checked_openai(settings: Any) -> Any:
    """``--backend openai``: the servers, the tokenizer to check them against, and the model name to ask for; a
    wrong option is a usage error."""
    model = settings.model or ""
    folder = Path(model).expanduser() if Path(model).expanduser().is_dir() else None
    if not settings.base_urls:
        raise pytest.UsageError(
            "--backend openai needs --base-url URL (repeat it for replicas), e.g. --base-url http://127.0.0.1:8000/v1"
        )
    tokenizer = settings.tokenizer or (str(folder) if folder else None)
    if tokenizer is None:
        raise pytest.UsageError(
            f"--backend openai: --model {model!r} is not a folder, so pass --tokenizer with the "
            "served model's tokenizer folder"
        )
    try:
        check_tokenizer(Path(tokenizer))
    except CheckpointError as exc:
        raise pytest.UsageError(f"--tokenizer {tokenizer}: {exc}") from None
    served = settings.served_model or (None if folder else model)
    return replace(settings, tokenizer=tokenizer, served_model=served, model_dir=str(folder) if folder else None)


def with_servers(config: pytest.Config, settings: Any, startup_error: pytest.StashKey[str]) -> Any:
    """``--backend vllm`` on a checked checkpoint folder: the servers this process sends to. The controller starts
    them (a server that will not start is recorded under ``startup_error``: the run then reports it); a worker gets
    its replica from the controller."""
    settings = replace(settings, tokenizer=settings.tokenizer or settings.model_dir)
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        return replace(settings, base_urls=(worker["ctxgate_vllm_url"],), server_logs=(worker["ctxgate_vllm_log"],))
    if config.getoption("collectonly") or config.getoption("help"):
        return settings  # nothing will run
    try:
        servers = _start(config, settings, Path(settings.model_dir))
    except EngineError as exc:
        config.stash[startup_error] = str(exc)
        return settings
    config.stash[SERVERS_KEY] = servers
    return replace(
        settings, base_urls=tuple(s.url for s in servers), server_logs=tuple(str(s.log_path) for s in servers)
    )


def _start(config: pytest.Config, settings: Any, folder: Path) -> list[VLLMServer]:
    from ctxgate.tasks.registry import all_tasks

    from .workers import visible_gpus

    python = find_python(settings.vllm_python, [Path(config.invocation_params.dir), Path(__file__).parent.parent])
    budget = max(t.tokens_to_generate for t in all_tasks())
    limit = _position_limit(folder)
    longest = max(settings.lengths) + budget
    max_len = longest if settings.force_lengths or limit is None else min(longest, limit)
    specs = [
        EngineSpec(
            python,
            str(folder),
            max_len,
            settings.tp,
            devices,
            settings.dtype,
            settings.vllm_args,
            long_context=bool(limit and max_len > limit),
        )
        for devices in replica_devices(visible_gpus(), settings.tp)
    ]
    log_dir = Path(settings.report).parent if settings.report else Path(config.invocation_params.dir)
    return start_all(specs, log_dir / "ctxgate-vllm", settings.vllm_start_timeout)


def _position_limit(folder: Path) -> int | None:
    import json

    try:
        return int(json.loads((folder / "config.json").read_text("utf-8"))["max_position_embeddings"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """On the controller, for each xdist worker: its replica."""
    servers = node.config.stash.get(SERVERS_KEY, None)
    if servers:
        index = int(str(node.gateway.id).removeprefix("gw"))
        server = servers[index % len(servers)]
        node.workerinput["ctxgate_vllm_url"] = server.url
        node.workerinput["ctxgate_vllm_log"] = str(server.log_path)


def pytest_unconfigure(config: pytest.Config) -> None:
    for server in config.stash.get(SERVERS_KEY, []):
        server.stop()
