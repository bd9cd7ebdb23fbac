"""One replica of the model on a Ray node (``--ray``): it loads the checkpoint through
``load_backend`` as a local run does (``--backend vllm``: a server of its own, on the GPUs Ray gave
it) and only generates. ``cluster.py`` places replicas and feeds them one queue."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ctxgate.api import (
    Generation,
    GenerationParams,
    ModelSpec,
    Request,
    Served,
    VLLMServer,
    Window,
    load_backend,
    own_thinking_budget,
    window_of,
)


@dataclass(frozen=True)
class ReplicaInfo:
    """What a replica says about itself once it has loaded (or failed to load) the model."""

    node_ip: str
    node_id: str
    pid: int
    error: str | None = None
    name: str = ""
    max_positions: int | None = None
    window: Window | None = None
    description: dict[str, object] = field(default_factory=dict)
    cache_identity: dict[str, object] | None = None
    weights_problem: str | None = None
    # requests it takes at once (a server's --concurrency; one for a model in the process)
    concurrency: int = 1
    # what a server says it serves (the report's model_fingerprint)
    fingerprint: dict[str, object] | None = None
    # its engine closes a thought at the run's thinking budget itself (asked where one is set)
    own_thinking_budget: bool = False


class ReplicaWorker:
    """One model on one node. Built as soon as Ray grants its resources, it loads the model only in
    ``load``: the session waits for each apart, so a timeout says which it was. It never raises
    while loading: the session names the node in the one error a failed load gets."""

    def __init__(self) -> None:
        import ray

        context = ray.get_runtime_context()
        self.where = (ray.util.get_node_ip_address(), context.get_node_id(), os.getpid())
        self.server: VLLMServer | None = None
        self.backend: Any = None

    def placed(self) -> tuple[str, str, int]:
        return self.where

    def load(self, spec: ModelSpec, served: Served | None, started_in: str) -> ReplicaInfo:
        try:
            # the session's relative paths (--model fixtures/..., --config-from) mean what they
            # meant where it was started: a cluster's nodes share that folder (a shared filesystem),
            # as they share the checkpoint
            os.chdir(started_in)
            if served is not None and served.launch is not None:
                served = self._own_server(served)
            self.backend = b = load_backend(spec, served)
            own_budget = spec.thinking_budget is not None and own_thinking_budget(b)
        except Exception as exc:  # noqa: BLE001 - the replica's one-line cause
            # a server started for a model that then failed to load is of no use to anyone
            self.stop()
            return ReplicaInfo(*self.where, error=str(exc) or type(exc).__name__)
        return ReplicaInfo(
            *self.where,
            name=b.name,
            max_positions=b.max_positions,
            window=window_of(b),
            description=b.describe(),
            cache_identity=b.cache_identity() if hasattr(b, "cache_identity") else {},
            weights_problem=getattr(b, "weights_problem", None),
            concurrency=max(1, int(getattr(b, "concurrency", 1))),
            fingerprint=getattr(b, "fingerprint", None),
            own_thinking_budget=own_budget,
        )

    def _own_server(self, served: Served) -> Served:
        """--backend vllm: this replica's server, tensor parallel across the GPUs Ray gave it; it
        dies with this actor's process (``VLLMServer``)."""
        import ray

        assert served.launch is not None
        gpus = tuple(str(g) for g in ray.get_gpu_ids())
        launch = replace(served.launch, devices=gpus or None, tensor_parallel=len(gpus) or 1)
        log = Path(tempfile.gettempdir()) / f"ctxgate-vllm-ray-{os.getpid()}.log"
        self.server = VLLMServer(launch, log)
        self.server.start()
        self.server.wait_ready(served.launch_timeout_s)
        endpoint = replace(served.endpoint, base_urls=(self.server.url,))
        # the numerics as this node runs them (the session may have no GPU to resolve --dtype auto)
        numerics = {"dtype": launch.resolved_dtype, "tensor_parallel": launch.tensor_parallel}
        engine = {**served.engine, **numerics}
        return replace(
            served, endpoint=endpoint, server_logs=(str(log),), engine=engine, launch=None
        )

    def stop(self) -> None:
        """Stop this replica's own server before the actor is killed: a killed actor's server gets
        its death signal, but vLLM's engine processes can outlive it, holding GPU memory."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        return list(self.backend.generate(requests, params))
