"""RULER's 13 tasks, one case per task x length: ``test_ruler[niah_multikey_2-131072]``."""

import pytest


@pytest.mark.ctxgate_suite("ruler")
def test_ruler(ctxgate_case):
    ctxgate_case.assert_gate()
