"""What a run asks of the GraphWalks tasks: its option, read into the extra's section of the plan,
which the builders read and the run's record keeps (a ``--baseline`` run must have asked the
same)."""

from __future__ import annotations

from dataclasses import dataclass

from ctxgate.api import Option, Section

from .prompt import ORIGINAL, WORDINGS

NAME = "graphwalks"


@dataclass(frozen=True)
class GraphwalksSettings:
    """What the run asks of the GraphWalks tasks."""

    bfs_wording: str = ORIGINAL
    """The BFS operation's words (``--graphwalks-bfs-wording``): as the dataset wrote them, or
    NeMo-Skills' "nodes at exactly depth N" (``exact-depth``)."""


WORDING = Option(
    "--graphwalks-bfs-wording",
    "the BFS operation's words in GraphWalks prompts: as the dataset wrote them ('with depth N'), "
    "or NeMo-Skills' rewording, 'and return only the nodes at exactly depth N (not nodes at "
    "intermediate depths)' (default %(default)s)",
    default=ORIGINAL,
    choices=WORDINGS,
)
SECTION = Section(NAME, GraphwalksSettings, (WORDING,), "ctxgate GraphWalks: BFS and parents")
