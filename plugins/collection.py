"""Which cases a run has: every registered suite's tasks x the plan's lengths, parametrized over
``ctxgate_case`` where a test function is marked ``ctxgate_suite(name)`` (the suite's test in
``tests_longctx/test_suites.py``, one per registered suite, an extra's included), the markers they
carry, and their order."""

from __future__ import annotations

import pytest

from ctxgate.run.progress import case_of
from ctxgate.tasks.registry import all_tasks, marker_vocabulary

from .options import PLAN_KEY, STARTUP_ERROR_KEY, one_process, refusals_are_usage_errors

# node ids of selected cases that will not run (broken checkpoint)
NOT_RUN_KEY = pytest.StashKey[list[str]]()


@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    """The markers cases carry, so that ``-m rag`` and ``--strict-markers`` know them."""
    config.addinivalue_line(
        "markers", "ctxgate_suite(name): parametrize ctxgate_case over a suite's tasks x lengths"
    )
    for name, doc in marker_vocabulary().items():
        config.addinivalue_line("markers", f"{name}: {doc}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "ctxgate_case" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("ctxgate_suite")
    if marker is None:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} uses ctxgate_case without @pytest.mark.ctxgate_suite"
        )
    lengths = metafunc.config.stash[PLAN_KEY].lengths
    params = [
        pytest.param(
            (t.name, L), id=f"{t.name}-{L}", marks=[getattr(pytest.mark, m) for m in t.marks]
        )
        for t in all_tasks(marker.args[0])
        for L in lengths
    ]
    metafunc.parametrize("ctxgate_case", params, indirect=True)


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected: what is left is the selection
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.stash[PLAN_KEY].model.model and any(
        "ctxgate_case" in getattr(i, "fixturenames", ()) for i in items
    ):
        raise pytest.UsageError(
            "the long-context suite needs a checkpoint: add --model PATH_OR_ID "
            "(the shipped demo: --model fixtures/tiny-llama-niah --lengths 512,1k,2k)"
        )
    if STARTUP_ERROR_KEY in config.stash:
        # a checkpoint that cannot load runs nothing: the cases are reported as not run, once
        cases = [i for i in items if case_of(i.nodeid)]
        config.stash[NOT_RUN_KEY] = [i.nodeid for i in cases]
        items[:] = [i for i in items if not case_of(i.nodeid)]
        config.hook.pytest_deselected(items=cases)
    if hasattr(config, "workerinput") or one_process(config.stash[PLAN_KEY]) is not None:
        # Longest first: under xdist (every worker sorts alike), no worker is left grinding a 128K
        # case while others idle; on an extra's replicas, the order ctxgate_ahead starts them in.
        items.sort(key=lambda item: -(case_of(item.nodeid) or ("", 0))[1])
