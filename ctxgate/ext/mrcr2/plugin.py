"""The mrcr2 extra's answers to ctxgate's hooks: its tasks, metrics and data files, its options
(read into its section of the plan, which the builder reads, recorded in the run's record and
required of a ``--baseline`` run alike; the generation budget given to the three tasks), and its
published numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from importlib.abc import Traversable
from typing import TYPE_CHECKING

from ctxgate.api import Option, OptionGroup, Slot, hookimpl, whole

from .settings import FEWSHOTS, HASH_RULES, NAME, TOKENS_TO_GENERATE, TRANSCRIPTS, Mrcr2Settings

if TYPE_CHECKING:
    from ctxgate.api import DataFile, Get, Metric, Plan

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


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [
        OptionGroup(
            "ctxgate-mrcr2",
            "MRCR v2: its scorer, generator and generation budget",
            OPTIONS,
            evaluates=True,
        )
    ]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, Mrcr2Settings]:
    return NAME, Mrcr2Settings(*(o.read(get(o.dest)) for o in OPTIONS))


@hookimpl
def ctxgate_task_budgets(plan: Plan) -> Mapping[str, int]:
    from .tasks import NEEDLES

    section = plan.extras.get(NAME)
    if not isinstance(section, Mrcr2Settings):
        return {}
    return {f"{NAME}_{n}needle": section.tokens_to_generate for n in NEEDLES}


@hookimpl
def ctxgate_slots() -> list[Slot]:
    return [Slot(NAME, "run", Mrcr2Settings, baseline=", ".join(o.flag for o in OPTIONS))]


@hookimpl
def ctxgate_run_record(plan: Plan) -> dict[str, object]:
    """The settings where they are not the defaults (a run that leaves them says nothing, as one
    without this extra; a baseline without the slot ran at the defaults)."""
    chosen = plan.extras.get(NAME)
    return {NAME: None if chosen == Mrcr2Settings() else chosen}


@hookimpl
def ctxgate_task_modules() -> list[str]:
    return [f"{__package__}.tasks"]


@hookimpl
def ctxgate_metrics() -> list[Metric]:
    from .metric import MRCR2_FIRST, MRCR2_RATIO

    return [MRCR2_RATIO, MRCR2_FIRST]


@hookimpl
def ctxgate_data_files() -> list[DataFile]:
    from .corpus import DATA_FILES

    return list(DATA_FILES)


@hookimpl(optionalhook=True)  # the published extra declares it
def ctxgate_published_files() -> Sequence[Traversable]:
    return [resources.files(__package__) / "published.toml"]
