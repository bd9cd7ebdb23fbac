"""What every task shares: the sample, the build context, the prompt frame and the length budget.

RULER's length rule, for every task: the input ids (BOS, chat template, instruction, context,
question, answer prefix) plus the generation budget fit in L tokens; haystack units fill the rest,
so a prompt lands within one unit of the limit."""

from __future__ import annotations

import bisect
import contextlib
import gc
import hashlib
import itertools
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar, cast

from ctxgate.metrics.registry import Metric
from ctxgate.records.refusal import Refusal
from ctxgate.records.schema import Suite
from ctxgate.tokens.codec import PieceEncoder

T = TypeVar("T")


class TaskTooShort(Refusal, ValueError):
    """The length cannot hold the task's fixed parts; the case is skipped."""

    cause = "too_short"


class MaterialExhausted(Refusal, ValueError):
    """The task's material ran out before the prompt reached the length, which it is then never
    scored as. ``fill``: the share of the length the prompt (with its generation budget) reached."""

    cause = "data_short"

    def __init__(self, message: str, fill: float) -> None:
        super().__init__(message)
        self.fill = fill


def ran_out(task: str, length: int, what: str, reached: int, fix: str) -> MaterialExhausted:
    return MaterialExhausted(
        f"{task} cannot fill length {length}: {what} ran out at {reached:,} tokens "
        f"({reached / length:.1%} of the length); {fix}",
        reached / length,
    )


class Prompt(NamedTuple):
    """A builder's prompt: its pieces' ids joined and its rendered text (``build_sample`` turns that
    into the tokenizer's own ids). ``bos``: BOS goes before a text that does not spell it (HELMET's
    chat prompts, as ``apply_chat_template`` tokenizes them, have none)."""

    ids: Sequence[int]
    text: str
    bos: bool = True


@dataclass(frozen=True)
class Sample:
    task: str
    length: int
    index: int
    input_ids: tuple[int, ...]
    answers: tuple[str, ...]
    answer_prefix: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    text: str = field(
        default="", repr=False
    )  # the rendered prompt, whose tokenization input_ids are
    bos: bool = True  # BOS added before a text that does not spell it (Prompt.bos)

    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(
            repr((self.task, self.length, self.index, self.answers, self.answer_prefix)).encode(
                "utf-8"
            )
        )
        h.update(",".join(map(_ID_TEXT.__getitem__, self.input_ids)).encode("ascii"))
        return h.hexdigest()


class _IdText(dict[int, str]):
    """Token id -> ``str(id)``, made once: a 1M-token digest looks them up in a third of the
    time."""

    def __missing__(self, key: int) -> str:
        text = self[key] = str(key)
        return text


_ID_TEXT = _IdText()


@dataclass(frozen=True)
class Job:
    """One sample to build; ``gen`` is the task's generation budget
    (``TaskSpec.tokens_to_generate``)."""

    task: str
    length: int
    index: int
    gen: int
    rng: random.Random = field(compare=False, repr=False)

    def sample(
        self, prompt: Prompt, answers: tuple[str, ...], answer_prefix: str, **meta: Any
    ) -> Sample:
        ids = tuple(prompt.ids)
        return Sample(
            self.task,
            self.length,
            self.index,
            ids,
            answers,
            answer_prefix,
            meta,
            prompt.text,
            prompt.bos,
        )


@dataclass(frozen=True)
class BuildContext:
    """Everything a builder needs besides the job: the tokenizer, the prompt format, the data
    sources."""

    encoder: PieceEncoder
    chat: bool
    seed: int = 42
    essay_path: str | None = None
    squad_source: str | None = None
    hotpotqa_source: str | None = None
    data_dir: str | None = (
        None  # HELMET's data folder (released layout) and local copies of hub datasets
    )
    chat_by_task: bool = (
        False  # the task's own chat-template policy decides (TaskSpec.chat_template)
    )
    helmet_encoder: PieceEncoder | None = (
        None  # --helmet-tokenizer: HELMET's length selections count in it
    )
    helmet_tokenizer: str | None = None  # its folder, for messages and the report
    helmet_compat: bool = (
        False  # HELMET's own prompts where ctxgate's differ (tasks/helmet_compat.py)
    )


@dataclass(frozen=True)
class Frame:
    """Ids and texts around a task's variable part: head + instruction, then question + answer
    prefix."""

    pre: tuple[int, ...]
    post: tuple[int, ...]
    pre_text: str
    post_text: str

    def budget(self, length: int, tokens_to_generate: int) -> int:
        return length - tokens_to_generate - len(self.pre) - len(self.post)

    def around(self, body: Iterable[int], body_text: str) -> Prompt:
        """``pre + body + post``, copied into the tuple once (tuple additions took 40% of an essay
        prompt)."""
        ids = list(self.pre)
        ids.extend(body)
        ids.extend(self.post)
        return Prompt(tuple(ids), self.pre_text + body_text + self.post_text)


def make_frame(
    ctx: BuildContext,
    head: Sequence[str],
    tail: Sequence[str],
    answer_prefix: str,
    separator: str = "",
    prefix_after_chat: bool = True,
) -> Frame:
    """The fixed ids. ``separator`` joins user text and answer prefix without a chat template
    (RULER: none; HELMET: a newline). With one, RULER puts the prefix after the generation prompt;
    HELMET ends there (``prefix_after_chat=False``)."""
    enc = ctx.encoder
    if ctx.chat:
        chat_head, chat_tail = enc.chat_parts()
        pre_pieces = [chat_head, *head]
        post_pieces = [*tail, chat_tail, answer_prefix if prefix_after_chat else ""]
    else:
        pre_pieces = list(head)
        post_pieces = [*tail, separator + answer_prefix]
    return text_frame(enc, "".join(pre_pieces), "".join(post_pieces))


def text_frame(enc: PieceEncoder, pre: str, post: str) -> Frame:
    """The opening tokenized as a text's start (with BOS), the end as a piece."""
    return Frame(enc.whole(pre), enc.encode(post) if post else (), pre, post)


_GAP = object()  # fills the rows of exhausted groups; never a real item


def interleave(groups: Sequence[Sequence[T]]) -> list[T]:
    """Round-robin over the groups: any prefix is as balanced as can be."""
    rows = itertools.zip_longest(*groups, fillvalue=_GAP)
    return [cast(T, x) for row in rows for x in row if x is not _GAP]


def distinct(draw: Callable[[], T], n: int) -> list[T]:
    """``n`` distinct draws in the order first drawn: a repeat is drawn again."""
    found: dict[T, None] = {}
    while len(found) < n:
        found[draw()] = None
    return list(found)


def shuffle(rng: random.Random, items: list[T]) -> None:
    """``rng.shuffle(items)`` at twice its speed: the same ``getrandbits`` draws of ``_randbelow``,
    inline. A subclass of ``Random`` may draw otherwise, so it keeps its own ``shuffle``."""
    if type(rng) is not random.Random:
        rng.shuffle(items)
        return
    getrandbits = rng.getrandbits
    top = len(items)  # the bound, i + 1, runs from len(items) down to 2
    while top >= 2:
        k = top.bit_length()
        low = max(1 << (k - 1), 2)  # the bounds of this bit length: low..top
        for bound in range(top, low - 1, -1):
            j = getrandbits(k)
            while j >= bound:
                j = getrandbits(k)
            i = bound - 1
            items[i], items[j] = items[j], items[i]
        top = low - 1


def fill_count(unit_sizes: Sequence[int], budget: int) -> int:
    """How many leading units fit in ``budget`` tokens."""
    return bisect.bisect_right(list(itertools.accumulate(unit_sizes)), budget)


def fill_fresh(
    enc: PieceEncoder,
    make_line: Callable[[], tuple[str, ...]],
    room: int,
    sep: str,
    known: dict[str, tuple[int, ...]],
    fresh: Sequence[bool | re.Pattern[str]],
    shape: str,
) -> list[str]:
    """``fresh_lines`` as texts; each line's ids, behind its separator, are kept in ``known``."""
    rows, ids, sizes = fresh_lines(enc, make_line, room, sep, fresh, shape)
    lines = ["".join(r) for r in rows]
    ends = list(itertools.accumulate(sizes, initial=0))
    known.update((line, tuple(ids[a:b])) for line, a, b in zip(lines, ends, ends[1:]))
    return lines


def fresh_lines(
    enc: PieceEncoder,
    make_line: Callable[[], tuple[str, ...]],
    room: int,
    sep: str,
    fresh: Sequence[bool | re.Pattern[str]],
    shape: str,
) -> tuple[list[tuple[str, ...]], list[int], list[int]]:
    """One-off lines until ``room`` tokens are used: the lines kept (as their pieces; ``fresh``:
    which are one-off, see ``PieceEncoder.encode_joined``), their ids behind ``sep`` one after
    another, and each one's size. Lines are drawn in batches sized by the room left, so the draws do
    not depend on the tokenizer. The cyclic collector is held off meanwhile: it walked the 50,000
    line tuples of a 1M-token haystack again and again, and nothing made here holds a cycle."""
    kept: list[tuple[str, ...]] = []
    ids: list[int] = []
    sizes: list[int] = []
    with collection_paused():
        while room > 0:
            rows = [make_line() for _ in range(max(16, room // 40))]
            for start in range(0, len(rows), FRESH_CHUNK):
                chunk = rows[start : start + FRESH_CHUNK]
                joined = enc.encode_columns(chunk, fresh, shape, sep)
                n = joined.fit(room)
                chunk_ids, chunk_sizes = joined.head(n)
                kept.extend(chunk[:n])
                ids.extend(chunk_ids)
                sizes.extend(chunk_sizes)
                room -= len(chunk_ids)
                if n < len(chunk):
                    return kept, ids, sizes
    return kept, ids, sizes


FRESH_CHUNK = 2048


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def need_room(job: Job, have: int, needed: int, what: str = "haystack units") -> None:
    if have < needed:
        why = (
            f"its fixed parts leave room for {max(have, 0)} {what} where it needs at least {needed}"
        )
        raise too_short(job, why)


def too_short(job: Job, why: str) -> TaskTooShort:
    return TaskTooShort(
        f"{job.task} cannot be built at length {job.length}: {why}; choose a longer --lengths value"
    )


def essay_ran_out(job: Job, what: str, reached: int) -> MaterialExhausted:
    """The essay haystack (``what`` describes it) ran out: it is never repeated."""
    fix = "pass --haystack with a longer text (a .txt, or a dataset with a 'text' column)"
    return ran_out(job.task, job.length, f"the essay haystack {what}", reached, fix)


# builds one sample; called only through ``tasks.build.build_sample``, which checks the length rule
Builder = Callable[[BuildContext, Job], Sample]


@dataclass(frozen=True)
class TaskSpec:
    """One benchmark task: how to build a sample and how to score it."""

    name: str
    suite: Suite
    category: str  # RULER category (niah, vt, aggregation, qa) or HELMET category (recall, ...)
    metric: Metric
    tokens_to_generate: int
    build: Builder
    # The expected score (percent) of a random answer drawn as the task draws its distractors, or
    # the share one of its labels gets right: measured for generated tasks (bench/chance.py),
    # derived for the rest. A floor at or below it gates nothing, so thresholds.toml may not set one
    # (gate/thresholds.py).
    chance: float
    markers: tuple[str, ...] = ()  # pytest markers besides those derived (`marks`), e.g. "judge"
    scoring_prefix: str | None = None  # HELMET: prepended to the output, which is parsed after it
    description: str = ""
    default_samples: int = 100  # HELMET's count for the task, used when --samples is not given
    # under --chat-template task: wrap in the model's chat template. RULER wraps every task for chat
    # models (its config_models.sh); HELMET configures it per task
    chat_template: bool = False
    # distinct samples the data gives at (context, length); None: generated, no limit. A case never
    # runs more: a repeat would inflate n and narrow every interval
    pool_size: Callable[[BuildContext, int], int | None] | None = None
    # Where the score counts: RULER's average takes every RULER task; a HELMET task counts in its
    # own category, a RULER task may count in one too (Recall takes three). ``replaces``: the task a
    # released data file's task stands in for where it ran.
    helmet_category: str | None = (
        None  # None: ``category`` for a HELMET task, none for a RULER task
    )
    replaces: str | None = None
    bare: bool = (
        False  # length 0 builds the task's bare form, no limit (BABILong's "0k"); else it skips
    )

    @property
    def in_ruler_average(self) -> bool:
        return self.suite == "ruler"

    @property
    def helmet_group(self) -> str | None:
        return self.helmet_category or (self.category if self.suite == "helmet" else None)

    @property
    def marks(self) -> tuple[str, ...]:
        """The case's pytest markers: its suite, its HELMET category, and its own."""
        derived = (self.suite, *([self.helmet_group] if self.helmet_group else []), *self.markers)
        return tuple(dict.fromkeys(derived))


# A sample whose builder used up its material is scored as its length only within this share of it.
FILL_TOLERANCE = 0.02
# what a task of each category runs out of, and the flag that gives more
DATA_UNITS = {
    "aggregation": "word of its word list",
    "qa": "document",
    "rag": "passage",
    "rerank": "passage",
    "cite": "document",
    "icl": "demonstration",
    "longqa": "token of the book",
    "summ": "token of the document",
}
DATA_FLAGS = {"aggregation": "no flag: the word list is the suite's", "qa": "--squad / --hotpotqa"}


def check_fill(spec: TaskSpec, s: Sample) -> None:
    """Refuse a sample that used up its material (``pool_exhausted``) over FILL_TOLERANCE short."""
    reached = len(s.input_ids) + spec.tokens_to_generate
    if s.meta.get("pool_exhausted") and reached < s.length * (1 - FILL_TOLERANCE):
        unit = DATA_UNITS.get(spec.category, "unit")
        flag = DATA_FLAGS.get(spec.category, "--data-dir")
        raise ran_out(
            spec.name,
            s.length,
            f"its data (sample {s.index}: every {unit} it has is in the prompt)",
            reached,
            f"give it more data ({flag}), or drop {s.length} from --lengths",
        )
