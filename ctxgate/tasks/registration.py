"""``@register``: where a task module's factory puts its ``TaskSpec``. A leaf, so that the task modules and the
registry that loads them (``registry.py``) never import each other."""

from __future__ import annotations

from collections.abc import Callable

from ctxgate.tasks.base import TaskSpec

_TASKS: dict[str, TaskSpec] = {}  # in registration order: the order of cases and report rows
_ORIGINS: dict[str, str] = {}  # task name -> the factory that registered it


def register(factory: Callable[[], TaskSpec]) -> Callable[[], TaskSpec]:
    spec = factory()
    origin = f"{factory.__module__}.{factory.__qualname__}"
    if spec.name in _TASKS and _ORIGINS.get(spec.name) != origin:  # the same module imported again replaces it
        raise RuntimeError(f"task {spec.name!r} is registered twice: by {_ORIGINS.get(spec.name)} and {origin}")
    _TASKS[spec.name] = spec
    _ORIGINS[spec.name] = origin
    return factory
