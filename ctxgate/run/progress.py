"""A case's label and the pytest id that ends in it, and a running case's progress, as the case
reports it after each sample, and once when it is over, to whoever listens
(``hookspec.ctxgate_progress``: the progress extra's line)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxgate.tasks.registry import task_names

# a case's pytest id ends in its label: test_ruler[vt-8192]
_CASE_ID = re.compile(r"\[(?P<task>[A-Za-z0-9_.]+)-(?P<length>\d+)\]$")


@dataclass(frozen=True)
class Progress:
    """Where a case stands after a sample finished. ``done`` counts cached samples too; the rate and
    the ETA use only what the backend generated in this run, over ``seconds`` of generating.
    ``over``: the case has ended, however it ended."""

    case: str  # "vt-4096"
    done: int
    total: int
    from_cache: int
    generated_tokens: int
    seconds: float
    over: bool = False


def case_label(task: str, length: int) -> str:
    return f"{task}-{length}"


def case_of(nodeid: str) -> tuple[str, int] | None:
    """The case a pytest id names, by its label: ``...::test_ruler[vt-8192]`` -> ("vt", 8192);
    None: not a case of a registered task."""
    m = _CASE_ID.search(nodeid)
    return (m["task"], int(m["length"])) if m and m["task"] in task_names() else None
