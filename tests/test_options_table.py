"""docs/running.md's options table lists every option the suite adds to ``pytest --help``, the
extras' included, and no other. A row may list several flags, an alias beside its flag; the flags
are those of each row's first column."""

from __future__ import annotations

import re
from argparse import SUPPRESS
from collections.abc import Iterable
from typing import Any

import pytest

from tests.conftest import ROOT, in_process

PAGE = ROOT / "docs" / "running.md"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def table_flags() -> list[str]:
    """The flags of the first column of the table under "## Options"."""
    section = PAGE.read_text(encoding="utf-8").split("\n## Options\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows, f"{PAGE.name}: no options table under '## Options'"
    # a cell's own pipes are escaped (`--thinking default\|on`)
    return [flag for row in rows for flag in FLAG.findall(re.split(r"(?<!\\)\|", row)[1])]


def help_flags(lines: Iterable[str]) -> list[str]:
    """The flags ``pytest --help`` shows under its ctxgate groups: a group's heading starts its
    line, an option's line starts with two spaces and a dash, the flags before the help column."""
    flags: list[str] = []
    ours = False
    for line in lines:
        if line and not line[0].isspace():
            ours = line.startswith("ctxgate")
        elif ours and line.startswith("  -"):
            flags += FLAG.findall(re.split(r"\s{2,}", line.strip())[0])
    return flags


class Recording:
    """A stand-in for pytest's parser and its groups: the flags ``pytest_addoption`` adds, those
    hidden from ``--help`` (an absent extra's, refused by name) left out."""

    def __init__(self) -> None:
        self.flags: list[str] = []

    def getgroup(self, name: str, description: str = "") -> Recording:
        return self

    def addoption(self, *flags: str, **keywords: Any) -> None:
        if keywords.get("help") != SUPPRESS:
            self.flags += flags

    def addini(self, *args: Any, **keywords: Any) -> None:
        pass


@pytest.fixture
def shown(pytester: pytest.Pytester) -> list[str]:
    """The flags ``pytest --help`` shows under its ctxgate groups, run in this process."""
    result = in_process(pytester, "-p", "no:cacheprovider", "--help")
    assert result.ret == 0, "\n".join(result.outlines[-20:])
    return help_flags(result.outlines)


def test_the_options_table_lists_every_option_of_pytest_help(shown: list[str]) -> None:
    listed = table_flags()
    missing = [f for f in shown if f not in listed]
    extra = [f for f in listed if f not in shown]
    twice = sorted({f for f in listed if listed.count(f) > 1})
    assert not (missing or extra or twice), (
        f"docs/running.md's options table: missing {_named(missing)}; not an option of pytest "
        f"--help: {_named(extra)}; listed twice: {_named(twice)}"
    )


def _named(flags: list[str]) -> str:
    return ", ".join(flags) or "none"


def test_the_help_read_finds_every_option_the_plugin_adds(shown: list[str]) -> None:
    """The reading of ``--help`` above misses no group: every flag the plugin declares (its own
    groups and the extras', ``ctxgate/run/options.py``) is among those read. Imported by the
    plugin's one name: ``plugins.X`` would put its alias finder on ``sys.meta_path`` inside
    pytester, which takes it off again."""
    from ctxgate_plugins.options import pytest_addoption

    recording = Recording()
    pytest_addoption(recording)
    assert sorted(recording.flags) == sorted(shown), (
        f"read from pytest --help but not declared: {sorted(set(shown) - set(recording.flags))}; "
        f"declared but not read: {sorted(set(recording.flags) - set(shown))}"
    )
