"""Signals: SIGTERM and SIGHUP end a run the way Ctrl-C does, and a worker never outlives its
controller.

CI time limits, ``scancel``, ``docker stop`` and a closed terminal send SIGTERM or SIGHUP, not
SIGINT. Left to their default, they kill the controller at once: no report, no INCOMPLETE line, and
the xdist workers, re-parented to PID 1, go on computing. Here they raise ``KeyboardInterrupt`` in
the controller, so pytest's own interrupt path runs: the session finishes as interrupted, the report
is written with the unfinished cases as not run (exit 2), and xdist tears its workers down. A worker
also watches its parent: if the controller is gone (``kill -9``), it exits within a second instead
of writing cache rows for a run nobody will read.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType
from typing import Any

import pytest

from .options import PLAN_KEY, refusals_are_usage_errors

HANDLED = (signal.SIGTERM, signal.SIGHUP)
_PREVIOUS_KEY = pytest.StashKey[dict[int, Any]]()
RECEIVED_KEY = pytest.StashKey[
    list[str]
]()  # the signal that ended the run, for the report's reason
PARENT_POLL_S = 0.5


@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    if not config.stash[PLAN_KEY].model.model:
        return
    if hasattr(config, "workerinput"):
        threading.Thread(
            target=_watch_parent, args=(os.getppid(),), name="ctxgate-parent-watch", daemon=True
        ).start()
        return
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread (pytest run inside a thread)
    received = config.stash[RECEIVED_KEY] = []

    def interrupt(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        received.append(name)
        for sig in HANDLED:  # a second signal while the report is written must not cut it short
            signal.signal(sig, signal.SIG_IGN)
        raise KeyboardInterrupt(f"ctxgate: received {name}")

    config.stash[_PREVIOUS_KEY] = {int(sig): signal.signal(sig, interrupt) for sig in HANDLED}


def pytest_unconfigure(config: pytest.Config) -> None:
    for sig, previous in config.stash.get(_PREVIOUS_KEY, {}).items():
        signal.signal(sig, previous)


def _watch_parent(parent: int) -> None:
    """Exit when the process that started this worker is gone (its pid is then no longer our
    parent)."""
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:
            os._exit(
                3
            )  # the controller died: nobody reads this worker's results; cached rows are committed
