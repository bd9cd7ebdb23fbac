"""Signals: SIGTERM and SIGHUP (CI time limits, ``scancel``, ``docker stop``) end a run the way
Ctrl-C does, so the report is still written and xdist tears its workers down; a worker never
outlives its controller."""

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
# the signal that ended the run, for the report's reason
RECEIVED_KEY = pytest.StashKey[list[str]]()
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
    if config.stash.get(RECEIVED_KEY, []):
        # a run a signal ended keeps ignoring the rest: its report and summary are written, and
        # another signal while the libraries' exit handlers wind down would end it by the signal's
        # own death (Python puts back the default of a handler of its own as it finalizes)
        return
    for sig, previous in config.stash.get(_PREVIOUS_KEY, {}).items():
        signal.signal(sig, previous)


def _watch_parent(parent: int) -> None:
    """Exit when the controller is gone (its pid is then no longer our parent): nobody reads this
    worker's results, and its cached rows are committed."""
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:
            os._exit(3)
