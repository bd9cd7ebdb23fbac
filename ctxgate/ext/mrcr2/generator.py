"""eval_hub's MRCR v2 generator (``mrcr_utils.generate_mrcr_v2`` for one bucket) replayed draw for
draw on a ``random.Random`` seeded as the reference seeds its module-level ``random``. The writings
are referred to, never copied: a bucket's plan holds each transcript's order of writings (an int
a turn) and the questions asked of it, so the text of one transcript is joined at a time, and the
memory a bucket takes is its longest prompt's (``texts.py``)."""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import forms
from .corpus import Corpus, Nested

TARGET_FEWSHOT_TOKENS = 800  # the reference's estimate of the few-shot opening, and its target
FEWSHOT_WINDOW = 50  # a generated opening is within this many tokens under the target
MAX_ITERATIONS = 1000  # transcripts a bucket, and openings a transcript, may draw
HASH_CHARS = string.ascii_lowercase + string.ascii_uppercase + string.digits

Count = Callable[[Sequence[str]], list[int]]  # each text's tokens, as the reference's tokenizer


class GeneratorFailed(ValueError):
    """Where the reference's generator raises, or fails on an index: the message says why."""


@dataclass(frozen=True)
class Counts:
    """The corpus's pieces counted once: each writing's turn and text, and the requests' groups."""

    relevant_turn: tuple[int, ...]
    relevant_text: tuple[int, ...]
    filler_turn: tuple[int, ...]
    groups: tuple[tuple[int, ...], ...]  # each request's writings, in file order
    group_of: tuple[int, ...]  # each relevant writing's group


def count_corpus(corpus: Corpus, count: Count, json_style: bool) -> Counts:
    keys: dict[tuple[str, str, str], list[int]] = {}
    for i, e in enumerate(corpus.relevant):
        keys.setdefault((e.fmt, e.topic, e.style), []).append(i)
    index = {key: g for g, key in enumerate(keys)}
    turns = [forms.turn(forms.request(*e[:3]), e.text, json_style) for e in corpus.relevant]
    fill = [forms.turn(forms.request(*e[:3]), e.text, json_style) for e in corpus.filler]
    return Counts(
        tuple(count(turns)),
        tuple(count([e.text for e in corpus.relevant])),
        tuple(count(fill)),
        tuple(tuple(members) for members in keys.values()),
        tuple(index[e[:3]] for e in corpus.relevant),
    )


@dataclass(frozen=True)
class Transcript:
    """One transcript: its opening, its turns (a relevant writing's index, or ``~j`` for filler
    ``j``) and its token count, the opening's included."""

    opening: str
    turns: tuple[int, ...]
    tokens: int


@dataclass(frozen=True)
class Asked:
    """One sample: a question about the ``nth`` writing of a request in transcript ``transcript``;
    ``span``: the answer's tokens in the transcript; ``spans``: every writing of the request's."""

    transcript: int
    token: str
    nth: int
    answer: int
    query: str  # the closing question, as the prompt ends
    tokens: int  # the prompt's: the transcript's and the question's
    span: tuple[int, int]
    spans: tuple[tuple[int, int], ...]
    turns_at: tuple[int, ...]  # the request's writings' places among the turns
    writings: tuple[int, ...]  # the request's writings, in the transcript's order


@dataclass(frozen=True)
class Bucket:
    """A bucket's transcripts and the samples asked of them, in the reference's order."""

    transcripts: tuple[Transcript, ...]
    asked: tuple[Asked, ...]


@dataclass(frozen=True, eq=False)  # memo keys: compared as the same object
class Generator:
    """The generator over one corpus and tokenizer, with the reference's two switches."""

    corpus: Corpus
    counts: Counts
    count: Count
    needles: int
    static_fewshot: bool = False
    json_style: bool = False

    def bucket(self, seed: int, low: int, high: int, samples: int) -> Bucket:
        """``generate_mrcr_v2`` with ``random.seed(seed)`` and the one bucket ``(low, high)``."""
        rng = random.Random(seed)
        transcripts: list[Transcript] = []
        asked: list[Asked] = []
        targets = [high, (low + high) // 2]
        while len(asked) < samples:
            if len(transcripts) >= MAX_ITERATIONS:
                raise GeneratorFailed(
                    f"{MAX_ITERATIONS} transcripts of up to {high:,} tokens made {len(asked)} of "
                    f"{samples} samples: no request's {self.needles} writings fit"
                )
            n = len(transcripts)
            target = targets[n] if n < 2 else rng.randint(low + 1, high)
            groups, plan = self._transcript(rng, target)
            transcripts.append(plan)
            asked.extend(self._questions(rng, n, plan, groups, samples))
        return Bucket(tuple(transcripts), tuple(asked))

    def _hashes(self, rng: random.Random) -> list[str]:
        """A random string per request: every writing draws one, the first of its request's kept."""
        drawn = ["".join(rng.choice(HASH_CHARS) for _ in range(12)) for _ in self.corpus.relevant]
        first = {g: i for i, g in reversed(list(enumerate(self.counts.group_of)))}
        return [drawn[first[g]] for g in range(len(self.counts.groups))]

    def _groups(self, rng: random.Random, target: int) -> tuple[list[str], list[tuple[int, ...]]]:
        """``create_randomized_query_groups``: the requests taken, each with its writings in the
        order drawn, in the order taken (a request's index: ``taken[k][0]``'s group)."""
        hashes = self._hashes(rng)
        longest = max(self._longest_question(hashes))
        order = list(range(len(self.counts.groups)))
        rng.shuffle(order)
        total = TARGET_FEWSHOT_TOKENS + longest
        taken: list[tuple[int, ...]] = []
        for g in order:
            writings = list(self.counts.groups[g])
            rng.shuffle(writings)
            chosen = tuple(writings[: self.needles])
            trial = total + sum(self.counts.relevant_turn[r] for r in chosen)
            if trial > target:
                break
            total = trial
            taken.append(chosen)
        return hashes, taken

    def _longest_question(self, hashes: Sequence[str]) -> list[int]:
        texts = []
        for g, members in enumerate(self.counts.groups):
            e = self.corpus.relevant[members[0]]
            texts += [forms.question(hashes[g], k, *e[:3]) for k in range(min(self.needles, 8))]
        found = self.count(texts)
        per = min(self.needles, 8)
        return [max(found[k : k + per]) for k in range(0, len(found), per)]

    def _opening(self, rng: random.Random) -> tuple[str, int]:
        if self.static_fewshot:
            text = forms.static_fewshot(self.json_style)
            return text, self.count([text])[0]
        if self.corpus.fewshot is None:
            raise GeneratorFailed("the generated few-shot opening needs the few-shot texts")
        text, tokens = generated_fewshot(rng, self.corpus.fewshot, self.count, self.json_style)
        if self.json_style:
            text = forms.wrap_fewshot(text)
            tokens = self.count([text])[0]
        return text, tokens

    def _transcript(
        self, rng: random.Random, target: int
    ) -> tuple[list[tuple[str, tuple[int, ...]]], Transcript]:
        """``create_base_transcript_with_metadata``: the taken writings placed in turn, a request
        drawn at each, then filler writings put in at random places until the target."""
        hashes, taken = self._groups(rng, target)
        opening, tokens = self._opening(rng)
        keys = list(range(len(taken)))
        rng.shuffle(keys)
        left = [list(taken[k]) for k in keys]
        turns: list[int] = []
        while left:
            k = rng.randrange(0, len(left))
            if not left[k]:
                left.pop(k)
                continue
            r = left[k].pop(0)
            turns.append(r)
            tokens += self.counts.relevant_turn[r]
            if tokens >= target:
                break
        tokens = self._fill(rng, turns, tokens, target)
        group_of = self.counts.group_of
        groups = [(hashes[group_of[chosen[0]]], chosen) for chosen in taken]
        return groups, Transcript(opening, tuple(turns), tokens)

    def _fill(self, rng: random.Random, turns: list[int], tokens: int, target: int) -> int:
        sizes, order, at = self.counts.filler_turn, list[int](), 0
        while tokens < target and turns:
            if not order:  # the reference's generator shuffles on its first draw
                order = list(range(len(sizes)))
                rng.shuffle(order)
            j = order[at % len(order)]
            at += 1
            if tokens + sizes[j] > target:
                break
            tokens += sizes[j]
            turns.insert(rng.randrange(0, len(turns)), ~j)
        return tokens

    def _questions(
        self,
        rng: random.Random,
        n: int,
        plan: Transcript,
        groups: Sequence[tuple[str, tuple[int, ...]]],
        limit: int,
    ) -> list[Asked]:
        """``generate_queries_and_answers``: each request's writings asked of in a drawn order,
        up to ``limit`` (which, as the reference's, stops only the request it is reached in)."""
        spans, places = self._spans(plan)
        asked: list[Asked] = []
        for token, chosen in groups:
            pairs = list(enumerate(chosen))
            rng.shuffle(pairs)
            for nth, r in pairs:
                found = [spans[w] for w in chosen if w in spans]
                if len(found) <= nth:
                    raise GeneratorFailed(
                        f"the transcript ended before the {forms.INDEX_NAMES[nth]} writing of a "
                        f"request (its opening of {plan.turns and plan.tokens} tokens is over the "
                        f"{TARGET_FEWSHOT_TOKENS} the reference allows for it)"
                    )
                e = self.corpus.relevant[r]
                query = forms.final_query(forms.question(token, nth, *e[:3]), self.json_style)
                size = self.count([query])[0]
                at = tuple(places[w] for w in chosen if w in places)
                asked.append(
                    Asked(
                        n,
                        token,
                        nth,
                        r,
                        query,
                        plan.tokens + size,
                        found[nth],
                        tuple(found),
                        at,
                        chosen,
                    )
                )
                if len(asked) >= limit:
                    break
        return asked

    def _spans(self, plan: Transcript) -> tuple[dict[int, tuple[int, int]], dict[int, int]]:
        """Each relevant writing's tokens (from its turn's start, as the reference counts) and
        its place among the turns."""
        tokens = plan.tokens - sum(self._turn_tokens(t) for t in plan.turns)
        spans, places = {}, {}
        for place, t in enumerate(plan.turns):
            if t >= 0:
                spans[t] = (tokens, tokens + self.counts.relevant_text[t])
                places[t] = place
            tokens += self._turn_tokens(t)
        return spans, places

    def _turn_tokens(self, t: int) -> int:
        return self.counts.relevant_turn[t] if t >= 0 else self.counts.filler_turn[~t]


def generated_fewshot(
    rng: random.Random, nested: Nested, count: Count, json_style: bool
) -> tuple[str, int]:
    """``generate_fewshot_prompt``: two examples drawn until their opening's tokens are within
    ``FEWSHOT_WINDOW`` under ``TARGET_FEWSHOT_TOKENS``."""
    tokens, text = 0, ""
    for _ in range(MAX_ITERATIONS):
        if TARGET_FEWSHOT_TOKENS - FEWSHOT_WINDOW <= tokens <= TARGET_FEWSHOT_TOKENS:
            return text, tokens
        text = forms.fewshot(_first_example(rng, nested), _second_example(rng, nested), json_style)
        tokens = count([text])[0]
    if TARGET_FEWSHOT_TOKENS - FEWSHOT_WINDOW <= tokens <= TARGET_FEWSHOT_TOKENS:
        return text, tokens
    raise GeneratorFailed(
        f"{MAX_ITERATIONS} few-shot openings drawn from the few-shot texts, none of "
        f"{TARGET_FEWSHOT_TOKENS - FEWSHOT_WINDOW}-{TARGET_FEWSHOT_TOKENS} tokens (the last: "
        f"{tokens}); give few-shot texts that can make one"
    )


def _key(rng: random.Random, level: object) -> str:
    return str(rng.choice(list(level)))  # type: ignore[call-overload]


def _first_example(rng: random.Random, nested: Nested) -> str:
    """Two requests, then the first writing of the first asked for."""
    fmt1, fmt2 = _key(rng, nested), _key(rng, nested)
    topic1, topic2 = _key(rng, nested[fmt1]), _key(rng, nested[fmt2])
    style1, style2 = _key(rng, nested[fmt1][topic1]), _key(rng, nested[fmt2][topic2])
    seeds1, seeds2 = nested[fmt1][topic1][style1], nested[fmt2][topic2][style2]
    seed1, seed2 = _key(rng, seeds1), _key(rng, seeds2)
    while seed2 == seed1:  # the reference's rule, though the requests may differ
        seed2 = _key(rng, seeds2)
    text1, text2 = str(seeds1[seed1]), str(seeds2[seed2])
    token = "".join(rng.choice(HASH_CHARS) for _ in range(12))
    return (
        forms.example_turn(forms.request(fmt1, topic1, style1), text1)
        + forms.example_turn(forms.request(fmt2, topic2, style2), text2)
        + forms.example_question(token, "first", fmt1, topic1, style1)
        + token
        + text1
    )


def _second_example(rng: random.Random, nested: Nested) -> str:
    """One request twice, then its second writing asked for."""
    fmt = _key(rng, nested)
    topic = _key(rng, nested[fmt])
    style = _key(rng, nested[fmt][topic])
    seeds = nested[fmt][topic][style]
    seed1, seed2 = _key(rng, seeds), _key(rng, seeds)
    while seed2 == seed1:
        seed2 = _key(rng, seeds)
    asked = forms.request(fmt, topic, style)
    token = "".join(rng.choice(HASH_CHARS) for _ in range(12))
    return (
        forms.example_turn(asked, str(seeds[seed1]))
        + forms.example_turn(asked, str(seeds[seed2]))
        + forms.example_question(token, "second", fmt, topic, style)
        + token
        + str(seeds[seed2])
    )
