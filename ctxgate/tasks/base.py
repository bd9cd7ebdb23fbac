"""What every task shares: the sample type, the build context, the prompt frame and the length budget.

The length rule (RULER's, applied to every task): the model's input ids - BOS, chat template, instruction, context,
question and answer prefix - plus the task's generation budget fit in L tokens. Generators fill the remaining room
with haystack units, so a prompt lands within one unit (a line, sentence, document or word) of the limit.
"""

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
    """The length cannot hold the task's fixed parts; the case is skipped with this message."""

    cause = "too_short"


class MaterialExhausted(Refusal, ValueError):
    """The task's material (haystack, word list, documents, passages) ran out before the prompt reached the
    length. A prompt that stops short is never scored as that length: the case fails with what ran out and the fix.
    ``fill``: the share of the length the prompt (with its generation budget) reached."""

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
    """A prompt as a builder assembles it: its pieces' token ids joined, and its rendered text, the pieces' texts
    joined (a chat template's text included, BOS the tokenizer adds not). ``tasks.build.build_sample`` turns it into
    the model tokenizer's own ids for that text. ``bos``: the tokenizer's BOS goes before a text that does not spell
    it (ctxgate's rule; HELMET's chat prompts, as ``apply_chat_template`` tokenizes, have none)."""

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
    text: str = field(default="", repr=False)  # the rendered prompt, whose tokenization input_ids are
    bos: bool = True  # BOS added before a text that does not spell it (Prompt.bos)

    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(repr((self.task, self.length, self.index, self.answers, self.answer_prefix)).encode("utf-8"))
        h.update(",".join(map(_ID_TEXT.__getitem__, self.input_ids)).encode("ascii"))
        return h.hexdigest()


class _IdText(dict[int, str]):
    """Token id -> ``str(id)``, each made once: a 1M-token prompt's digest wrote a million ints as text, some 0.14 s
    a sample, where looking each up takes under a third of that."""

    def __missing__(self, key: int) -> str:
        text = self[key] = str(key)
        return text


_ID_TEXT = _IdText()


@dataclass(frozen=True)
class Job:
    """One sample to build: the task, the length, the sample's index and random stream, and the task's generation
    budget (``TaskSpec.tokens_to_generate``, the one place it is written; builders read it here)."""

    task: str
    length: int
    index: int
    gen: int
    rng: random.Random = field(compare=False, repr=False)

    def sample(self, prompt: Prompt, answers: tuple[str, ...], answer_prefix: str, **meta: Any) -> Sample:
        ids = prompt.ids if isinstance(prompt.ids, tuple) else tuple(prompt.ids)
        return Sample(self.task, self.length, self.index, ids, answers, answer_prefix, meta, prompt.text, prompt.bos)


@dataclass(frozen=True)
class BuildContext:
    """Everything a generator needs besides (length, index, rng): the tokenizer, the prompt format, data sources."""

    encoder: PieceEncoder
    chat: bool
    seed: int = 42
    essay_path: str | None = None
    squad_source: str | None = None
    hotpotqa_source: str | None = None
    data_dir: str | None = None  # HELMET's data folder (released layout) and local copies of hub datasets
    chat_by_task: bool = False  # the task's own chat-template policy decides (TaskSpec.chat_template)
    helmet_encoder: PieceEncoder | None = None  # --helmet-tokenizer: HELMET's length selections count in it
    helmet_tokenizer: str | None = None  # its folder, for messages and the report
    helmet_compat: bool = False  # HELMET's own prompts where ctxgate's differ (tasks/helmet_compat.py)


@dataclass(frozen=True)
class Frame:
    """Token ids around a task's variable part: BOS/chat head + instruction, then question + answer prefix; and
    their texts."""

    pre: tuple[int, ...]
    post: tuple[int, ...]
    pre_text: str
    post_text: str

    def budget(self, length: int, tokens_to_generate: int) -> int:
        return length - tokens_to_generate - len(self.pre) - len(self.post)

    def around(self, body: Iterable[int], body_text: str) -> Prompt:
        """The prompt, ``pre + body + post``, its ids made in one list and copied into the tuple once: a 1M-token
        body made a tuple and then added to on both sides is copied three times, which took some 40% of an essay
        prompt's time."""
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
    """Build the fixed ids. ``separator`` joins the user text and the answer prefix when no chat template is used
    (RULER: nothing, the prefix starts with a space; HELMET: a newline). With the chat template, RULER puts the
    answer prefix after the generation prompt; HELMET ends the prompt at the generation prompt
    (``prefix_after_chat=False``: ``add_generation_prompt=True``, no assistant text)."""
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
    """The frame of these texts: the prompt's opening tokenized as a text's start (BOS, where the text does not
    spell it), the end as a piece."""
    return Frame(enc.whole(pre), enc.encode(post) if post else (), pre, post)


_GAP = object()  # fills the rows of exhausted groups; never a real item


def interleave(groups: Sequence[Sequence[T]]) -> list[T]:
    """Round-robin over the groups, in the order given: any prefix is as balanced over the groups as can be."""
    rows = itertools.zip_longest(*groups, fillvalue=_GAP)
    return [cast(T, x) for row in rows for x in row if x is not _GAP]


def distinct(draw: Callable[[], T], n: int) -> list[T]:
    """``n`` distinct draws in the order first drawn: a repeat is drawn again."""
    found: dict[T, None] = {}
    while len(found) < n:
        found[draw()] = None
    return list(found)


def shuffle(rng: random.Random, items: list[T]) -> None:
    """``rng.shuffle(items)``: the same draws and swaps, without a Python call per item. ``Random.shuffle`` calls
    ``_randbelow(i + 1)`` for i from the end down, which for ``random.Random`` is ``getrandbits(k)`` of the bound's
    bit length, drawn again while at or past the bound; here that loop is inline, k computed once per power of two
    (a 1M-token FWE prompt shuffles 250,000 words, which ``Random.shuffle`` takes twice as long for). A subclass of
    ``Random`` may draw otherwise, so it is left to its own ``shuffle``."""
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
    """One-off lines of random content until ``room`` tokens are used (``fresh_lines``), as texts; each line's ids,
    behind its separator, are kept in ``known`` for assembly."""
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
    """One-off lines of random content until ``room`` tokens are used: the lines kept (each as its pieces), their
    ids one after another (each line tokenized once, behind its separator) and each line's size. A line comes as
    its pieces (``fresh``: which of
    them are one-off, see ``PieceEncoder.encode_joined``). Lines are drawn in batches sized by the room left, so
    the random draws, and with them the lines, do not depend on how they are tokenized; a batch is tokenized a
    chunk at a time, and not past the chunk that fills the room. The ids come as one list
    (``PieceEncoder.encode_columns``), so a 1M-token haystack of 50,000 lines makes no tuple per line."""
    with collection_paused():
        return _fresh_lines(enc, make_line, room, sep, fresh, shape)


def _fresh_lines(
    enc: PieceEncoder,
    make_line: Callable[[], tuple[str, ...]],
    room: int,
    sep: str,
    fresh: Sequence[bool | re.Pattern[str]],
    shape: str,
) -> tuple[list[tuple[str, ...]], list[int], list[int]]:
    kept: list[tuple[str, ...]] = []
    ids: list[int] = []
    sizes: list[int] = []
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
    """Python's cyclic garbage collector held off while a haystack's lines are made: each of its 50,000 lines is
    a tuple, and the collections those allocations set off walked every one of them again and again (a seventh of
    a 1M-token distractor haystack's time). What is made here holds no reference cycle, so nothing waits on the
    collector; it runs again at the next allocations after (the fewer made here that live on, the less it has to
    walk then)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def need_room(job: Job, have: int, needed: int, what: str = "haystack units") -> None:
    if have < needed:
        raise too_short(job, f"its fixed parts leave room for {max(have, 0)} {what} where it needs at least {needed}")


def too_short(job: Job, why: str) -> TaskTooShort:
    return TaskTooShort(f"{job.task} cannot be built at length {job.length}: {why}; choose a longer --lengths value")


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
    # The expected score (percent) of a random answer: one drawn as the task draws its distractors (a distractor
    # needle's value, an answer to another request, one of the words, labels or characters the prompt offers), or
    # the share one of its labels or choices gets right. Each factory says how it was found: measured for the
    # generated tasks (bench/chance.py), derived for the rest. A floor at or below it gates nothing, so
    # thresholds.toml may not set one (gate/thresholds.py); the report shows it beside each case.
    chance: float
    markers: tuple[str, ...] = ()  # pytest markers besides those derived below (`marks`), e.g. "judge"
    scoring_prefix: str | None = None  # HELMET: prepended to the output, which is then parsed after it
    description: str = ""
    default_samples: int = 100  # HELMET's count for the task, used when --samples is not given
    # the paper's policy under --chat-template task: wrap in the model's chat template (when it has one). RULER
    # wraps every task for chat models (its config_models.sh); HELMET configures it per task
    chat_template: bool = False
    # how many distinct samples the task's data gives at a length (a question pool x its depth copies); None, or a
    # None answer: generated, no limit. A case never runs more: a repeat would inflate n and narrow every interval
    pool_size: Callable[[BuildContext, int], int | None] | None = None  # (context, length)
    # Where the task's score counts, the one place membership is written: RULER's average takes every RULER task;
    # a HELMET task counts in its own category, and a RULER task may count in a HELMET category too (HELMET's
    # Recall takes three of RULER's). ``replaces``: HELMET's own data file for a RULER task, which stands in for
    # that task in its HELMET category when it ran.
    helmet_category: str | None = None  # None: ``category`` for a HELMET task, no category for a RULER task
    replaces: str | None = None
    # length 0 builds the task's bare form, with no length limit (BABILong's "0k": the facts without background
    # text); a task without one skips length 0
    bare: bool = False

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


# A sample whose builder used up its material (every passage, document, word or sentence it has) is scored as its
# length only within this share of it; one that did not run out is within one unit by construction.
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
    """Refuse a sample whose builder used up its material (``pool_exhausted``) more than FILL_TOLERANCE short of its
    length: it is never scored as that length."""
    reached = len(s.input_ids) + spec.tokens_to_generate
    if s.meta.get("pool_exhausted") and reached < s.length * (1 - FILL_TOLERANCE):
        raise ran_out(
            spec.name,
            s.length,
            f"its data (sample {s.index}: every {DATA_UNITS.get(spec.category, 'unit')} it has is in the prompt)",
            reached,
            f"give it more data ({DATA_FLAGS.get(spec.category, '--data-dir')}), or drop {s.length} from --lengths",
        )
