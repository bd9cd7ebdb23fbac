"""What every task shares: sample, build context, prompt frame, length budget. RULER's length rule,
for every task: the input ids (BOS, chat template, prompt, answer prefix) plus the generation budget
fit in L tokens."""

from __future__ import annotations

import bisect
import functools
import gc
import hashlib
import itertools
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeVar

from ctxgate.metrics.registry import Metric
from ctxgate.records.vocabulary import Suite
from ctxgate.refusal import Refusal
from ctxgate.tasks.bands import Bands
from ctxgate.tokens.codec import PieceEncoder

T = TypeVar("T")


class TaskTooShort(Refusal, ValueError):
    """The length cannot hold the task's fixed parts; the case is skipped."""

    cause = "too_short"


class MaterialExhausted(Refusal, ValueError):
    """The material ran out short of the length; ``fill``: the share of it the prompt reached."""

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
    """A builder's prompt: its pieces' ids joined and its text. ``bos``: BOS goes before a text that
    does not spell it (HELMET's chat prompts, as ``apply_chat_template`` tokenizes, have none)."""

    ids: Sequence[int]
    text: str
    bos: bool = True
    after_thought: tuple[
        int, ...
    ] = ()  # the answer prefix held out of the prompt, to follow the thought


@dataclass(frozen=True)
class Sample:
    task: str
    length: int
    index: int
    input_ids: tuple[int, ...]
    answers: tuple[str, ...]
    answer_prefix: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    text: str = field(default="", repr=False)  # the rendered prompt, tokenized as input_ids
    bos: bool = True  # BOS added before a text that does not spell it (Prompt.bos)
    after_thought: tuple[
        int, ...
    ] = ()  # Prompt.after_thought: the suite puts it after the model's thought

    def digest(self) -> str:
        fields = (self.task, self.length, self.index, self.answers, self.answer_prefix)
        h = hashlib.sha256(repr(fields).encode("utf-8"))
        h.update(",".join(map(_id_text, self.input_ids)).encode("ascii"))
        return h.hexdigest()


# token id -> str(id), each made once: a 1M-token digest takes a third of the time
_id_text = functools.cache(str)


@dataclass(frozen=True)
class Job:
    """One sample to build; ``gen``: the task's generation budget."""

    task: str
    length: int
    index: int
    gen: int
    rng: random.Random = field(compare=False, repr=False)

    def sample(self, prompt: Prompt, answers: tuple[str, ...], prefix: str, **meta: Any) -> Sample:
        head = (self.task, self.length, self.index, tuple(prompt.ids))
        return Sample(*head, answers, prefix, meta, prompt.text, prompt.bos, prompt.after_thought)

    def too_short(self, why: str) -> TaskTooShort:
        return TaskTooShort(
            f"{self.task} cannot be built at length {self.length}: {why}; choose a longer "
            "--lengths value"
        )

    def need_room(self, have: int, needed: int, what: str = "haystack units") -> None:
        if have < needed:
            raise self.too_short(
                f"its fixed parts leave room for {max(have, 0)} {what} where it needs at least "
                f"{needed}"
            )

    def essay_ran_out(self, what: str, reached: int) -> MaterialExhausted:
        """The essay haystack (``what`` describes it) ran out: it is never repeated."""
        fix = "pass --haystack with a longer text (a .txt, or a dataset with a 'text' column)"
        return ran_out(self.task, self.length, f"the essay haystack {what}", reached, fix)


@dataclass(frozen=True)
class BuildContext:
    """Everything a builder needs besides the job."""

    encoder: PieceEncoder
    chat: bool
    seed: int = 42
    essay_path: str | None = None
    squad_source: str | None = None
    hotpotqa_source: str | None = None
    data_dir: str | None = None  # HELMET's data folder, local copies of hub datasets
    chat_by_task: bool = False  # the task's own policy decides (TaskSpec.chat_template)
    helmet_encoder: PieceEncoder | None = None  # --helmet-tokenizer, HELMET's lengths' count
    helmet_tokenizer: str | None = None  # its folder, for messages and the report
    helmet_compat: bool = False  # HELMET's own prompts where ctxgate's differ
    # a reasoning model's: the answer prefix a chat prompt would end in follows its thought instead
    hold_prefix: bool = False
    # the extras' sections of the plan, by name, where an extra's builder reads its options; fixed
    # for a run, so left out of what memos of a context compare
    extras: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def frame(self, head: str, tail: str, prefix: str, sep: str = "", after: bool = True) -> Frame:
        """The fixed ids. ``sep`` joins user text and answer prefix without a chat template (RULER:
        none; HELMET: a newline); with one, HELMET (``after`` False) ends at the generation
        prompt."""
        if not self.chat:
            return self.text_frame(head, tail + sep + prefix)
        chat_head, chat_tail = self.encoder.chat_parts()
        if after and self.hold_prefix and prefix:
            frame = self.text_frame(chat_head + head, tail + chat_tail)
            return replace(frame, after_thought=self.encoder.encode(prefix))
        return self.text_frame(chat_head + head, tail + chat_tail + (prefix if after else ""))

    def text_frame(self, pre: str, post: str) -> Frame:
        """The opening tokenized as a text's start (with BOS), the end as a piece."""
        return Frame(self.encoder.whole(pre), self.encoder.encode(post) if post else (), pre, post)


@dataclass(frozen=True)
class Frame:
    """Ids and texts around a task's variable part."""

    pre: tuple[int, ...]
    post: tuple[int, ...]
    pre_text: str
    post_text: str
    # BuildContext.hold_prefix's, counted in the length as if it ended the prompt: the same haystack
    after_thought: tuple[int, ...] = ()

    def budget(self, length: int, tokens_to_generate: int) -> int:
        return (
            length - tokens_to_generate - len(self.pre) - len(self.post) - len(self.after_thought)
        )

    def around(self, body: Iterable[int], body_text: str) -> Prompt:
        """``pre + body + post``, copied into a tuple once (tuple additions took 40%)."""
        ids = list(self.pre)
        ids.extend(body)
        ids.extend(self.post)
        return Prompt(
            tuple(ids), self.pre_text + body_text + self.post_text, after_thought=self.after_thought
        )


def interleave(groups: Sequence[Sequence[T]]) -> list[T]:
    """Round-robin over the groups: any prefix is as balanced as can be."""
    longest = max(map(len, groups), default=0)
    return [group[i] for i in range(longest) for group in groups if i < len(group)]


def distinct(draw: Callable[[], T], n: int) -> list[T]:
    """``n`` distinct draws in the order first drawn: a repeat is drawn again."""
    found: dict[T, None] = {}
    while len(found) < n:
        found[draw()] = None
    return list(found)


def shuffle(rng: random.Random, items: list[T]) -> None:
    """``rng.shuffle(items)``'s draws at twice its speed (a subclass keeps its own)."""
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
    return bisect.bisect_right(list(itertools.accumulate(unit_sizes)), budget)


def fresh_lines(
    enc: PieceEncoder,
    make_line: Callable[[], tuple[str, ...]],
    room: int,
    sep: str,
    fresh: Sequence[bool | re.Pattern[str]],
    shape: str,
) -> tuple[list[tuple[str, ...]], list[int], list[int]]:
    """One-off lines until ``room`` is used: the lines (as pieces), their ids behind ``sep``
    and sizes. Batches are drawn by the room left, so the draws never depend on the tokenizer. The
    collector is held off: it walked a 1M-token haystack's 50,000 tuples again and again."""
    kept: list[tuple[str, ...]] = []
    ids: list[int] = []
    sizes: list[int] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
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
    finally:
        if enabled:
            gc.enable()
    return kept, ids, sizes


FRESH_CHUNK = 2048


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
    # A random answer's expected score (percent): derived from the answer space, the same at every
    # length; or measured per band of lengths: by bench/chance.py into data/chance.json (the name
    # of its row), or by the task's own package (``Bands``) (``tasks/chance.py``)
    chance: float | str | Bands
    markers: tuple[str, ...] = ()  # pytest markers besides those derived (`marks`), e.g. "judge"
    scoring_prefix: str | None = None  # HELMET: prepended to the output, which is parsed after it
    description: str = ""
    default_samples: int = 100  # HELMET's count for the task, used when --samples is not given
    chat_template: bool = False  # under --chat-template task (RULER: all; HELMET: per task)
    # distinct samples at (context, length), None: no limit; a repeat would narrow every interval
    pool_size: Callable[[BuildContext, int], int | None] | None = None
    # a HELMET category a RULER task also counts in (HELMET's own tasks count in ``category``)
    helmet_category: str | None = None
    replaces: str | None = None  # the task a released data file's task stands in for where it ran
    bare: bool = False  # length 0 builds the bare form, no limit (BABILong's "0k"); else it skips
    # the length rule: the prompt and the generation budget within the length (RULER's and
    # HELMET's); False: the prompt alone fills the length, the budget past it (RULERv2's)
    output_in_length: bool = True

    @property
    def held_in_length(self) -> int:
        """The generated tokens the length holds room for (the builder's ``Job.gen``)."""
        return self.tokens_to_generate if self.output_in_length else 0

    @property
    def past_length(self) -> int:
        """The positions a case needs past its length: the budget, where the length is the
        prompt's alone."""
        return 0 if self.output_in_length else self.tokens_to_generate

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
    """Refuse a sample that used up its material more than FILL_TOLERANCE short."""
    reached = len(s.input_ids) + spec.held_in_length
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
