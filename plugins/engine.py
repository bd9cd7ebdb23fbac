"""Backends served over HTTP: ``--backend openai`` (servers the user runs) and ``--backend vllm`` (servers the
suite starts and owns).

For vLLM, the controller (the one process without xdist) starts the replicas (visible GPUs / ``--tp``; one on a
machine without GPUs) while it configures, before xdist starts any worker, and hands worker gwN replica N mod R
(``pytest_configure_node``). They are stopped at ``pytest_unconfigure``, which also runs after Ctrl-C, and die
with the controller if it is killed. A server that will not start is a startup error: no case runs and the report
says why, with the tail of the server's log.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ctxgate.backends.adapters import hf_folder
from ctxgate.backends.checkpoint import check_tokenizer
from ctxgate.backends.devices import visible_gpus
from ctxgate.backends.override_rules import OverrideError
from ctxgate.backends.overrides import applied
from ctxgate.backends.vllm_server import EngineError, EngineSpec, VLLMServer, find_python, replica_devices, start_all
from ctxgate.run.serving import EngineSettings

from .options import SETTINGS_KEY, STARTUP_ERROR_KEY, Settings, check_overrides, refusals_are_usage_errors

SERVERS_KEY = pytest.StashKey[list[VLLMServer]]()


ENGINE_KEY = pytest.StashKey[EngineSettings]()


@pytest.hookimpl(tryfirst=True)
@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    """After the options plugin (called first) has checked --model."""
    run = config.stash[SETTINGS_KEY]
    engine = config.stash[ENGINE_KEY] = run.plan.engine
    if run.model is None:
        return
    if run.backend == "openai":
        engine = config.stash[ENGINE_KEY] = checked_openai(engine, run.model)
        if not run.opening.model_dir:
            check_overrides(run, engine.tokenizer)
    elif run.backend == "vllm" and run.opening.model_dir and STARTUP_ERROR_KEY not in config.stash:
        config.stash[ENGINE_KEY] = with_servers(config, engine, run)


def checked_openai(engine: EngineSettings, model: str) -> EngineSettings:
    """``--backend openai``: the servers, the tokenizer to check them against, and the model name to ask for; a
    wrong option is a usage error."""
    folder = Path(model).expanduser() if Path(model).expanduser().is_dir() else None
    if not engine.base_urls:
        raise pytest.UsageError(
            "--backend openai needs --base-url URL (repeat it for replicas), e.g. --base-url http://127.0.0.1:8000/v1"
        )
    tokenizer = engine.tokenizer or (str(folder) if folder else None)
    if tokenizer is None:
        raise pytest.UsageError(
            f"--backend openai: --model {model!r} is not a folder, so pass --tokenizer with the "
            "served model's tokenizer folder"
        )
    check_tokenizer(Path(tokenizer), "--tokenizer")
    return replace(engine, tokenizer=tokenizer, served_model=engine.served_model or (None if folder else model))


def with_servers(config: pytest.Config, engine: EngineSettings, run: Settings) -> EngineSettings:
    """``--backend vllm`` on a checked checkpoint folder: the servers this process sends to. The controller starts
    them (a server that will not start is a startup error: the run then reports it); a worker gets its replica
    from the controller."""
    checkpoint = run.opening.checkpoint
    tokenizer = str(checkpoint.tokenizer_dir) if checkpoint else run.opening.model_dir
    engine = replace(engine, tokenizer=engine.tokenizer or tokenizer)
    if (worker := getattr(config, "workerinput", None)) is not None:
        engine = replace(engine, concurrency=worker.get("ctxgate_vllm_concurrency", engine.concurrency))
        return replace(engine, base_urls=(worker["ctxgate_vllm_url"],), server_logs=(worker["ctxgate_vllm_log"],))
    if config.getoption("collectonly") or config.getoption("help"):
        return engine  # nothing will run
    try:
        template = launch_template(config, engine, run)
        if run.opening.ray is not None:  # each replica on the cluster starts its own server, on its GPUs
            return replace(engine, launch=template)
        specs = [replace(template, devices=devices) for devices in replica_devices(visible_gpus(), engine.tp)]
        log_dir = Path(run.report).parent if run.report else Path(config.invocation_params.dir)
        servers = start_all(specs, log_dir / "ctxgate-vllm", engine.vllm_start_timeout)
    except EngineError as exc:
        config.stash[STARTUP_ERROR_KEY] = str(exc)
        return engine
    config.stash[SERVERS_KEY] = servers
    return replace(engine, base_urls=tuple(s.url for s in servers), server_logs=tuple(str(s.log_path) for s in servers))


def launch_template(config: pytest.Config, engine: EngineSettings, run: Settings) -> EngineSpec:
    """How a replica's server is started, but for its GPUs: here for each visible GPU set, or on a cluster by each
    replica for the GPUs Ray gives it."""
    from ctxgate.tasks.registry import all_tasks

    folder = _served_folder(config, run)
    python = find_python(engine.vllm_python, [Path(config.invocation_params.dir), Path(__file__).parent.parent])
    budget = max(t.tokens_to_generate for t in all_tasks())
    try:  # the config changes the server gets (--hf-overrides) and the window the config then covers
        changes, limit = applied(
            run.opening.checkpoint.config_dir if run.opening.checkpoint else folder, run.opening.overrides
        )
    except OverrideError:
        changes, limit = {}, None  # an unreadable config: the server's own start says what is wrong
    longest = max(run.plan.lengths) + budget
    # never past the window: vLLM's RoPE table ends there (EndpointBackend.window_of)
    max_len = longest if limit is None else min(longest, limit)
    overrides = json.dumps(changes, sort_keys=True) if changes else None
    return EngineSpec(python, str(folder), max_len, engine.tp, None, run.opening.dtype, engine.vllm_args, overrides)


def _served_folder(config: pytest.Config, run: Settings) -> Path:
    """The folder the servers load: the checkpoint, or for one that is not a Hugging Face folder (a PEFT adapter,
    a sharded checkpoint) a Hugging Face folder written from it once, kept beside the generation cache (else in a
    temporary folder removed with the run)."""
    checkpoint = run.opening.checkpoint
    if checkpoint is None or checkpoint.served_as is None:
        return Path(run.opening.model_dir or "")
    if run.opening.cache_dir:
        root = Path(run.opening.cache_dir) / "models"
    else:
        root = Path(tempfile.mkdtemp(prefix="ctxgate-model-"))
        config.add_cleanup(lambda: shutil.rmtree(root, ignore_errors=True))
    try:
        return hf_folder(str(checkpoint.fingerprint()["sha256"]), root, checkpoint.tokenizer_dir, checkpoint.as_model)
    except (OSError, RuntimeError, ValueError) as exc:
        raise EngineError(
            f"{run.opening.model_dir} could not be written as a Hugging Face folder for vLLM: {exc}"
        ) from None


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """On the controller, for each xdist worker: its replica."""
    servers = node.config.stash.get(SERVERS_KEY, None)
    if servers:
        index = int(str(node.gateway.id).removeprefix("gw"))
        server = servers[index % len(servers)]
        node.workerinput["ctxgate_vllm_url"] = server.url
        node.workerinput["ctxgate_vllm_log"] = str(server.log_path)
        engine = node.config.stash[ENGINE_KEY]
        if engine.fills_batch:
            workers = int(node.workerinput["workercount"])
            node.workerinput["ctxgate_vllm_concurrency"] = worker_share(
                engine.concurrency, index, workers, len(servers)
            )


def worker_share(batch: int, index: int, workers: int, servers: int) -> int:
    """The requests xdist worker ``index`` of ``workers`` keeps in flight by default: its server's batch (the server
    is ``index`` mod ``servers``) split among the workers that server serves, rounded up so that they fill it."""
    sharing = len(range(index % servers, workers, servers))
    return -(-batch // max(1, sharing))


def pytest_unconfigure(config: pytest.Config) -> None:
    for server in config.stash.get(SERVERS_KEY, []):
        server.stop()
