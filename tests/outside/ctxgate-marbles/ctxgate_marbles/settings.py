"""What a run asks of ``count_marbles``: the package's section of the plan, which its builder reads
and the run's record keeps."""

from __future__ import annotations

from dataclasses import dataclass

NAME = "marbles"
COLORS = ("red", "blue", "green", "yellow")


@dataclass(frozen=True)
class MarbleSettings:
    """What the run asks of count_marbles."""

    color: str = COLORS[0]
    """The color counted (``--marble-color``)."""
