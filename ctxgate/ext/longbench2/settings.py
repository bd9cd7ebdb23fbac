"""What a run asks of LongBench v2: its options, read into the extra's section of the plan, which
its builder, its reading and its report section find and the run's record keeps (a ``--baseline``
run must have asked the same)."""

from __future__ import annotations

from dataclasses import dataclass

from ctxgate.api import Option, Section

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


COT = Option(
    "--longbench2-cot",
    "LongBench v2 with chain of thought, as pred.py's --cot: the 0shot_cot prompt with 1024 new "
    "tokens, then 0shot_cot_ans with the thought and 128 (two requests per question)",
    action="store_true",
)
TRUNCATION = Option(
    "--longbench2-truncation",
    f"how a LongBench v2 prompt is cut in its middle: {REFERENCE}, to pred.py's max_len in "
    f"proportion to the length (120000 at 128K); {FILL}, to all the length rule leaves "
    "(default %(default)s)",
    default=REFERENCE,
    choices=TRUNCATIONS,
)
SECTION = Section(NAME, Longbench2Settings, (COT, TRUNCATION), "ctxgate LongBench v2")
