"""The extras' plugin manager, made once per process: the extras that ship with ctxgate
(``ctxgate.ext``, where the install has it; its ``PLUGINS`` in their stated order), then each other
package's ``ctxgate`` entry point, by name. The spine calls the hooks of ``hookspec.py`` through
``hook()``; this module finds the extras by their package's name, as pytest finds its plugins, and
no spine module imports one."""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import Any

import pluggy

from ctxgate import hookspec
from ctxgate.records.refusal import CtxgateError

EXTRAS = "ctxgate.ext"  # a wheel built without them has no such package


@functools.cache
def manager() -> pluggy.PluginManager:
    """Another package's plugin registered after the extras answers first: its answer wins where
    one decides."""
    pm = pluggy.PluginManager(hookspec.PROJECT)
    pm.add_hookspecs(hookspec)
    if importlib.util.find_spec(EXTRAS) is not None:
        _register(pm, importlib.import_module(EXTRAS))
    for point in sorted(entry_points(group=hookspec.PROJECT), key=lambda p: p.name):
        if point.value == EXTRAS:  # an install that named the extras as an entry point
            continue
        named = f"the ctxgate plugin {point.name} ({point.value})"
        try:
            loaded = point.load()
        except Exception as exc:  # noqa: BLE001 - one line names the plugin and the fix
            raise CtxgateError(
                f"{named} cannot be loaded ({type(exc).__name__}: {exc}): reinstall the package "
                "that provides it, or uninstall it"
            ) from None
        _register(pm, loaded, named)
    return pm


def _register(pm: pluggy.PluginManager, loaded: Any, named: str | None = None) -> None:
    """``loaded``'s plugins, each answering hooks of the spec only (a misspelled hook is refused,
    not left unasked)."""
    # pluggy calls the last registered first: registered backwards, they answer in order
    for plugin in reversed(getattr(loaded, "PLUGINS", (loaded,))):
        pm.register(plugin)
        for caller in pm.get_hookcallers(plugin) or ():
            if not caller.has_spec() and not all(i.optionalhook for i in caller.get_hookimpls()):
                raise CtxgateError(
                    f"{named or plugin.__name__} answers {caller.name}, a hook ctxgate does not "
                    "have: rename it to one of ctxgate/hookspec.py's, or uninstall it"
                )


def hook() -> Any:
    """The hooks to call, each by keyword: ``hook().ctxgate_option_groups()``."""
    return manager().hook


def flat(results: list[Any]) -> Iterator[Any]:
    """A list-collecting hook's answers (each a sequence), one after another."""
    for answer in results:
        yield from answer
