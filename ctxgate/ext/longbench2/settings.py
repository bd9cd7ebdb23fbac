"""What a run asks of LongBench v2: the extra's section of the plan, which its builder and its
reading find by ``NAME`` and the run's record keeps."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

NAME = "longbench2"
REFERENCE, FILL = "reference", "fill"
TRUNCATIONS = (REFERENCE, FILL)


@dataclass(frozen=True)
class Longbench2Settings:
    """How the prompts are built and answered."""

    cot: bool = False
    """Chain of thought (``--longbench2-cot``): 0shot_cot, then 0shot_cot_ans (pred.py's --cot)."""
    truncation: str = REFERENCE
    """``reference``: a prompt is cut to pred.py's max_len in proportion to the length (120,000 at
    128K); ``fill``: to all the length rule leaves (``--longbench2-truncation``)."""


def settings_of(extras: Mapping[str, object]) -> Longbench2Settings:
    found = extras.get(NAME)
    return found if isinstance(found, Longbench2Settings) else Longbench2Settings()
