"""MRCR-style multi-round co-reference (the project's conversations, and OpenAI's MRCR files when
given), one case per task x length: ``test_mrcr[ctx_mrcr_4-131072]``."""

import pytest


@pytest.mark.ctxgate_suite("mrcr")
def test_mrcr(ctxgate_case):
    ctxgate_case.assert_gate()
