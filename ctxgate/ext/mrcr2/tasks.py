"""MRCR v2 (google-deepmind/eval_hub ``mrcr_v2``), generated: ``mrcr2_{2,4,8}needle``. At length
L a case's samples are the reference generator's for the one bucket ``(H // 2, H]``, H being L
less only what the reference does not count in its bucket: the chat template's ends (Gemini's
API adds its own) and room for the closing question (it comes after the transcript the bucket
bounds). The generation budget comes on top of L (``output_in_length=False``), as Gemini
generates on top of the reference's prompts. ``random.seed(--seed)``: the first transcript H
tokens long, the second the bucket's middle, then drawn in the bucket, every request's writings
asked of in turn (``generator.py``)."""

from __future__ import annotations

import functools
import random
import threading
from collections.abc import Sequence
from typing import Any

from ctxgate.api import (
    Bands,
    BuildContext,
    Chance,
    Frame,
    Job,
    PieceEncoder,
    Prompt,
    Sample,
    TaskSpec,
    memo,
    register_all,
    register_suite,
)

from . import forms
from .corpus import Corpus, load_corpus
from .generator import TARGET_FEWSHOT_TOKENS, Bucket, Count, Generator, GeneratorFailed, Transcript
from .metric import MRCR2_RATIO, RULE
from .settings import NAME, SECTION, TOKENS_TO_GENERATE

NEEDLES = (2, 4, 8)
SAMPLES_PER_BUCKET = 100  # the reference's samples_per_bucket: a case's pool of samples
# README "NOISE RATES": a guess among the request's writings scores ~1/n, "typically, a couple
# percent more": 51, 27 and 15 at 2, 4 and 8 needles; the band runs from 1/n to two points over
PUBLISHED_NOISE = {2: 51.0, 4: 27.0, 8: 15.0}
HASH_ROOM = 13  # tokens a 12-character random string may take beyond a placeholder's


def counter(enc: PieceEncoder) -> Count:
    """The reference's tokenizer count: each text's ids, as the prompt joins them."""

    def count(texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in enc.encode_fresh(list(texts))] if texts else []

    return count


@memo(8)
def generator_for(
    enc: PieceEncoder, corpus: Corpus, needles: int, static: bool, json_style: bool
) -> Generator:
    return Generator(
        corpus, _counts(enc, corpus, json_style), counter(enc), needles, static, json_style
    )


@memo(4)
def _counts(enc: PieceEncoder, corpus: Corpus, json_style: bool) -> Any:
    from .generator import count_corpus

    return count_corpus(corpus, counter(enc), json_style)


@memo(8)
def question_room(gen: Generator) -> int:
    """The most tokens a closing question may take: the longest request's, asked of the last
    writing, with a placeholder string, and room for any string in its place."""
    texts = [
        forms.final_query(forms.question("a" * 12, k, *e[:3]), gen.json_style)
        for e in {e[:3]: e for e in gen.corpus.relevant}.values()
        for k in range(min(gen.needles, len(forms.INDEX_NAMES)))
    ]
    return max(gen.count(texts)) + HASH_ROOM


@memo(8)
def bucket_for(gen: Generator, seed: int, low: int, high: int) -> Bucket:
    return gen.bucket(seed, low, high, SAMPLES_PER_BUCKET)


def _generator(needles: int, ctx: BuildContext) -> Generator:
    s = SECTION.of(ctx.extras)
    corpus = load_corpus(ctx.data_dir, not s.static_fewshot)
    return generator_for(ctx.encoder, corpus, needles, s.static_fewshot, s.json_style)


def _bounds(gen: Generator, frame: Frame, job: Job) -> tuple[int, int]:
    """The reference's bucket for the case: every prompt of it obeys the length rule. The budget
    is past the length: ``job.gen`` is 0, or what a whole-text tokenization ran over by."""
    high = frame.budget(job.length, job.gen) - question_room(gen)
    smallest = min(
        sum(sorted(gen.counts.relevant_turn[r] for r in g)[: gen.needles])
        for g in gen.counts.groups
    )
    need = TARGET_FEWSHOT_TOKENS + question_room(gen) + smallest
    if high < need:
        raise job.too_short(
            f"its transcript may take {max(high, 0):,} tokens, and the reference's generator "
            f"needs {need:,} for its few-shot allowance, a question and the shortest request's "
            f"{gen.needles} writings (the chat template's ends and the closing question's "
            f"{question_room(gen)} tokens come first)"
        )
    return high // 2, high


def case_bucket(needles: int, ctx: BuildContext, job: Job) -> tuple[Generator, Bucket, Frame]:
    gen = _generator(needles, ctx)
    frame = ctx.frame("", "", "")
    low, high = _bounds(gen, frame, job)
    try:
        return gen, bucket_for(gen, ctx.seed, low, high), frame
    except GeneratorFailed as exc:
        raise job.too_short(
            f"the reference's generator fails for the bucket ({low:,}, {high:,}]: {exc}"
        ) from None


_LAST: dict[tuple[int, int], tuple[list[int], str]] = {}  # the one transcript joined, by its key
_LOCK = threading.Lock()


def joined(
    enc: PieceEncoder, gen: Generator, plan: Transcript, key: tuple[int, int]
) -> tuple[list[int], str]:
    """A transcript's ids and text: only the last asked for is kept, so a case holds one."""
    with _LOCK:
        if key in _LAST:
            return _LAST[key]
    ids_of = _turn_ids(enc, gen.corpus, gen.json_style)
    ids = list(enc.encode_fresh([plan.opening])[0])
    texts = [plan.opening]
    relevant, filler = gen.corpus.relevant, gen.corpus.filler
    for t in plan.turns:
        e = relevant[t] if t >= 0 else filler[~t]
        ids.extend(ids_of[t] if t >= 0 else ids_of[len(relevant) + ~t])
        texts.append(forms.turn(forms.request(*e[:3]), e.text, gen.json_style))
    with _LOCK:
        _LAST.clear()
        _LAST[key] = (ids, "".join(texts))
        return _LAST[key]


@memo(4)
def _turn_ids(enc: PieceEncoder, corpus: Corpus, json_style: bool) -> tuple[tuple[int, ...], ...]:
    """Every writing's turn tokenized once: the relevant ones, then the filler."""
    turns = [
        forms.turn(forms.request(*e[:3]), e.text, json_style)
        for e in (*corpus.relevant, *corpus.filler)
    ]
    return tuple(enc.encode_fresh(turns))


def build(needles: int, ctx: BuildContext, job: Job) -> Sample:
    gen, bucket, frame = case_bucket(needles, ctx, job)
    asked = bucket.asked[job.index % len(bucket.asked)]
    plan = bucket.transcripts[asked.transcript]
    body, text = joined(ctx.encoder, gen, plan, (id(bucket), asked.transcript))
    query = ctx.encoder.encode_fresh([asked.query])[0]
    prompt: Prompt = frame.around([*body, *query], text + asked.query)
    if len(prompt.ids) + job.gen > job.length:  # the fixed opening over the reference's allowance
        raise job.too_short(
            f"the reference's generator made a transcript of {asked.tokens:,} tokens, over the "
            f"{job.length - job.gen - len(frame.pre) - len(frame.post):,} the length leaves"
        )
    answer = gen.corpus.relevant[asked.answer]
    return job.sample(
        prompt,
        (asked.token + answer.text, RULE + SECTION.of(ctx.extras).hash_rule),
        "",
        random_string=asked.token,
        nth=asked.nth + 1,
        request=forms.request(*answer[:3]),
        context_len=asked.tokens,
        answer_span=list(asked.span),
        needle_spans=[list(s) for s in asked.spans],
        needle_turns=list(asked.turns_at),
        transcript=asked.transcript,
        turns=len(plan.turns),
        answer_tokens=gen.counts.relevant_text[asked.answer],
        texts_sha256=gen.corpus.sha256,
    )


def pool_size(needles: int, ctx: BuildContext, length: int) -> int:
    job = Job(f"mrcr2_{needles}needle", length, 0, 0, random.Random(0))  # the budget: past L
    return len(case_bucket(needles, ctx, job)[1].asked)


def chance(needles: int) -> Bands:
    published = PUBLISHED_NOISE[needles]
    return Bands((1,), (Chance(published, 100 / needles, published + 2),))


def _spec(needles: int) -> TaskSpec:
    return TaskSpec(
        name=f"mrcr2_{needles}needle",
        suite=NAME,
        category="coreference",
        metric=MRCR2_RATIO,
        tokens_to_generate=TOKENS_TO_GENERATE,  # --mrcr2-tokens-to-generate: plan.budgets
        output_in_length=False,  # the prompt alone fills L, as the reference's buckets count
        build=functools.partial(build, needles),
        chance=chance(needles),
        description=(
            f"MRCR v2 (eval_hub), generated: the i-th of {needles} writings for one request in a "
            "long transcript, after a random string (--data-dir mrcr_v2/mrcr_text_blocks/)"
        ),
        default_samples=SAMPLES_PER_BUCKET,
        chat_template=True,  # the reference sends the whole prompt as one user message
        pool_size=functools.partial(pool_size, needles),
    )


register_suite(NAME, "MRCR v2")
register_all(__name__, [_spec(n) for n in NEEDLES])
