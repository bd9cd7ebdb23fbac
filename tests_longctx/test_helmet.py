"""HELMET's own synthetic recall task (JSON KV). Its RULER members are the test_ruler cases of the
same tasks."""

import pytest


@pytest.mark.ctxgate_suite("helmet")
def test_helmet(ctxgate_case):
    ctxgate_case.assert_gate()
