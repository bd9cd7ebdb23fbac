"""The extras' plugin manager, made once per process: the extras that ship with ctxgate
(``ctxgate.ext``, where the install has it; its ``PLUGINS`` in their stated order), then each other
package's ``ctxgate`` entry point, by name. The spine calls the hooks of ``hookspec.py`` through
``hook()``; this module finds the extras by their package's name, as pytest finds its plugins, and
no spine module imports one. An extra's plugin module may declare hooks of its own, marked
``hookspec`` (for other extras to answer, as xdist's ``newhooks.py`` does for pytest): they are
added before any plugin is checked, so an answer to another extra's hook is a hook like the
spine's, and one to a hook nobody declares is refused."""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Iterator, Sequence
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, TypeVar

import pluggy

from ctxgate import hookspec
from ctxgate.refusal import CtxgateError

EXTRAS = "ctxgate.ext"  # a wheel built without them has no such package
T = TypeVar("T")


@functools.cache
def manager() -> pluggy.PluginManager:
    """Another package's plugin registered after the extras answers first where answers are
    listed."""
    pm = pluggy.PluginManager(hookspec.PROJECT)
    pm.add_hookspecs(hookspec)
    found: list[tuple[object, str | None]] = []
    if importlib.util.find_spec(EXTRAS) is not None:
        found += [(p, None) for p in getattr(importlib.import_module(EXTRAS), "PLUGINS", ())]
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
        plugins = getattr(loaded, "PLUGINS", (loaded,))
        found += [(p, named) for p in plugins]
        _ENTRY_NAMES.update((id(p), point.name) for p in plugins)
    for plugin, _ in found:
        if any(pm.parse_hookspec_opts(plugin, n) for n in dir(plugin)):  # type: ignore[arg-type]
            pm.add_hookspecs(plugin)  # type: ignore[arg-type]
    # pluggy calls the last registered first: registered backwards, they answer in order
    for plugin, given in reversed(found):
        register(pm, plugin, given)
    return pm


def register(pm: pluggy.PluginManager, plugin: object, named: str | None = None) -> None:
    """``plugin``, answering hooks that are declared only (a misspelled hook is refused, not left
    unasked); an extra's run plugin is registered so too, for its run."""
    pm.register(plugin)
    for caller in pm.get_hookcallers(plugin) or ():
        if not caller.has_spec() and not all(i.optionalhook for i in caller.get_hookimpls()):
            pm.unregister(plugin)
            raise CtxgateError(
                f"{named or getattr(plugin, '__name__', type(plugin).__name__)} answers "
                f"{caller.name}, a hook ctxgate does not have: rename it to one of "
                "ctxgate/hookspec.py's (or an installed extra's), or uninstall it"
            )


# another package's plugin modules, by id: the name of the entry point that loaded them
_ENTRY_NAMES: dict[int, str] = {}


def _name(plugin: object) -> str:
    """``ctxgate.ext.html.plugin`` is the extra ``html``; another package's, its entry point's."""
    if id(plugin) in _ENTRY_NAMES:
        return _ENTRY_NAMES[id(plugin)]
    return str(getattr(plugin, "__name__", "")).removeprefix(f"{EXTRAS}.").split(".")[0]


def installed() -> list[str]:
    """The extras installed here, by name, in the order they answer; empty: the spine alone. A
    run's plugins (``hookspec.ctxgate_run_plugin``), objects rather than modules, are no extra."""
    modules = [p for _, p in manager().list_name_plugin() if isinstance(p, ModuleType)]
    return list(dict.fromkeys(_name(p) for p in reversed(modules)))


def readers() -> bool:
    """Whether an installed extra reads the model's output (``ctxgate_reading``): a reasoning
    model's thought needs one."""
    return bool(manager().hook.ctxgate_reading.get_hookimpls())


def hook() -> Any:
    """The hooks to call, each by keyword: ``hook().ctxgate_option_groups()``."""
    return manager().hook


def flat(results: Sequence[Sequence[T]]) -> Iterator[T]:
    """A list-collecting hook's answers (each a sequence), one after another."""
    for answer in results:
        yield from answer


def one_answer(name: str, results: Sequence[T | None]) -> T | None:
    """The one answer to a hook where one decides (``hookspec``'s module docstring says which);
    None where no extra answered, and two refused: both extras meant to decide."""
    given = [r for r in results if r is not None]
    if len(given) > 1:
        kinds = " and ".join(f"{type(r).__module__}.{type(r).__qualname__}" for r in given)
        raise CtxgateError(
            f"two ctxgate plugins answer {name}, where one decides ({kinds}): uninstall one, or "
            "leave out the options that turn one on"
        )
    return given[0] if given else None
