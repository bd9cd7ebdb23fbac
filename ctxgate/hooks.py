"""The extras' plugin manager: every ``ctxgate`` entry point registered once per process, its
``PLUGINS`` in their stated order (a plain module is one plugin). The spine calls the hooks of
``hookspec.py`` through ``hook()`` and never imports an extra."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any

import pluggy

from ctxgate import hookspec


@functools.cache
def manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspec.PROJECT)
    pm.add_hookspecs(hookspec)
    for point in sorted(entry_points(group=hookspec.PROJECT), key=lambda p: p.name):
        loaded = point.load()
        # pluggy calls the last registered first: registered backwards, they answer in order
        for plugin in reversed(getattr(loaded, "PLUGINS", (loaded,))):
            pm.register(plugin)
    return pm


def hook() -> Any:
    """The hooks to call, each by keyword: ``hook().ctxgate_option_groups()``."""
    return manager().hook


def flat(results: list[Any]) -> Iterator[Any]:
    """A list-collecting hook's answers (each a sequence), one after another."""
    for answer in results:
        yield from answer
