"""A pytest plugin for the benchmarks (``-p bench.suite_span``): the seconds from the first case's
start to the last case's end, written as JSON to the file ``CTXGATE_SPAN_FILE`` names, so a
benchmark can time the suite's cases without its start-up (imports, collection, loading the
tokenizer)."""

from __future__ import annotations

import json
import os
import time

import pytest

_span: dict[str, float] = {}


def pytest_runtest_setup(item: pytest.Item) -> None:
    _span.setdefault("first", time.perf_counter())


def pytest_runtest_teardown(item: pytest.Item) -> None:
    _span["last"] = time.perf_counter()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if (path := os.environ.get("CTXGATE_SPAN_FILE")) and "first" in _span:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"seconds": _span.get("last", _span["first"]) - _span["first"]}, f)
