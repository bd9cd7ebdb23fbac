"""The ``bisect`` and ``watch`` verbs."""

from __future__ import annotations

from types import ModuleType

from ctxgate.api import hookimpl


@hookimpl
def ctxgate_verbs() -> list[ModuleType]:
    from . import bisect, trend, watch

    return [bisect, watch, trend]
