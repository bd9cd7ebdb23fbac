"""Python's cyclic garbage collector held off while a set is drawn and a sample's ids are joined.
A 1M-token sample allocates some 100,000 tuples and lists, none of them in a cycle, and each of
the full collections they set off walks every object alive, HotpotQA's and MMLU's records among
them: a fifth of a 1M build's time (docs/tasks.md). Reference counting frees what a build lets go
all the same; a cycle made meanwhile, anywhere in the process, waits for the last build to end."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator


class _Collector:
    """The builds under way in this process (a worker builds two cases' samples at once), and
    whether the collector was on before the first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holding = 0
        self.was_enabled = False

    @contextlib.contextmanager
    def held_off(self) -> Iterator[None]:
        """The collector off for the block, and back as it was when the last block ends."""
        with self.lock:
            if not self.holding:
                self.was_enabled = gc.isenabled()
                gc.disable()
            self.holding += 1
        try:
            yield
        finally:
            with self.lock:
                self.holding -= 1
                if not self.holding and self.was_enabled:
                    gc.enable()


held_off = _Collector().held_off
