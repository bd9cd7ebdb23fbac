"""Cases run ahead of the pytest items that report them, for a backend that serves several cases at
once. Such a backend (``cases_at_once``: replicas on a cluster, a server's engine) gets the next
cases' samples queued while a case's last ones finish, so nothing idles between cases."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from ctxgate.run.case import CaseResult

CaseKey = tuple[str, int]


class AheadOfItems:
    """Each case's run on one of ``width`` threads, started in the order given (longest first). The
    threads are daemons: an interrupted session exits without waiting for the cases still running
    (their finished samples are in the cache already)."""

    def __init__(
        self, jobs: Sequence[tuple[CaseKey, Callable[[], CaseResult]]], width: int
    ) -> None:
        self._futures: dict[CaseKey, Future[CaseResult]] = {key: Future() for key, _ in jobs}
        self._todo = deque((self._futures[key], job) for key, job in jobs)
        self._lock = threading.Lock()
        for i in range(max(1, min(width, len(jobs)))):
            threading.Thread(target=self._work, name=f"ctxgate-case-{i}", daemon=True).start()

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._todo:
                    return
                future, job = self._todo.popleft()
            if not future.set_running_or_notify_cancel():
                continue  # cancelled: the session is over
            try:
                future.set_result(job())
            except BaseException as exc:  # noqa: BLE001 - the case's item re-raises it
                future.set_exception(exc)

    def __contains__(self, key: object) -> bool:
        return key in self._futures

    def take(self, key: CaseKey) -> CaseResult:
        return self._futures.pop(key).result()

    def close(self) -> None:
        """Start no other case; cases running end with their backend."""
        for future in self._futures.values():
            future.cancel()
