"""What a run asks of the GraphWalks tasks: the extra's section of the plan, which the builders
read and the run's record keeps."""

from __future__ import annotations

from dataclasses import dataclass

from .prompt import ORIGINAL

NAME = "graphwalks"


@dataclass(frozen=True)
class GraphwalksSettings:
    """What the run asks of the GraphWalks tasks."""

    bfs_wording: str = ORIGINAL
    """The BFS operation's words (``--graphwalks-bfs-wording``): as the dataset wrote them, or
    NeMo-Skills' "nodes at exactly depth N" (``exact-depth``)."""
