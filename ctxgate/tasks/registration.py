"""``@register``: where a task module puts its ``TaskSpec``s. A leaf, so that the task modules and
the registry that loads them (``registry.py``) never import each other."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ctxgate.tasks.base import TaskSpec

_TASKS: dict[str, TaskSpec] = {}  # in registration order: the order of cases and report rows
_ORIGINS: dict[str, str] = {}  # task name -> what registered it
_SUITES: dict[str, str] = {}  # a suite's name -> its label in reports (RULER, MRCR-style)
_BY_CATEGORY: set[str] = set()  # suites averaged per category of their tasks too


def register_suite(name: str, label: str, *, by_category: bool = False) -> None:
    """A suite's label, said by the module that registers its tasks. ``by_category``: beside the
    suite's average, one per category of its tasks (``SUITE_CATEGORY``, RULERv2's levels), each a
    summary with its own effective lengths."""
    _SUITES[name] = label
    if by_category:
        _BY_CATEGORY.add(name)


def register(factory: Callable[[], TaskSpec]) -> Callable[[], TaskSpec]:
    _add(factory(), f"{factory.__module__}.{factory.__qualname__}")
    return factory


def register_all(module: str, specs: Iterable[TaskSpec]) -> None:
    """A module's table of specs, in order; each one's origin is its place in the table."""
    for i, spec in enumerate(specs):
        _add(spec, f"{module}[{i}]")


def _add(spec: TaskSpec, origin: str) -> None:
    if spec.suite not in _SUITES:  # a suite is a name its module registers, not a closed list
        raise RuntimeError(
            f"task {spec.name!r} ({origin}) names the suite {spec.suite!r}, which nothing "
            f"registered: call register_suite({spec.suite!r}, LABEL) before its tasks"
        )
    # the same module imported again replaces its tasks
    if spec.name in _TASKS and _ORIGINS.get(spec.name) != origin:
        raise RuntimeError(
            f"task {spec.name!r} is registered twice: by {_ORIGINS.get(spec.name)} and {origin}"
        )
    _TASKS[spec.name] = spec
    _ORIGINS[spec.name] = origin
