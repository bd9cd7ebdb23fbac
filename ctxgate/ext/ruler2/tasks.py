"""RULERv2's twelve tasks, as ``prepare.py`` calls its builders (seed, 100 samples, the model's
tokenizer): each case draws the reference's set at its length once, as far as its samples ask,
and takes its sample from it. The prompt alone fills the length and the generation budget comes
on top, as in the reference (``output_in_length=False``); the reference's length is the bare
question's, here the question gets the length less the chat template (or BOS) around it."""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Callable, Iterator
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
from .collector import held_off
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
    """A task's set at a length, each sample drawn when the one before it was taken (the data
    loaded at the call): ``fast``, its draws counted from their parts where the tokenizer allows
    (counting.py), else each whole, as the reference counts them; the same set either way."""

    def __call__(
        self, ctx: BuildContext, limit: int, n: int, fast: bool = True
    ) -> Iterator[Drawn]: ...


def _count(ctx: BuildContext) -> Callable[[str], int]:
    raw = ctx.encoder.raw  # the reference counts the bare question's tokens
    return lambda text: len(raw.encode(text))


def _tally(ctx: BuildContext, fast: bool) -> Tally | None:
    return tally_for(ctx.encoder.raw) if fast else None


def niah_maker(values: int) -> SetMaker:
    def make(ctx: BuildContext, limit: int, n: int, fast: bool = True) -> Iterator[Drawn]:
        return niah_set(values, ctx.seed, _count(ctx), limit, n, _tally(ctx, fast))

    return make


def mmlu_maker(task: MmluTask) -> SetMaker:
    def make(ctx: BuildContext, limit: int, n: int, fast: bool = True) -> Iterator[Drawn]:
        data = load_mmlu(ctx.data_dir)
        return mmlu_set(task, data, ctx.seed, _count(ctx), (limit, n), _tally(ctx, fast))

    return make


def qa_maker(kind: str) -> SetMaker:
    def make(ctx: BuildContext, limit: int, n: int, fast: bool = True) -> Iterator[Drawn]:
        needles, haystack = load_hotpotqa(ctx.data_dir)
        # the reference reads the first n records, and fails past the last
        fit = (limit, min(n, len(needles)))
        return qa_set(kind, (needles, haystack), ctx.seed, _count(ctx), fit, _tally(ctx, fast))

    return make


# the samples a set keeps: the one a case sends, and the one the suite's check drew before it
KEPT = 2


class Drawing:
    """A task's set as far as it was asked for: sample i takes the stream's draws up to its own,
    so a case's first sample at a shorter length (the suite's check of its joined ids) draws one
    sample of that set, not all. It keeps the last ``KEPT`` samples, not every one it drew (a 1M
    text is some 3 MB): one let go and asked for again (a case run twice in one worker) is drawn
    again, from the set's first. A set that cannot be counted from parts goes on from whole texts,
    the same samples."""

    def __init__(self, task: str, ctx: BuildContext, limit: int, n: int, fast: bool) -> None:
        self.task, self.ctx, self.limit, self.n = task, ctx, limit, n
        self.fast = fast
        self._draws = MAKERS[task](ctx, limit, n, fast)  # loads its data in the memo's scope
        self._made = 0
        self._kept: dict[int, Drawn] = {}
        self._failed: TooShort | None = None
        self._lock = threading.Lock()

    def sample(self, index: int) -> Drawn | None:
        """Sample ``index``; None past the set's last (the data's records ran out)."""
        with self._lock:
            if index < self._made and index not in self._kept:
                self._again()
            while self._made <= index:
                if self._failed is not None:
                    raise self._failed
                try:
                    drawn = next(self._draws, None)
                except TooShort as exc:
                    self._failed = exc
                    raise
                except Unsplit as exc:
                    if not self.fast:
                        raise
                    if isinstance(exc, Miscounted):
                        forget(self.ctx.encoder.raw)
                    self._whole()
                    continue
                if drawn is None:
                    return None
                self._kept[self._made] = drawn
                self._kept.pop(self._made - KEPT, None)
                self._made += 1
            return self._kept[index]

    def _again(self) -> None:
        """From the set's first sample again, the same draws: one let go was asked for."""
        self._draws = MAKERS[self.task](self.ctx, self.limit, self.n, self.fast)
        self._made, self._failed = 0, None

    def _whole(self) -> None:
        """On from whole texts: the samples made already are drawn again, and passed over."""
        self.fast = False
        whole = MAKERS[self.task](self.ctx, self.limit, self.n, fast=False)
        self._draws = itertools.islice(whole, self._made, None)

    @property
    def made(self) -> int:
        """The samples drawn so far: all of them once ``sample`` found none."""
        return self._made

    def __iter__(self) -> Iterator[Drawn]:
        for index in itertools.count():
            drawn = self.sample(index)
            if drawn is None:
                return
            yield drawn


# Two: the most cases a worker has in flight (an endpoint's or a Ray cluster's cases_at_once), so
# two cases' samples built in turn never redraw each other's set; no more, since a 1M set holds
# 100 texts of some 4 MB
@memo(2)
def _set(task: str, ctx: BuildContext, limit: int, n: int, fast: bool) -> Drawing:
    return Drawing(task, ctx, limit, n, fast)


def task_set(task: str, ctx: BuildContext, limit: int, n: int) -> Drawing:
    """The task's set, drawn once per length (the memo's): from parts where the tokenizer's
    counts allow, else from whole texts."""
    return _set(task, ctx, limit, n, tally_for(ctx.encoder.raw) is not None)


def build(ctx: BuildContext, job: Job) -> Sample:
    with held_off():
        return _build(ctx, job)


def _build(ctx: BuildContext, job: Job) -> Sample:
    frame = ctx.frame("", "", "")
    limit = frame.budget(job.length, job.gen)
    job.need_room(limit, 1, "tokens for the question")
    n = max(SET_SIZE, -(-(job.index + 1) // SET_SIZE) * SET_SIZE)
    drawing = task_set(job.task, ctx, limit, n)
    try:
        drawn = drawing.sample(job.index)
    except TooShort as exc:
        raise job.too_short(
            f"the reference's fewest units do not fit {limit} tokens ({exc})"
        ) from None
    if drawn is None:
        raise DataUnavailable(
            f"{job.task}: its data hold {drawing.made} test records, sample {job.index} needs "
            "more; place the full sets under --data-dir (ctxgate data verify lists them), or ask "
            "fewer --samples"
        )
    text = drawn.text
    ids = text_ids(ctx.encoder.raw, text, drawn.cuts)
    if len(ids) != drawn.tokens:  # counted from parts, not as the reference counts the text
        forget(ctx.encoder.raw)
        return _build(ctx, job)  # from whole texts, whose counts are the sample's
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
