"""NoLiMa-style needles that share no words with their question (the project's needle set, and
NoLiMa's own when given), one case per task x length: ``test_nolima[ctx_nolima-32768]``."""

import pytest


@pytest.mark.ctxgate_suite("nolima")
def test_nolima(ctxgate_case):
    ctxgate_case.assert_gate()
