"""The session-scoped model: loaded once per xdist worker, behind the backend interface. A model
that cannot load stops the session with one line, recorded once in the report."""

from __future__ import annotations

import atexit
import gc
import traceback
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ctxgate.gate.plan import run_record
from ctxgate.records.schema import RunError, to_json
from ctxgate.run.compose import LoadedModel, load_model
from ctxgate.run.loading import ModelError

from .engine import SERVED_KEY
from .options import PLAN_KEY, refusals_are_usage_errors

# on the session: why no case can run in this process (the model, the judge)
RUN_ERROR_KEY = pytest.StashKey[RunError]()
# a backend's own line at the end of the run (replicas on a cluster: where they ran, the queue)
SUMMARY_KEY = pytest.StashKey[Callable[[], str]]()
WORKER_SUMMARIES_KEY = pytest.StashKey[list[str]]()  # on the controller: each worker's "gwN: ..."
FROZE_KEY = pytest.StashKey[bool]()  # the session's objects were frozen once the model loaded
# the run's id, the controller's, given to each xdist worker: the key of the run's ledger in the
# generation cache (``run/cache.py``), which the report's costs are reconciled with at the end
RUN_ID_KEY = pytest.StashKey[str]()


@pytest.fixture(scope="session")
def ctxgate_model(
    request: pytest.FixtureRequest, pytestconfig: pytest.Config
) -> Iterator[LoadedModel]:
    plan = pytestconfig.stash[PLAN_KEY]
    selection = {"samples": plan.samples, "lengths": list(plan.lengths)}
    selection["extras"] = to_json(run_record(plan))  # plain JSON, as the record travels
    # Loading makes the millions of objects below: the collections Python starts while they are
    # made walk them over and over (0.7 s of a 4.9 s one-case run); one after the load does instead.
    collecting = gc.isenabled()
    gc.disable()
    try:
        loaded = load_model(plan.model, pytestconfig.stash.get(SERVED_KEY, None), selection)
    except ModelError as exc:
        message = f"ctxgate: {exc.what}: {exc.cause}"
        if pytestconfig.getoption("verbose") > 0:
            message += "\n" + "".join(traceback.format_exception(exc.cause))
        request.session.stash[RUN_ERROR_KEY] = RunError(message, exc.checkpoint)
        request.session.shouldstop = f"ctxgate: {exc.what}"
        raise pytest.fail.Exception(message, pytrace=False) from None
    finally:
        if collecting:
            gc.enable()
    if hasattr(loaded.backend, "summary"):
        pytestconfig.stash[SUMMARY_KEY] = loaded.backend.summary
    # The libraries and the checkpoint live as long as the session: no collection need walk their
    # millions of objects again (a full one took a quarter of a second with the tiny checkpoint,
    # and pytest runs them at its end); the loading's garbage is collected first, so that none is
    # kept. Unfrozen once pytest is done (pytest_configure). A process that froze its objects
    # itself (one running many sessions) keeps its own arrangement.
    if gc.get_freeze_count() == 0:
        gc.collect()
        gc.freeze()
        pytestconfig.stash[FROZE_KEY] = True
        # and at exit, after pytest unfroze them: the interpreter's last collections walked them
        # (a second of a 5.7 s one-case run, bench/startup.py); refcounts still free them
        atexit.unregister(gc.freeze)  # registered once a process
        atexit.register(gc.freeze)
    yield loaded
    loaded.close()  # its processes and actors end with the session, not with the interpreter


@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    worker = getattr(config, "workerinput", {})
    config.stash[RUN_ID_KEY] = worker.get("ctxgate_run") or uuid.uuid4().hex

    # cleanups run last registered first: this one, registered before the model loads, runs after
    # pytest's collections at its end (pytest 9: the unraisable-exception plugin's)
    def unfreeze() -> None:
        if config.stash.get(FROZE_KEY, False):
            gc.unfreeze()

    config.add_cleanup(unfreeze)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """On an xdist worker: its backend's line goes to the controller with the worker's output."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None and (summary := session.config.stash.get(SUMMARY_KEY, None)) is not None:
        output["ctxgate_summary"] = summary()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """On the controller, for each xdist worker: the run it is part of."""
    node.workerinput["ctxgate_run"] = node.config.stash[RUN_ID_KEY]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    if line := getattr(node, "workeroutput", {}).get("ctxgate_summary"):
        node.config.stash.setdefault(WORKER_SUMMARIES_KEY, []).append(f"{node.gateway.id}: {line}")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    workers = sorted(
        config.stash.get(WORKER_SUMMARIES_KEY, None) or (),
        key=lambda line: int(line[2:].split(":")[0]),
    )
    here = config.stash.get(SUMMARY_KEY, None)
    for line in filter(None, [here() if here else "", *workers]):
        terminalreporter.write_line(f"ctxgate: {line}")
