"""The one registry of tasks, filled by decorated factories in the task modules."""

from __future__ import annotations

import difflib
from collections.abc import Callable

from ctxgate.tasks.base import TaskSpec

_TASKS: dict[str, TaskSpec] = {}


def register(factory: Callable[[], TaskSpec]) -> Callable[[], TaskSpec]:
    spec = factory()
    if spec.name in _TASKS:
        raise RuntimeError(f"task {spec.name!r} is registered twice")
    _TASKS[spec.name] = spec
    return factory


def _load() -> None:
    # Importing the modules runs their @register decorators. A lazy import rather than entry points, on purpose:
    # the usual plugin-registry shape, cheap until a task is asked for (``pytest --help`` imports no task), and
    # the import order is the registration order, which is the order of cases and report rows (RULER's order,
    # then HELMET's categories). Keep these lines as they are: an import sorter would reorder the suite.
    # isort: off
    from ctxgate.tasks import niah, vt, aggregation, qa, json_kv  # noqa: F401  (RULER order)
    from ctxgate.tasks import rag, rerank, cite, icl, longqa, summ  # noqa: F401  (HELMET application categories)
    from ctxgate.tasks import helmet_recall  # noqa: F401  (HELMET's own RULER files, when present)
    # isort: on


class UnknownTask(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def get_task(name: str) -> TaskSpec:
    _load()
    try:
        return _TASKS[name]
    except KeyError:
        close = difflib.get_close_matches(name, _TASKS, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known tasks: {', '.join(sorted(_TASKS))}"
        raise UnknownTask(f"unknown task {name!r}{hint}") from None


def all_tasks(suite: str | None = None) -> list[TaskSpec]:
    _load()
    return [t for t in _TASKS.values() if suite is None or t.suite == suite]


def task_names() -> list[str]:
    return [t.name for t in all_tasks()]
