"""BABILong (Kuratov et al., 2024) qa1-qa5 in BABILong's prompt and answer rule: ``ctx_babi_qa*``
spread a generated bAbI story's facts through the haystack as its ``NoiseInjectionDataset`` does
(length 0: the bare story), ``babilong_qa*`` send its released records whole."""

from __future__ import annotations

import functools
from array import array
from collections.abc import Callable
from typing import Any

from ctxgate.api import (
    BuildContext,
    EssayTokens,
    Frame,
    Job,
    PieceEncoder,
    Prompt,
    Sample,
    TaskSpec,
    essay_tokens,
    helmet_order,
    load_essay,
    memo,
    register_all,
    register_suite,
)
from ctxgate.ext.families.babi import make_story
from ctxgate.ext.families.babilong_files import PROMPTS, Record, input_tokens, load_set, tail
from ctxgate.ext.families.metrics import BABILONG_MATCH, TASK_LABELS, references

GENERATE = 20  # BABILong's max_new_tokens
# A label the question does not name, drawn at random: 1 of 6 rooms, 1 of 5 where it names one
# (qa3, qa4); qa5's 1 of 5 or 6 people and objects, measured (bench/chance.py).
CHANCE: dict[str, float | str] = {"qa1": 100 / 6, "qa2": 100 / 6, "qa3": 20.0, "qa4": 20.0}


def _frame(ctx: BuildContext, split: str, question: str) -> Frame:
    """BABILong's template around the context (with the chat template, one user turn)."""
    return ctx.frame(PROMPTS[split].head(), tail(question), "", after=False)


class _Haystack:
    """The haystack's ``count`` sentences from ``start`` on, wrapping to the essay's start."""

    def __init__(self, tokens: EssayTokens, start: int, count: int) -> None:
        self.tokens, self.start, self.count = tokens, start, count

    @property
    def first(self) -> int:
        """How many come before the wrap."""
        return min(self.count, len(self.tokens.sentences) - self.start)

    def sentence(self, i: int) -> str:
        return self.tokens.sentences[self.start + i if i < self.first else i - self.first]

    def spans(self, a: int, b: int) -> list[array]:
        """The ids of sentences [a, b), each behind its space."""
        t, parts = self.tokens, []
        if a < min(b, self.first):
            parts.append(t.span(self.start + a, self.start + min(b, self.first)))
        if b > max(a, self.first):
            parts.append(t.span(max(a, self.first) - self.first, b - self.first))
        return parts


def _haystack(ctx: BuildContext, job: Job, room: int) -> _Haystack:
    """The sentences that fit in ``room`` from a random one (BABILong's random place)."""
    essay = load_essay(ctx.essay_path)
    tokens = essay_tokens(ctx.encoder, essay)
    start = job.rng.randrange(len(essay.volumes[0].sentences()))
    while len(tokens.ends) <= start:  # those before the start too: their ids are one array
        tokens.fit(tokens.ends[-1])
    stop = tokens.fit(room + tokens.ends[start])
    count = stop - start
    if tokens.complete and stop == len(tokens.sentences):
        left = room - (tokens.ends[stop] - tokens.ends[start])
        count += min(tokens.fit(left), start)
        if count == len(tokens.sentences) and left - tokens.ends[start] > tokens.longest:
            what = f"{essay.source} ({tokens.ends[-1]:,} tokens of this tokenizer, never repeated)"
            raise job.essay_ran_out(what, job.length - left + tokens.ends[start])
    return _Haystack(tokens, start, count)


def _assemble(
    enc: PieceEncoder,
    hay: _Haystack,
    facts: tuple[str, ...],
    spaced: list[tuple[int, ...]],
    positions: list[int],
) -> tuple[list[int], str, list[int]]:
    """The context's ids (all behind a space but the first unit), text, and facts' offsets."""
    context: list[int] = []
    offsets: list[int] = []
    units: list[str] = []

    def sentences(a: int, b: int) -> None:
        units.extend(map(hay.sentence, range(a, b)))
        if a < b and not context:
            context.extend(enc.encode_fresh([hay.sentence(a)])[0])
            a += 1
        for part in hay.spans(a, b):
            context.extend(part)

    done = 0
    for fact, ids, position in zip(facts, spaced, positions):
        sentences(done, position)
        done = position
        offsets.append(len(context))
        context.extend(ids if context else enc.encode(fact))
        units.append(fact)
    sentences(done, hay.count)
    return context, " ".join(units), offsets


def build_generated(split: str, ctx: BuildContext, job: Job) -> Sample:
    enc = ctx.encoder
    story = make_story(split, job.rng)
    frame = _frame(ctx, split, story.question)
    spaced = enc.encode_many([" " + fact for fact in story.facts])
    answers = references(story.answer, story.question, TASK_LABELS[split])
    meta = dict(facts=list(story.facts), question=story.question, supporting=list(story.supporting))
    if job.length == 0:  # BABILong's 0k: the story alone
        bare: list[int] = []
        offsets = []
        for fact, ids in zip(story.facts, spaced):
            offsets.append(len(frame.pre) + len(bare))
            bare.extend(ids if bare else enc.encode(fact))
        prompt = frame.around(bare, " ".join(story.facts))
        return job.sample(prompt, answers, "", **meta, fact_offsets=offsets)
    budget = frame.budget(job.length, job.gen)
    room = budget - sum(map(len, spaced))
    if room < 0:
        raise job.too_short(
            f"its prompt and the story's {len(spaced)} facts take {-room} tokens more than it holds"
        )
    hay = _haystack(ctx, job, room)
    positions = sorted(job.rng.choices(range(hay.count + 1), k=len(spaced)))
    while True:
        job.need_room(hay.count, 1, "haystack sentences beside the story")
        context, text, offsets = _assemble(enc, hay, story.facts, spaced, positions)
        if len(context) <= budget:
            break
        # the first unit has no space and may take a token more: the last sentence makes way
        hay.count -= 1
        positions = [min(p, hay.count) for p in positions]
    return job.sample(
        frame.around(context, text),
        answers,
        "",
        **meta,
        fact_offsets=[len(frame.pre) + o for o in offsets],
        fact_positions=positions,
        depths=[round(100 * o / len(context)) for o in offsets],
        haystack_units=hay.count,
        haystack_start=hay.start,
    )


def _prompt(ctx: BuildContext, split: str, record: Record) -> Prompt:
    """A record whole in BABILong's prompt (its input stripped, as ``get_formatted_input`` does)."""
    frame = _frame(ctx, split, record.question)
    context = record.input.strip()
    return frame.around(ctx.encoder.encode_fresh([context])[0] if context else (), context)


@memo(32)
def _sizes(
    task: str, split: str, data_dir: str | None, enc: PieceEncoder, chat: bool, length: int
) -> tuple[int, ...]:
    """Each record's prompt, in tokens of this tokenizer, for the set read at ``length``."""
    ctx = BuildContext(encoder=enc, chat=chat)
    records = load_set(task, split, data_dir, length).records
    return tuple(len(enc.whole(_prompt(ctx, split, r).text)) for r in records)


def build_official(split: str, ctx: BuildContext, job: Job) -> Sample:
    data = load_set(job.task, split, ctx.data_dir, job.length)
    if job.length:  # 0k, the bare stories, has no cap
        # a set runs only where every record fits whole: a cut can drop a needed fact
        prompts = _sizes(job.task, split, ctx.data_dir, ctx.encoder, ctx.chat, job.length)
        sizes = [n + job.gen for n in prompts]
        fit = sum(n <= job.length for n in sizes)
        if fit < len(sizes):
            worst = max(range(len(sizes)), key=sizes.__getitem__)
            raise job.too_short(
                f"{fit} of the {len(sizes)} records of BABILong's {data.config} set of {split} "
                f"({', '.join(data.paths)}) fit it in this tokenizer, and a set runs only where "
                f"every record does: record {worst} takes {sizes[worst]:,} tokens with its prompt "
                f"and the {job.gen} to generate (BABILong sized the set's inputs to "
                f"{input_tokens(data.config):,} GPT-2 tokens; a record is never cut, as a cut can "
                f"drop a fact the answer needs; ctx_babi_{split} fills any length in any "
                "tokenizer)"
            )
    # a full run takes every record once
    index = helmet_order(len(data.records), ctx.seed)[job.index % len(data.records)]
    record = data.records[index]
    return job.sample(
        _prompt(ctx, split, record),
        references(record.target, record.question, TASK_LABELS[split]),
        "",
        question=record.question,
        record=index,
        data_file=", ".join(data.paths),
        data_sha256=data.sha256,
    )


Build = Callable[[str, BuildContext, Job], Sample]


def _spec(name: str, split: str, build: Build, description: str, **more: Any) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="babilong",
        category="reasoning",
        metric=BABILONG_MATCH,
        tokens_to_generate=GENERATE,
        build=functools.partial(build, split),
        chance=CHANCE.get(split, "ctx_babi_qa5"),
        description=description,
        chat_template=True,
        bare=True,
        **more,
    )


def _generated(split: str, description: str) -> TaskSpec:
    about = f"BABILong-style {split}, generated: {description} in the suite's haystack"
    return _spec(f"ctx_babi_{split}", split, build_generated, about)


def _official(split: str) -> TaskSpec:
    name = f"babilong_{split}"
    return _spec(
        name,
        split,
        build_official,
        f"BABILong's released {split} sets (--data-dir DIR/babilong)",
        pool_size=lambda ctx, length: len(load_set(name, split, ctx.data_dir, length).records),
        replaces=f"ctx_babi_{split}",
    )


SPLITS = {
    "qa1": "one supporting fact",
    "qa2": "two supporting facts",
    "qa3": "three supporting facts",
    "qa4": "two-argument relations",
    "qa5": "three-argument relations",
}
register_suite("babilong", "BABILong-style")
register_all(__name__, [*map(_generated, SPLITS, SPLITS.values()), *map(_official, SPLITS)])
