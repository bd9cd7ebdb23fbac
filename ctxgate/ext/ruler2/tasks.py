"""RULERv2's twelve tasks, as ``prepare.py`` calls its builders (seed, 100 samples, the model's
tokenizer): each case builds the reference's whole set at its length, once, and takes its sample
from it. The prompt alone fills the length and the generation budget comes on top, as in the
reference (``output_in_length=False``); the reference's length is the bare question's, here the
question gets the length less the chat template (or BOS) around it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Protocol

from ctxgate.api import (
    BuildContext,
    DataUnavailable,
    Job,
    Metric,
    Sample,
    TaskSpec,
    memo,
    register_all,
    register_suite,
)

from .chance import chances
from .counting import Miscounted, Tally, Unsplit, forget, tally_for, text_ids
from .files import load_hotpotqa, load_mmlu
from .fitting import Fitted, TooShort
from .metrics import ALL, MULTICHOICE, PART, TWO_STEPS
from .mmlu import MmluTask, mmlu_set
from .niah import niah_set
from .qa import qa_set
from .settings import NAME, TOKENS_TO_GENERATE

SUITE = NAME
SET_SIZE = 100  # prepare.py's --dataset_size
register_suite(SUITE, "RULERv2", by_category=True)  # a summary per level too


Drawn = Fitted  # a set's sample: its text, answers and tokens


class SetMaker(Protocol):
    """A task's set at a length: ``fast``, its draws counted from their parts where the tokenizer
    allows (counting.py), else each whole, as the reference counts them; the same set either way."""

    def __call__(
        self, ctx: BuildContext, limit: int, n: int, fast: bool = True
    ) -> Sequence[Drawn]: ...


def _count(ctx: BuildContext) -> Callable[[str], int]:
    raw = ctx.encoder.raw  # the reference counts the bare question's tokens
    return lambda text: len(raw.encode(text))


def _tally(ctx: BuildContext, fast: bool) -> Tally | None:
    return tally_for(ctx.encoder.raw) if fast else None


def niah_maker(values: int) -> SetMaker:
    def make(ctx: BuildContext, limit: int, n: int, fast: bool = True) -> Sequence[Drawn]:
        return niah_set(values, ctx.seed, _count(ctx), limit, n, _tally(ctx, fast))

    return make


def mmlu_maker(task: MmluTask) -> SetMaker:
    def make(ctx: BuildContext, limit: int, n: int, fast: bool = True) -> Sequence[Drawn]:
        data = load_mmlu(ctx.data_dir)
        return mmlu_set(task, data, ctx.seed, _count(ctx), (limit, n), _tally(ctx, fast))

    return make


def qa_maker(kind: str) -> SetMaker:
    def make(ctx: BuildContext, limit: int, n: int, fast: bool = True) -> Sequence[Drawn]:
        needles, haystack = load_hotpotqa(ctx.data_dir)
        # the reference reads the first n records, and fails past the last
        fit = (limit, min(n, len(needles)))
        return qa_set(kind, (needles, haystack), ctx.seed, _count(ctx), fit, _tally(ctx, fast))

    return make


# Two: the most cases a worker has in flight (an endpoint's or a Ray cluster's cases_at_once), so
# two cases' samples built in turn never rebuild each other's set; no more, since a 1M set holds
# 100 texts of some 4 MB
@memo(2)
def _set(task: str, ctx: BuildContext, limit: int, n: int, fast: bool) -> tuple[Drawn, ...]:
    if fast:
        try:
            return tuple(MAKERS[task](ctx, limit, n))
        except Miscounted:
            forget(ctx.encoder.raw)
        except Unsplit:  # a part that cannot be counted alone: this set is counted whole
            pass
    return tuple(MAKERS[task](ctx, limit, n, fast=False))


def task_set(task: str, ctx: BuildContext, limit: int, n: int) -> tuple[Drawn, ...]:
    """The task's set, built once per length (the memo's): from parts where the tokenizer's
    counts allow, else from whole texts."""
    return _set(task, ctx, limit, n, tally_for(ctx.encoder.raw) is not None)


def build(ctx: BuildContext, job: Job) -> Sample:
    frame = ctx.frame("", "", "")
    limit = frame.budget(job.length, job.gen)
    job.need_room(limit, 1, "tokens for the question")
    n = max(SET_SIZE, -(-(job.index + 1) // SET_SIZE) * SET_SIZE)
    try:
        drawn_set = task_set(job.task, ctx, limit, n)
    except TooShort as exc:
        raise job.too_short(
            f"the reference's fewest units do not fit {limit} tokens ({exc})"
        ) from None
    if job.index >= len(drawn_set):
        raise DataUnavailable(
            f"{job.task}: its data hold {len(drawn_set)} test records, sample {job.index} needs "
            "more; place the full sets under --data-dir (ctxgate data verify lists them), or ask "
            "fewer --samples"
        )
    drawn = drawn_set[job.index]
    text = drawn.text
    ids = text_ids(ctx.encoder.raw, text, drawn.cuts)
    if len(ids) != drawn.tokens:  # counted from parts, not as the reference counts the text
        forget(ctx.encoder.raw)
        return build(ctx, job)  # from whole texts, whose counts are the sample's
    return job.sample(frame.around(ids, text), drawn.answers, "", question_tokens=len(ids))


# prepare_qa.py's --query_type (retrieve) or --algo_type (solve) per task
QA_KINDS = {"qa_basic": "doc", "qa_easy": "question", "qa_medium": "2steps", "qa_hard": "single"}
MAKERS: dict[str, SetMaker] = {
    "mk_niah_basic": niah_maker(1),
    "mk_niah_easy": mmlu_maker(MmluTask(0, 0, "retrieve", "single")),
    "mk_niah_medium": mmlu_maker(MmluTask(5, 0, "solve", "2steps")),
    "mk_niah_hard": mmlu_maker(MmluTask(5, 0, "solve", "single")),
    "mv_niah_basic": niah_maker(4),
    "mv_niah_easy": mmlu_maker(MmluTask(0, 4, "niah", "single")),
    "mv_niah_medium": mmlu_maker(MmluTask(0, 4, "retrieve", "2steps")),
    "mv_niah_hard": mmlu_maker(MmluTask(0, 4, "retrieve", "single")),
    **{task: qa_maker(kind) for task, kind in QA_KINDS.items()},
}
# prepare_task_for_ns's eval args per task
SCORING: dict[str, Metric] = {
    "mk_niah_medium": MULTICHOICE,
    "mk_niah_hard": MULTICHOICE,
    "mv_niah_medium": TWO_STEPS,
    **{f"qa_{level}": PART for level in ("basic", "easy", "medium", "hard")},
}


@functools.cache
def specs() -> tuple[TaskSpec, ...]:
    return tuple(
        TaskSpec(
            name=name,
            suite=SUITE,
            category=name.rsplit("_", 1)[1],
            metric=SCORING.get(name, ALL),
            tokens_to_generate=TOKENS_TO_GENERATE,
            build=build,
            chance=chances().get(name, 0.0),
            output_in_length=False,
            chat_template=True,  # prompt_config generic/default: the question as the user turn
            description=f"RULERv2 {name}",
            default_samples=SET_SIZE,
        )
        for name in MAKERS
    )


register_all(__name__, specs())
