"""Placing a run's model replicas on the Ray cluster (``--ray``): as many as its resource holds,
each placed, then loading the model, within ``CTXGATE_RAY_START_TIMEOUT``; what could not start is
one error naming its nodes and its cause, or saying why no replica was placed in time."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

from ctxgate.api import BackendError, ModelSpec, Served, Unreachable

from .connection import first_line
from .replica import ReplicaInfo, ReplicaWorker

# a replica placed and loaded
START_TIMEOUT_S = float(os.environ.get("CTXGATE_RAY_START_TIMEOUT", "900"))


class Placement:
    """The replicas a run asks of the cluster at ``address``: as many as its ``resource`` holds (at
    most ``wanted``), each spanning ``size`` units; refused when not one fits."""

    def __init__(self, address: str, resource: str, size: int, wanted: int | None) -> None:
        import ray

        self.address, self.resource, self.size = address, resource, size
        self.total = ray.cluster_resources().get(resource, 0)
        self.free = ray.available_resources().get(resource, 0)  # what other work left the run
        fits = int(self.total) // size
        self.count = fits if wanted is None else min(fits, wanted)
        if self.count < 1:
            have = ", ".join(
                sorted(k for k in ray.cluster_resources() if "node:" not in k and "memory" not in k)
            )
            lacks = (
                f"no {resource!r} resource"
                if size == 1
                else f"fewer than {size} {resource!r} (--tp {size})"
            )
            raise Unreachable(
                f"the Ray cluster at {address} has {lacks} for a model replica (it has: "
                f"{have}); pass --ray-resource with one its nodes have, e.g. --ray-resource CPU on "
                "nodes without GPUs"
            )
        # the cause: where (replicas on one node usually fail alike)
        self.failed: dict[str, list[str]] = {}
        self.slow: list[str] = []  # where replicas were still loading at the deadline

    def load(self, spec: ModelSpec, served: Served | None) -> Iterator[tuple[Any, ReplicaInfo]]:
        """Starts the replicas, each placed, then loading the model, within ``START_TIMEOUT_S``,
        and yields the handle and facts of each that loaded as it is collected; then kills the rest
        (their failures and the ones still loading kept for ``check``)."""
        import ray

        # a server's replica takes its --concurrency requests at once (the engine batches them), a
        # model in the actor's own process one
        takes = {"GPU": {"num_gpus": self.size, "num_cpus": 0}, "CPU": {"num_cpus": self.size}}.get(
            self.resource, {"num_cpus": 0, "resources": {self.resource: self.size}}
        )
        concurrency = served.endpoint.concurrency if served else 1
        # Ray's stubs do not follow .options()
        actor: Any = ray.remote(ReplicaWorker).options(
            max_restarts=0, max_concurrency=concurrency, **takes
        )
        handles = [actor.remote() for _ in range(self.count)]
        deadline = time.monotonic() + START_TIMEOUT_S
        # placed: the constructor ran, so Ray granted the resource; then each loads the model
        asked = {h.placed.remote(): h for h in handles}
        placed, _ = ray.wait(list(asked), num_returns=len(asked), timeout=START_TIMEOUT_S)
        loading: dict[Any, tuple[Any, str]] = {}
        for ref in placed:
            try:
                ip, node, _ = ray.get(ref)
            except ray.exceptions.RayError as exc:
                self.failed.setdefault(f"its process died ({first_line(exc)})", []).append("a node")
                continue
            where = f"node {ip} ({node[:12]})"
            loading[asked[ref].load.remote(spec, served, os.getcwd())] = (asked[ref], where)
        left = max(0.0, deadline - time.monotonic())
        ready, slow = ray.wait(list(loading), num_returns=len(loading), timeout=left)
        kept: set[int] = set()
        for ref in ready:
            handle, where = loading[ref]
            try:
                info = ray.get(ref)
            except ray.exceptions.RayError as exc:
                self.failed.setdefault(f"its process died ({first_line(exc)})", []).append(where)
                continue
            if info.error:
                self.failed.setdefault(info.error, []).append(where)
            else:
                kept.add(id(handle))
                yield handle, info
        self.slow = [loading[ref][1] for ref in slow]
        # the rest are of no use: its server, if a replica started one, stopped when its load failed
        for handle in handles:
            if id(handle) not in kept:
                ray.kill(handle)

    def check(self, loaded: bool) -> None:
        """A failed load is one error naming the nodes and causes; without a replica loaded, one
        saying why none was in time."""
        if self.failed:
            raise BackendError(
                "; ".join(
                    f"the model replica on {', '.join(dict.fromkeys(where))} could not load the "
                    f"model: {cause}"
                    for cause, where in self.failed.items()
                )
            )
        if loaded:
            return
        late = f"set CTXGATE_RAY_START_TIMEOUT higher than {START_TIMEOUT_S:g}s"
        if self.slow:
            nodes = ", ".join(dict.fromkeys(self.slow))
            raise Unreachable(
                f"loading the model on {nodes} took longer than {START_TIMEOUT_S:g}s (the "
                f"replicas were placed, their {self.resource!r} granted); {late}"
            )
        total, free = self.total, self.free
        asked_for = f"the cluster has {total:g} of it, {total - free:g} taken by other work"
        if free >= self.size:  # a replica's share was free: its process had not started in time
            raise Unreachable(
                f"no model replica was placed on the Ray cluster at {self.address} within "
                f"{START_TIMEOUT_S:g}s: {asked_for} when the run asked, so the run's own "
                f"{self.count} replica(s) were still starting; {late}"
            )
        raise Unreachable(
            f"no model replica was placed on the Ray cluster at {self.address} within "
            f"{START_TIMEOUT_S:g}s: waiting for a {self.resource!r} resource, {asked_for}; free "
            f"them, or {late}"
        )
