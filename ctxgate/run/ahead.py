"""Cases run ahead of the pytest items that report them, for a backend that serves several cases at once.

Such a backend (``cases_at_once``: model replicas on a cluster) gets the next cases' samples queued while a case's
last samples finish, so no replica idles between cases. Each case's item still reports it, in its turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from ctxgate.run.case import CaseResult

CaseKey = tuple[str, int]


class Ahead:
    """Each case's run in a thread, at most ``width`` at once, started in the order given (longest first)."""

    def __init__(self, jobs: Sequence[tuple[CaseKey, Callable[[], CaseResult]]], width: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max(1, width), thread_name_prefix="ctxgate-case")
        self._futures: dict[CaseKey, Future[CaseResult]] = {key: self._pool.submit(job) for key, job in jobs}

    def __contains__(self, key: object) -> bool:
        return key in self._futures

    def take(self, key: CaseKey) -> CaseResult:
        """The case's result once it is there, or the error its run raised."""
        return self._futures.pop(key).result()

    def close(self) -> None:
        """Start no other case (the session is over, or stopped); cases running end with their backend."""
        for future in self._futures.values():
            future.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)
