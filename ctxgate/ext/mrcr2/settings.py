"""What a run asks of the mrcr2 tasks: its options, read into the extra's section of the plan,
which the builder reads and the run's record keeps (a ``--baseline`` run must have asked the
same)."""

from __future__ import annotations

from dataclasses import dataclass

from ctxgate.api import Option, Section, whole

NAME = "mrcr2"
HASH_RULES = ("anywhere", "first")
FEWSHOTS = ("generated", "static")
TRANSCRIPTS = ("text", "json")
# The reference sets no generation budget (Gemini's own applies): ctxgate's, the longest writing
# asked for with its string at 2 characters a token at least
TOKENS_TO_GENERATE = 2048


@dataclass(frozen=True)
class Mrcr2Settings:
    """The scorer's rule for the random string, the generator's two switches and the tasks'
    generation budget."""

    hash_rule: str = HASH_RULES[0]
    """``anywhere``: the reference scorer's ``rfind`` (text before the string passes, eval_hub
    issue 8); ``first``: the output must open with it, as the scorer's docstring says
    (``--mrcr2-hash``)."""
    fewshot: str = FEWSHOTS[0]
    """``generated``: an opening drawn per transcript (the released files'); ``static``: the
    reference's fixed one (``--mrcr2-fewshot``)."""
    transcript: str = TRANSCRIPTS[0]
    """``text``: User:/Assistant: turns (the released files'); ``json``: a JSON list of messages
    (``--mrcr2-transcript``)."""
    tokens_to_generate: int = TOKENS_TO_GENERATE
    """The generation budget, past the length (``--mrcr2-tokens-to-generate``)."""

    @property
    def static_fewshot(self) -> bool:
        return self.fewshot == "static"

    @property
    def json_style(self) -> bool:
        return self.transcript == "json"


HASH = Option(
    "--mrcr2-hash",
    "where the mrcr2 score finds the random string (default %(default)s: anywhere in the output, "
    "as the reference scorer's rfind; first: the output must open with it, eval_hub issue 8)",
    default=HASH_RULES[0],
    choices=HASH_RULES,
)
FEWSHOT = Option(
    "--mrcr2-fewshot",
    "the mrcr2 transcripts' few-shot opening (default %(default)s: drawn per transcript from the "
    "few-shot texts, as the released files; static: the reference's fixed one)",
    default=FEWSHOTS[0],
    choices=FEWSHOTS,
)
TRANSCRIPT = Option(
    "--mrcr2-transcript",
    "the mrcr2 transcripts' form (default %(default)s: User:/Assistant: turns, as the released "
    "files; json: a JSON list of messages)",
    default=TRANSCRIPTS[0],
    choices=TRANSCRIPTS,
)
TOKENS = Option(
    "--mrcr2-tokens-to-generate",
    "the mrcr2 tasks' generation budget, past the length (default %(default)s: ctxgate's, "
    "the reference sets none)",
    default=TOKENS_TO_GENERATE,
    parse=whole(1),
    metavar="N",
)
OPTIONS = (HASH, FEWSHOT, TRANSCRIPT, TOKENS)  # in Mrcr2Settings' order
SECTION = Section(
    NAME, Mrcr2Settings, OPTIONS, "ctxgate MRCR v2: its scorer, generator and generation budget"
)
