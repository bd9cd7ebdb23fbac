"""MRCR-style multi-round co-reference, generated offline (``ctx_mrcr_*``), and OpenAI MRCR's rows
(``mrcr_*needle``, ``mrcr_official.py``). A generated sample is a conversation in MRCR's shape
(``conversations.py``): N identical requests spread through it, the last message asking for
the i-th answer with a random string prepended; distractor turns fill the length."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxgate.api import (
    BuildContext,
    Builder,
    ChatTurns,
    Job,
    PieceEncoder,
    Prompt,
    Sample,
    TaskSpec,
    distinct,
    register_all,
    register_suite,
)
from ctxgate.ext.families import conversations as conv
from ctxgate.ext.families.metrics import MRCR_RATIO
from ctxgate.ext.families.mrcr_official import build_official, conversation_turns, pool_size

# the longest answer, at most a token a character
GENERATED_BUDGET = conv.MAX_ANSWER_CHARS + conv.PREFIX_CHARS
OFFICIAL_BUDGET = 2048  # OpenAI MRCR's longest answer, 3.89K characters, at 2 a token at least

Ids = tuple[int, ...]
Turn = tuple[Ids, list[int], conv.Answer]  # a request's ids, its answer's, and the answer
_UNITS = weakref.WeakKeyDictionary[PieceEncoder, dict[tuple[str, str], tuple[Ids, ...]]]()


def unit_ids(enc: PieceEncoder, sentences: conv.Sentences, sep: str) -> tuple[Ids, ...]:
    """Every answer sentence behind ``sep``, tokenized once per encoder and haystack."""
    per_encoder = _UNITS.setdefault(enc, {})
    key = (sentences.key, sep)
    if key not in per_encoder:
        if len(per_encoder) >= 40:  # the ten forms' separators of a few haystacks
            per_encoder.clear()
        per_encoder[key] = tuple(enc.encode_fresh([sep + u for u in sentences.texts]))
    return per_encoder[key]


def build(n: int, ctx: BuildContext, job: Job) -> Sample:
    enc, rng = ctx.encoder, job.rng
    turns = conversation_turns(enc, ctx.chat, job.task)
    sentences = conv.units(ctx.essay_path)
    # every draw that does not depend on the tokenizer comes first
    pool = conv.topic_pool(rng)
    needle = conv.needle_request(rng, pool)
    answers = distinct(lambda: conv.answer(rng, needle, sentences), n)
    nth = rng.randint(1, n)
    prefix = conv.random_prefix(rng)
    examples = conv.preamble(rng, needle, pool, sentences)
    spread = [rng.random() for _ in range(n)]

    ends = _ends(enc, turns, examples, conv.question(prefix, nth, needle))
    turn = _turn_encoder(enc)
    needle_turns = [turn(a) for a in answers]
    cost = len(ends.before) + len(ends.after)
    room = job.length - job.gen - ends.size
    room -= sum(cost + len(r) + len(a) for r, a, _ in needle_turns)
    if room < 0:
        raise job.too_short(
            f"its worked examples, {n} needle turns and question, with the {job.gen}-token "
            f"generation budget, take {job.length - room:,} tokens, {-room:,} more than the length"
        )
    fill: list[Turn] = []
    while True:
        request = conv.distractor_request(rng, needle, pool)
        r, a, answer = turn(conv.answer(rng, request, sentences))
        if cost + len(r) + len(a) > room:
            break
        room -= cost + len(r) + len(a)
        fill.append((r, a, answer))

    prompt, at, offsets = _conversation(ends, needle_turns, fill, spread)
    gold = answers[nth - 1]
    return job.sample(
        prompt,
        (prefix + gold.text, prefix),
        "",
        request=needle.text,
        nth=nth,
        random_string=prefix,
        needle_turns=at,
        needle_offsets=offsets,
        turns=len(fill) + n,
        examples="in the first request's message" if ends.joined else "own message",
        answer_chars=len(gold.text),
    )


@dataclass(frozen=True)
class _Ends:
    """What a conversation holds besides its turns, as text and ids: the worked examples that open
    it, the question that closes it, and what the chat template writes between messages."""

    turns: ChatTurns
    opening: str  # the examples: their own message, or (joined) the first request's opening
    asked: str  # the question's message
    head: Ids  # the template's start, then the opening
    first: Ids  # before the first request: nothing where the examples open its message
    before: Ids  # before every other request, after an answer
    after: Ids  # between a request and its answer
    tail: Ids  # after the last answer: the question's message and the generation prompt

    @property
    def joined(self) -> bool:
        """The template refuses two user messages in a row: the examples open the first request's
        message."""
        return self.turns.user_user is None

    @property
    def size(self) -> int:
        """Its tokens, each turn counted as ``before``, request, ``after`` and answer (the first
        opens with ``first`` instead)."""
        return len(self.head) + len(self.tail) + len(self.first) - len(self.before)


def _ends(enc: PieceEncoder, turns: ChatTurns, examples: str, question: str) -> _Ends:
    # joined, the examples open the first request's message, only its ends trimmed
    opening = examples if turns.user_user is None else turns.content(examples)
    asked = turns.content(question)
    before = enc.encode(turns.assistant_user)
    return _Ends(
        turns=turns,
        opening=opening,
        asked=asked,
        head=enc.whole(turns.start + opening),
        first=enc.encode(turns.user_user) if turns.user_user else (),
        before=before,
        after=enc.encode(turns.user_assistant),
        tail=(*before, *enc.encode_fresh([asked])[0], *enc.encode(turns.end)),
    )


def _turn_encoder(enc: PieceEncoder) -> Callable[[conv.Answer], Turn]:
    """A turn's request and answer ids, a sample's recurring pieces (requests, answers' openings and
    closings) each looked up once."""
    piece = functools.cache(enc.encode)

    def turn(a: conv.Answer) -> Turn:
        request = piece(a.request.text)
        body = unit_ids(enc, a.body, a.request.form.sep)
        ids = list(piece(a.head))
        for u in a.units:
            ids.extend(body[u])
        if a.tail:
            ids.extend(piece(a.tail))
        return request, ids, a

    return turn


def _conversation(
    ends: _Ends, needle_turns: Sequence[Turn], fill: Sequence[Turn], spread: Sequence[float]
) -> tuple[Prompt, list[int], list[int]]:
    """The conversation, the distractor turns in order, needle turn k at ``spread[k]`` of the k-th
    of n equal shares of the turns; with the needle turns' numbers (from 1) and token offsets."""
    turns, n = ends.turns, len(needle_turns)
    total = len(fill) + n
    bounds = [k * total // n for k in range(n + 1)]
    at = {bounds[k] + int(spread[k] * (bounds[k + 1] - bounds[k])): k for k in range(n)}
    ids, offsets, rest = list(ends.head), [], iter(fill)
    text = [turns.start, ends.opening]
    for t in range(total):
        r, a, answer = needle_turns[at[t]] if t in at else next(rest)
        ids.extend(ends.first if t == 0 else ends.before)
        ids.extend(r)
        ids.extend(ends.after)
        if t in at:
            offsets.append(len(ids))
        ids.extend(a)
        opener = (turns.user_user or "") if t == 0 else turns.assistant_user
        text.extend((opener, answer.request.text, turns.user_assistant, answer.text))
    ids.extend(ends.tail)
    text.extend((turns.assistant_user, ends.asked, turns.end))
    return Prompt(ids, "".join(text)), sorted(t + 1 for t in at), offsets


def _spec(name: str, gen: int, build: Builder, description: str, **more: Any) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="mrcr",
        category="coreference",
        metric=MRCR_RATIO,
        tokens_to_generate=gen,
        build=build,
        # the random string and an answer to a distractor request, measured (bench/chance.py);
        # OpenAI's rows take their twins' figures
        chance=more.get("replaces") or name,
        description=description,
        chat_template=True,
        **more,
    )


def _generated(n: int) -> TaskSpec:
    about = (
        f"MRCR-style, generated: the i-th of {n} identical writing requests in a long conversation"
    )
    return _spec(f"ctx_mrcr_{n}", GENERATED_BUDGET, functools.partial(build, n), about)


def _official(n: int) -> TaskSpec:
    return _spec(
        f"mrcr_{n}needle",
        OFFICIAL_BUDGET,
        functools.partial(build_official, n),
        f"OpenAI MRCR's {n}needle rows (--data-dir mrcr/), binned by this model's tokens",
        pool_size=functools.partial(pool_size, n, OFFICIAL_BUDGET),
        replaces=f"ctx_mrcr_{n}",
    )


register_suite("mrcr", "MRCR-style")
register_all(__name__, [*map(_generated, (2, 4, 8)), *map(_official, (2, 4, 8))])
