"""Model replicas on a Ray cluster, seen by the session as one backend (``--ray``).

Each replica (``replica.py``) only generates; the session builds prompts, caches, scores and
reports. Requests wait in one queue, longest case first, each going to whichever replica frees
first, so a slow 128K sample never holds back the rest as static shards would. A lost replica's
requests are queued again; a failed load is one error naming its node. Ray is imported only with
``--ray``."""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ctxgate.api import (
    TOKENS_IN_FLIGHT,
    BackendDown,
    Generation,
    GenerationParams,
    HFTokenizer,
    ModelSpec,
    RawTokenizer,
    Request,
    Served,
    Window,
    Withdrawn,
)

from .connection import connect, disconnect, first_line
from .placement import Placement
from .replica import ReplicaInfo
from .settings import of

MAX_TRIES = 3  # replicas a request may lose before the run stops trusting the cluster with it
# the replicas' servers stopping (VLLMServer.stop waits up to 30 s for its processes)
STOP_TIMEOUT_S = 60.0
# the next case's samples queue while the current one finishes: no replica idles between cases
CASES_AT_ONCE = 2


@dataclass(eq=False)
class _Job:
    request: Request
    params: GenerationParams
    done: Future[Generation] = field(default_factory=Future)
    # the replicas it was running on when they were lost
    lost_on: list[str] = field(default_factory=list)


@dataclass(eq=False)
class _Replica:
    handle: Any
    info: ReplicaInfo
    lost: str | None = None

    @property
    def where(self) -> str:
        return f"node {self.info.node_ip} ({self.info.node_id[:12]})"


class RayPool:
    """The replicas behind the backend interface: ``generate`` queues its requests and waits for
    them; one thread hands the queue to free replicas and collects what they return."""

    cases_at_once = CASES_AT_ONCE

    def __init__(
        self, spec: ModelSpec, served: Served | None = None, replicas: int | None = None
    ) -> None:
        """``replicas``: at most this many (None: one per unit of ``--ray-resource``)."""
        import ray

        settings = of(spec)
        assert settings is not None, "the plan's ray section"
        self.address, self.resource = settings.address, settings.resource
        self._connected = connect(settings.address)
        self.replicas: list[_Replica] = []
        self._servers = False
        try:
            self._place(spec, served, replicas)
        except BaseException:
            self._release()
            raise
        first = self.replicas[0].info
        self.name = first.name
        self.max_positions = first.max_positions
        self.weights_problem = first.weights_problem
        if first.fingerprint is not None:
            self.fingerprint = first.fingerprint
        self._first = first
        self.concurrency = sum(r.info.concurrency for r in self.replicas)
        self.tokens_in_flight = TOKENS_IN_FLIGHT * len(self.replicas)
        self.tokenizer: RawTokenizer = _tokenizer(spec)
        # withdrawn: requests taken back from the queue once their case was decided
        self.withdrawn = self.generated = self.retried = 0
        self._placed = list(self.replicas)  # every replica this run had, for the summary
        self._queue: list[tuple[int, int, _Job]] = []  # a heap: (-case length, arrival, job)
        self._arrival = itertools.count()
        self._free = [r for r in self.replicas for _ in range(r.info.concurrency)]
        # the dispatcher's own: never touched elsewhere
        self._running: dict[Any, tuple[_Job, _Replica]] = {}
        self._cond = threading.Condition()
        self._closed: str | None = None
        self._ray = ray
        self._thread = threading.Thread(target=self._dispatch, name="ctxgate-ray", daemon=True)
        self._thread.start()

    def own_thinking_budget(self) -> bool:
        """Whether every replica's engine closes a thought at a budget itself (each asked where
        it loaded, ``ReplicaInfo.own_thinking_budget``)."""
        return all(r.info.own_thinking_budget for r in self.replicas)

    def _place(self, spec: ModelSpec, served: Served | None, replicas: int | None) -> None:
        served = served if served is not None and served.launch is not None else None
        # units a replica's server spans
        size = served.launch.tensor_parallel if served and served.launch else 1
        placement = Placement(self.address, self.resource, size, replicas)
        # replicas that start servers of their own have them stopped before the kill
        self._servers = served is not None
        for handle, info in placement.load(spec, served):  # kept as loaded: released on an error
            self.replicas.append(_Replica(handle, info))
        placement.check(loaded=bool(self.replicas))

    def describe(self) -> dict[str, object]:
        return dict(self._first.description)

    def cache_identity(self) -> dict[str, object] | None:
        return self._first.cache_identity

    def window_of(self, limit: int) -> Window:
        assert self._first.window is not None
        return self._first.window

    def summary(self) -> str:
        """One line for the end of the run: where the replicas ran, and what the queue did."""
        where = ", ".join(
            f"{r.info.node_ip} node {r.info.node_id[:12]} pid "
            f"{r.info.pid}{' (lost)' if r.lost else ''}"
            for r in self._placed
        )
        return (
            f"Ray cluster {self.address}: {len(self._placed)} replicas ({where}); "
            f"{self.generated} generated, {self.retried} retried after a lost replica, "
            f"{self.withdrawn} withdrawn by --sequential"
        )

    def _enqueue(self, job: _Job) -> None:
        """Under the lock."""
        heapq.heappush(self._queue, (-job.request.length, next(self._arrival), job))
        self._cond.notify()

    def generate(self, requests: Sequence[Request], params: GenerationParams) -> list[Generation]:
        jobs = [_Job(r, params) for r in requests]
        with self._cond:
            if self._closed is not None:
                raise BackendDown(self._closed)
            for job in jobs:
                self._enqueue(job)
        return [job.done.result() for job in jobs]

    def withdraw(self, task: str, length: int) -> None:
        """The case is decided: its queued requests never start (running ones finish)."""
        with self._cond:
            kept = []
            for entry in self._queue:
                request = entry[2].request
                if (request.task, request.length) == (task, length):
                    entry[2].done.set_exception(Withdrawn(f"{task} at {length} is decided"))
                    self.withdrawn += 1
                else:
                    kept.append(entry)
            heapq.heapify(kept)
            self._queue = kept

    def _dispatch(self) -> None:
        while True:
            with self._cond:
                while (
                    self._closed is None and not self._running and not (self._queue and self._free)
                ):
                    self._cond.wait()
                if self._closed is not None:
                    return
                starting = []
                while self._queue and self._free:
                    replica = self._free.pop(0)
                    if replica.lost is None:
                        starting.append((heapq.heappop(self._queue)[2], replica))
            for job, replica in starting:
                ref = replica.handle.generate.remote([job.request], job.params)
                self._running[ref] = (job, replica)
            if self._running:
                ready, _ = self._ray.wait(list(self._running), num_returns=1, timeout=0.1)
                for ref in ready:
                    self._collect(ref)

    def _collect(self, ref: Any) -> None:
        ray = self._ray
        job, replica = self._running.pop(ref)
        try:
            generation = ray.get(ref)[0]
        except ray.exceptions.RayTaskError as exc:  # the model's own error (out of memory...)
            self._give_back(replica)
            job.done.set_exception(exc.cause if isinstance(exc.cause, Exception) else exc)
            return
        except ray.exceptions.RayError as exc:  # the replica is gone: node, process, connection
            self._lose(replica, first_line(exc))
            self._retry(job, replica)
            return
        self.generated += 1
        self._give_back(replica)
        job.done.set_result(generation)

    def _give_back(self, replica: _Replica) -> None:
        with self._cond:
            self._free.append(replica)

    def _lose(self, replica: _Replica, why: str) -> None:
        if replica.lost is not None:
            return
        replica.lost = f"the replica on {replica.where} was lost ({why})"
        with self._cond:
            self._free = [r for r in self._free if r is not replica]
            if all(r.lost is not None for r in self.replicas):
                self._fail_all(
                    "every model replica on the Ray cluster was lost: "
                    + "; ".join(str(r.lost) for r in self.replicas)
                )

    def _retry(self, job: _Job, replica: _Replica) -> None:
        job.lost_on.append(replica.where)
        request = job.request
        with self._cond:
            if self._closed is not None:
                job.done.set_exception(BackendDown(self._closed))
            elif len(job.lost_on) >= MAX_TRIES:
                job.done.set_exception(
                    BackendDown(
                        f"{request.task} at {request.length} (sample {request.index}) lost "
                        f"{MAX_TRIES} replicas in a row ({', '.join(job.lost_on)}): the cluster "
                        "is unstable"
                    )
                )
            else:
                self.retried += 1
                self._enqueue(job)

    def _fail_all(self, why: str) -> None:
        """Under the lock: nothing more can run; every waiting request fails with ``why``."""
        self._closed = why
        for _, _, job in self._queue:
            job.done.set_exception(BackendDown(why))
        self._queue = []
        self._cond.notify_all()

    def close(self) -> None:
        """Stop the dispatcher, end every waiting request, stop the replicas (and the cluster, if
        this run started it): no Ray process of this run outlives it."""
        with self._cond:
            if self._closed is None:
                self._fail_all("the session ended")
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        for job, _ in self._running.values():
            if not job.done.done():
                job.done.set_exception(BackendDown("the session ended"))
        self._running.clear()
        self._release()

    def _release(self) -> None:
        import ray

        # each server stopped by its own replica, its engine processes too
        if self._servers and self.replicas:
            stopping = [r.handle.stop.remote() for r in self.replicas]
            ray.wait(stopping, num_returns=len(stopping), timeout=STOP_TIMEOUT_S)
        for replica in self.replicas:
            try:
                ray.kill(replica.handle)
            except ray.exceptions.RayError:
                pass
        self.replicas = []
        if self._connected:
            self._connected = False
            disconnect()


def _tokenizer(spec: ModelSpec) -> RawTokenizer:
    """The session's copy of the checkpoint's tokenizer: it builds the prompts the replicas get."""
    import transformers

    assert spec.checkpoint is not None, (
        "--ray runs a located checkpoint (the plan refuses other backends)"
    )
    return HFTokenizer(
        transformers.AutoTokenizer.from_pretrained(
            str(spec.checkpoint.tokenizer_dir), trust_remote_code=spec.trust_remote_code
        )
    )
