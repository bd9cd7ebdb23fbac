"""Backends served over HTTP: ``--backend openai`` (servers the user runs) and ``--backend vllm``
(servers the controller starts before xdist starts any worker, worker gwN sent to replica N mod R,
stopped at ``pytest_unconfigure``). A server that will not start is a startup error."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ctxgate.backends.devices import visible_gpus
from ctxgate.backends.formats import hf_folder
from ctxgate.backends.model_config import config_window
from ctxgate.backends.vllm_server import (
    EngineError,
    EngineSpec,
    VLLMServer,
    find_python,
    replica_devices,
    start_all,
)
from ctxgate.gate.plan import Plan, task_for
from ctxgate.records.schema import RunError
from ctxgate.refusal import CtxgateError
from ctxgate.run.loading import Served, config_changes, served

from .options import PLAN_KEY, STARTUP_ERROR_KEY, one_process, refusals_are_usage_errors

SERVERS_KEY = pytest.StashKey[list[VLLMServer]]()
SERVED_KEY = pytest.StashKey[Served]()  # what this process's backend sends to


@pytest.hookimpl(tryfirst=True)
@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    """After the options plugin has made the plan."""
    plan = config.stash[PLAN_KEY]
    spec = plan.model
    if not spec.model or STARTUP_ERROR_KEY in config.stash:
        return
    if spec.backend == "openai":
        config.stash[SERVED_KEY] = served(plan.engine, spec)
    elif spec.backend == "vllm" and (found := vllm_servers(config, plan)) is not None:
        config.stash[SERVED_KEY] = found


def vllm_servers(config: pytest.Config, plan: Plan) -> Served | None:
    """``--backend vllm``: the servers this process sends to, started here on the controller, or the
    replica the controller handed this worker. None: nothing will run."""
    engine, spec = plan.engine, plan.model
    if (worker := getattr(config, "workerinput", None)) is not None:
        urls, logs = (worker["ctxgate_vllm_url"],), (worker["ctxgate_vllm_log"],)
        return served(engine, spec, urls, logs, None, worker.get("ctxgate_vllm_concurrency"))
    if config.getoption("collectonly") or config.getoption("help"):
        return None
    try:
        template = launch_template(config, plan)
        if one_process(plan) is not None:  # each replica an extra places starts its own server
            return served(engine, spec, (), launch=template)
        specs = [replace(template, devices=d) for d in replica_devices(visible_gpus(), engine.tp)]
        log_dir = Path(plan.report).parent if plan.report else Path(config.invocation_params.dir)
        servers = start_all(specs, log_dir / "ctxgate-vllm", engine.vllm_start_timeout)
    except EngineError as exc:
        config.stash[STARTUP_ERROR_KEY] = RunError(str(exc), checkpoint=False)
        return None
    config.stash[SERVERS_KEY] = servers
    server_logs = tuple(str(s.log_path) for s in servers)
    return served(engine, spec, tuple(s.url for s in servers), server_logs)


def launch_template(config: pytest.Config, plan: Plan) -> EngineSpec:
    """How a replica's server is started, but for its GPUs."""
    from ctxgate.tasks.registry import all_tasks

    engine, spec = plan.engine, plan.model
    assert spec.checkpoint is not None, "--backend vllm serves a located checkpoint"
    folder = _served_folder(config, plan)
    python = find_python(
        engine.vllm_python, [Path(config.invocation_params.dir), Path(__file__).parent.parent]
    )
    # the extras' config changes the server gets (--hf-overrides) and the window the config then
    # covers; an unreadable config: the server's own start says what is wrong
    config_dir = spec.checkpoint.config_dir
    try:
        found = config_changes(spec, config_dir)
        changes = dict(found.changes) if found else {}
        limit = found.window if found else config_window(config_dir)
    except CtxgateError:
        changes, limit = {}, None
    longest = max(plan.lengths) + max(
        task_for(plan, t.name).tokens_to_generate for t in all_tasks()
    )
    longest += spec.thinking_budget or 0  # a reasoning model's thought, past the length
    # never past the window: vLLM's RoPE table ends there (EndpointBackend.window_of)
    max_len = longest if limit is None else min(longest, limit)
    overrides = json.dumps(changes, sort_keys=True) if changes else None
    return EngineSpec(
        python, str(folder), max_len, engine.tp, None, spec.dtype, engine.vllm_args, overrides
    )


def _served_folder(config: pytest.Config, plan: Plan) -> Path:
    """The checkpoint, or for one that is not a Hugging Face folder (an extra's kind, which says
    what it is ``served_as``) one written from it, beside the generation cache (else removed with
    the run)."""
    checkpoint = plan.model.checkpoint
    assert checkpoint is not None, "--backend vllm serves a located checkpoint"
    if checkpoint.served_as is None:
        return checkpoint.folder
    if plan.model.cache_dir:
        root = Path(plan.model.cache_dir) / "models"
    else:
        root = Path(tempfile.mkdtemp(prefix="ctxgate-model-"))
        config.add_cleanup(lambda: shutil.rmtree(root, ignore_errors=True))
    try:
        sha256 = str(checkpoint.fingerprint()["sha256"])
        return hf_folder(sha256, root, checkpoint.tokenizer_dir, checkpoint.as_model)
    except (OSError, RuntimeError, ValueError) as exc:
        raise EngineError(
            f"{checkpoint.folder} could not be written as a Hugging Face folder for vLLM: {exc}"
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
        engine = node.config.stash[PLAN_KEY].engine
        if engine.fills_batch:
            workers = int(node.workerinput["workercount"])
            node.workerinput["ctxgate_vllm_concurrency"] = worker_share(
                engine.concurrency, index, workers, len(servers)
            )


def worker_share(batch: int, index: int, workers: int, servers: int) -> int:
    """The requests worker ``index`` of ``workers`` keeps in flight by default: its server's batch
    split among the workers that server serves, rounded up so that they fill it."""
    sharing = len(range(index % servers, workers, servers))
    return -(-batch // max(1, sharing))


def pytest_unconfigure(config: pytest.Config) -> None:
    for server in config.stash.get(SERVERS_KEY, []):
        server.stop()
