"""The extras' run plugins (``hookspec.ctxgate_run_plugin``): each made from the run's plan, once
pytest's own plugins are configured (a live line needs the terminal), registered with pytest's
plugin manager and ctxgate's for the run, and unregistered at its end. An extra keeps the state of
one run on its plugin, never in a StashKey of the spine's."""

from __future__ import annotations

import pytest

from ctxgate.hooks import hook, manager, register

from .options import PLAN_KEY, refusals_are_usage_errors

RUN_PLUGINS_KEY = pytest.StashKey[list[object]]()


@pytest.hookimpl(trylast=True)
@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    plan = config.stash[PLAN_KEY]
    found = [p for p in hook().ctxgate_run_plugin(plan=plan, config=config) if p is not None]
    config.stash[RUN_PLUGINS_KEY] = []
    for plugin in found:
        register(manager(), plugin)
        config.stash[RUN_PLUGINS_KEY].append(plugin)
        config.pluginmanager.register(plugin, f"ctxgate-run-{type(plugin).__qualname__}")


def pytest_unconfigure(config: pytest.Config) -> None:
    for plugin in config.stash.get(RUN_PLUGINS_KEY, []):
        if manager().is_registered(plugin):
            manager().unregister(plugin)
        if config.pluginmanager.is_registered(plugin):
            config.pluginmanager.unregister(plugin)
