"""MRCR-style multi-round co-reference, generated offline (``ctx_mrcr_*``), and OpenAI MRCR's rows
(``mrcr_*needle``, ``mrcr_official.py``). A generated sample is a conversation in MRCR's shape
(``conversations.py``): N identical requests spread through it, the last message asking for
the i-th answer with a random string prepended; distractor turns fill the length."""

from __future__ import annotations

import functools
import weakref
from typing import Any

from ctxgate.ext.families import conversations as conv
from ctxgate.ext.families.metrics import MRCR_RATIO
from ctxgate.ext.families.mrcr_official import build_official, conversation_turns, pool_size
from ctxgate.tasks.base import BuildContext, Builder, Job, Prompt, Sample, TaskSpec, distinct
from ctxgate.tasks.registration import register_all, register_suite
from ctxgate.tokens.codec import PieceEncoder

# the longest answer, at most a token a character
GENERATED_BUDGET = conv.MAX_ANSWER_CHARS + conv.PREFIX_CHARS
OFFICIAL_BUDGET = 2048  # OpenAI MRCR's longest answer, 3.89K characters, at 2 a token at least

Ids = tuple[int, ...]
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

    joined = turns.user_user is None  # the template refuses two user messages in a row
    first = enc.encode(turns.user_user) if turns.user_user else ()
    # joined, the examples open the first request's message, only its ends trimmed
    opening = examples if joined else turns.content(examples)
    asked = turns.content(conv.question(prefix, nth, needle))
    head = enc.whole(turns.start + opening)
    before, after = enc.encode(turns.assistant_user), enc.encode(turns.user_assistant)
    tail = (*before, *enc.encode_fresh([asked])[0], *enc.encode(turns.end))

    # a sample's recurring pieces (requests, answers' openings and closings), each looked up once
    piece = functools.cache(enc.encode)

    def turn(a: conv.Answer) -> tuple[Ids, list[int], conv.Answer]:
        request = piece(a.request.text)
        body = unit_ids(enc, a.body, a.request.form.sep)
        ids = list(piece(a.head))
        for u in a.units:
            ids.extend(body[u])
        if a.tail:
            ids.extend(piece(a.tail))
        return request, ids, a

    needle_turns = [turn(a) for a in answers]
    cost = len(before) + len(after)
    room = job.length - job.gen - len(head) - len(tail) - (len(first) - len(before))
    room -= sum(cost + len(r) + len(a) for r, a, _ in needle_turns)
    if room < 0:
        raise job.too_short(
            f"its worked examples, {n} needle turns and question, with the {job.gen}-token "
            f"generation budget, take {job.length - room:,} tokens, {-room:,} more than the length"
        )
    fill: list[tuple[Ids, list[int], conv.Answer]] = []
    while True:
        request = conv.distractor_request(rng, needle, pool)
        r, a, answer = turn(conv.answer(rng, request, sentences))
        if cost + len(r) + len(a) > room:
            break
        room -= cost + len(r) + len(a)
        fill.append((r, a, answer))

    total = len(fill) + n
    bounds = [k * total // n for k in range(n + 1)]
    at = {bounds[k] + int(spread[k] * (bounds[k + 1] - bounds[k])): k for k in range(n)}
    ids, offsets, rest = list(head), [], iter(fill)
    text = [turns.start, opening]
    for t in range(total):
        r, a, answer = needle_turns[at[t]] if t in at else next(rest)
        ids.extend(first if t == 0 else before)
        ids.extend(r)
        ids.extend(after)
        if t in at:
            offsets.append(len(ids))
        ids.extend(a)
        opener = (turns.user_user or "") if t == 0 else turns.assistant_user
        text.extend((opener, answer.request.text, turns.user_assistant, answer.text))
    ids.extend(tail)
    text.extend((turns.assistant_user, asked, turns.end))
    gold = answers[nth - 1]
    return job.sample(
        Prompt(ids, "".join(text)),
        (prefix + gold.text, prefix),
        "",
        request=needle.text,
        nth=nth,
        random_string=prefix,
        needle_turns=sorted(t + 1 for t in at),
        needle_offsets=offsets,
        turns=total,
        examples="in the first request's message" if joined else "own message",
        answer_chars=len(gold.text),
    )


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
