"""BABILong-style reasoning over facts spread through long text (the project's bAbI-style stories,
and BABILong's own sets when given), one case per task x length: ``test_babilong[ctx_babi_qa2-0]``.
"""

import pytest


@pytest.mark.ctxgate_suite("babilong")
def test_babilong(ctxgate_case):
    ctxgate_case.assert_gate()
