"""``--progress``: the live line's option, and the pytest plugin that draws it."""

from __future__ import annotations

from ctxgate.hookspec import hookimpl
from ctxgate.run.options import Option, OptionGroup

NAME = "progress"
PROGRESS = Option(
    "--progress",
    "auto (default): a live line with each worker's case, samples done, tokens/s and ETA, when "
    "the output is a terminal; off: never",
    default="auto",
    choices=("auto", "off"),
)


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [OptionGroup("ctxgate", "", (PROGRESS,))]


@hookimpl
def ctxgate_pytest_plugins() -> list[str]:
    return [f"{__package__}.pytest_plugin"]
