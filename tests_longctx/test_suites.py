"""Every registered suite's cases, one test per suite, one case per task x length:
``test_ruler[niah_multikey_2-131072]``, ``test_helmet[...]``, and a test for each suite an extra
registers (``test_mrcr[ctx_mrcr_4-131072]``, a package's own): a suite needs no test file of its
own. Each case asserts its gate (``plugins/cases.py``)."""

from collections.abc import Callable

import pytest

from ctxgate.tasks.registry import suite_label, suites


def _suite_test(suite: str) -> Callable[..., None]:
    @pytest.mark.ctxgate_suite(suite)
    def test(ctxgate_case):  # type: ignore[no-untyped-def]
        ctxgate_case.assert_gate()

    test.__name__ = test.__qualname__ = f"test_{suite}"
    test.__doc__ = f"{suite_label(suite)}'s tasks, one case per task x length."
    return test


for _suite in suites():
    globals()[f"test_{_suite}"] = _suite_test(_suite)
