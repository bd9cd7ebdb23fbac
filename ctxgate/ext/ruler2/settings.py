"""What a run asks of RULERv2: its generation budget (``--ruler2-tokens-to-generate``), the
extra's section of the plan."""

from __future__ import annotations

from dataclasses import dataclass

from ctxgate.api import Option, Section, whole

NAME = "ruler2"
TOKENS_TO_GENERATE = 16384  # the rulerv2-ns README's ++inference.tokens_to_generate

BUDGET = Option(
    "--ruler2-tokens-to-generate",
    "RULERv2's generation budget in tokens, past the prompt's length (default %(default)s, the "
    "reference's); fewer for a small model or a quick run",
    default=TOKENS_TO_GENERATE,
    parse=whole(1),
    metavar="N",
)


@dataclass(frozen=True)
class Ruler2Settings:
    """The run's RULERv2 section of the plan, recorded in its run slot."""

    tokens_to_generate: int = TOKENS_TO_GENERATE
    """The generation budget of each of the twelve tasks (``--ruler2-tokens-to-generate``)."""


SECTION = Section(NAME, Ruler2Settings, (BUDGET,), "ctxgate RULERv2: its generation budget")
