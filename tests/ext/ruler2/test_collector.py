"""The collector is held off for a build's span, overlapping builds included, and left as it was."""

from __future__ import annotations

import gc
import threading

from ctxgate.ext.ruler2.collector import held_off


def test_the_collector_is_back_when_the_last_overlapping_build_ends() -> None:
    assert gc.isenabled()
    first_in, second_out = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with held_off():
            first_in.wait()
            seen.append(gc.isenabled())
        second_out.set()

    thread = threading.Thread(target=other)
    with held_off():
        thread.start()
        first_in.set()
        second_out.wait()
        seen.append(gc.isenabled())  # the other build ended, this one goes on
    thread.join()
    assert seen == [False, False] and gc.isenabled()


def test_a_collector_turned_off_before_stays_off() -> None:
    gc.disable()
    try:
        with held_off():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
