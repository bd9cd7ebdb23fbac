"""RULER's eight needle-in-a-haystack tasks (Hsieh et al., 2024, App. B and D)."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, replace

from ctxgate import words
from ctxgate.haystacks import NOISE_LINE, load_essay
from ctxgate.tasks.base import BuildContext, Sample, TaskSpec, fill_count, make_frame, need_room
from ctxgate.tasks.registry import register

TEMPLATE_HEAD = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the {type_needle_v} afterwards.\n"
)
TEMPLATE_TAIL = "\nWhat are all the special magic {type_needle_v} for {query} mentioned in the provided text?"
ANSWER_PREFIX = " The special magic {type_needle_v} for {query} mentioned in the provided text are"
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
# RULER's 40 evenly spaced insertion depths, rounded to whole percent.
DEPTHS = tuple(round(i * 100 / 39) for i in range(40))


@dataclass(frozen=True)
class NiahConfig:
    haystack: str  # noise | essay | needle
    type_key: str  # words | uuids
    type_value: str  # numbers | uuids
    num_keys: int = 1
    num_values: int = 1
    num_queries: int = 1


def singular(text: str) -> str:
    """RULER's rewrite for one expected value, applied to the task template (not to the chat template: the
    reference also rewrites the model's template, which mangles any system prompt containing "are")."""
    for old, new in (("Some", "A"), ("are all", "is"), ("are", "is"), ("answers", "answer")):
        text = text.replace(old, new)
    return text


def make_key(rng: random.Random, kind: str) -> str:
    if kind == "words":
        return f"{rng.choice(words.adjectives())}-{rng.choice(words.nouns())}"
    return make_value(rng, "uuids")


def make_value(rng: random.Random, kind: str) -> str:
    if kind == "numbers":
        return str(rng.randint(10**6, 10**7 - 1))
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def join_query(keys: list[str]) -> str:
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + ", and " + keys[-1]


def build_niah(name: str, cfg: NiahConfig, gen: int, ctx: BuildContext, length: int, index: int,
               rng: random.Random) -> Sample:
    enc = ctx.encoder
    keys: list[str] = []
    while len(keys) < cfg.num_keys:
        k = make_key(rng, cfg.type_key)
        if k not in keys:
            keys.append(k)
    values = [[make_value(rng, cfg.type_value) for _ in range(cfg.num_values)] for _ in keys]
    needles = [NEEDLE.format(type_needle_v=cfg.type_value, key=k, value=v) for k, vs in zip(keys, values) for v in vs]
    rng.shuffle(needles)
    queried = sorted(rng.sample(range(cfg.num_keys), cfg.num_queries))
    query = join_query([keys[i] for i in queried])
    answers = tuple(v for i in queried for v in values[i])

    head, tail, prefix = TEMPLATE_HEAD, TEMPLATE_TAIL, ANSWER_PREFIX
    type_v = cfg.type_value
    if cfg.num_values * cfg.num_queries == 1:
        head, tail, prefix, type_v = singular(head), singular(tail), singular(prefix), type_v[:-1]
    answer_prefix = prefix.format(type_needle_v=type_v, query=query)
    frame = make_frame(ctx, [head.format(type_needle_v=type_v)],
                       [tail.format(type_needle_v=type_v, query=query)], answer_prefix)
    budget = frame.budget(length, gen)

    known: dict[str, tuple[int, ...]] = {}  # separator-prefixed ids of distractor lines, encoded while fitting
    if cfg.haystack == "essay":
        lines, sep, depths = _essay_lines(ctx, needles, budget, rng)
    else:
        lines, sep, depths = _line_haystack(ctx, cfg, keys, needles, budget, rng, known), "\n", None
    need_room(name, length, len(lines) - len(needles), 1)
    needle_set = set(needles)
    pieces = [lines[0]] + [sep + line for line in lines[1:]]
    # Repeating haystack units come from the cache; needles and the first line are one-off, encoded fresh.
    one_off = [p for i, (p, line) in enumerate(zip(pieces, lines)) if line in needle_set or (line in known and i == 0)]
    cached = [p for i, (p, line) in enumerate(zip(pieces, lines)) if line not in needle_set and line not in known]
    ids_of = dict(zip(one_off, enc.encode_fresh(one_off)))
    ids_of.update(zip(cached, enc.encode_many(cached)))
    context: list[int] = []
    offsets: list[int] = []
    for i, (piece, line) in enumerate(zip(pieces, lines)):
        if line in needle_set:
            offsets.append(len(frame.pre) + len(context))
        context.extend(known[line] if line in known and i > 0 else ids_of[piece])
    ids = frame.pre + tuple(context) + frame.post
    meta = {"needle_offsets": offsets, "needles": [ln for ln in lines if ln in needle_set], "depths": depths,
            "haystack_units": len(lines) - len(needles)}
    return Sample(name, length, index, ids, answers, answer_prefix, meta)


def _line_haystack(ctx: BuildContext, cfg: NiahConfig, keys: list[str], needles: list[str], budget: int,
                   rng: random.Random, known: dict[str, tuple[int, ...]]) -> list[str]:
    enc = ctx.encoder
    needle_tokens = sum(len(ids) for ids in enc.encode_fresh(["\n" + n for n in needles]))
    room = budget - needle_tokens
    if cfg.haystack == "noise":
        lines = [NOISE_LINE] * max(0, room // enc.count("\n" + NOISE_LINE))
    else:  # a haystack made of distractor needles with fresh keys (never one of the real keys)
        lines = []
        used = set(keys)
        while True:
            batch = []
            while len(batch) < max(16, room // 40) and room > 0:
                k = make_key(rng, cfg.type_key)
                if k not in used:
                    used.add(k)
                    batch.append(NEEDLE.format(type_needle_v=cfg.type_value, key=k,
                                               value=make_value(rng, cfg.type_value)))
            encoded = enc.encode_fresh(["\n" + b for b in batch])
            sizes = [len(ids) for ids in encoded]
            n = fill_count(sizes, room)
            lines.extend(batch[:n])
            known.update(zip(batch[:n], encoded[:n]))
            room -= sum(sizes[:n])
            if n < len(batch) or not batch:
                break
    # RULER: needles go in at random line positions, inserted from the back so positions stay valid.
    for pos, needle in zip(sorted(rng.sample(range(len(lines) + 1), len(needles)), reverse=True), needles):
        lines.insert(pos, needle)
    return lines


def _essay_lines(ctx: BuildContext, needles: list[str], budget: int,
                 rng: random.Random) -> tuple[list[str], str, list[int]]:
    enc = ctx.encoder
    essay = load_essay(ctx.essay_path)
    unit_ids = enc.encode_many([" " + s for s in essay.sentences])
    needle_tokens = sum(len(ids) for ids in enc.encode_fresh([" " + n for n in needles]))
    room = budget - needle_tokens
    sizes: list[int] = []
    total = 0
    while True:  # the essay repeats when the length needs more text than it has
        size = len(unit_ids[len(sizes) % len(unit_ids)])
        if total + size > room:
            break
        total += size
        sizes.append(size)
    sentences = [essay.sentences[i % len(essay.sentences)] for i in range(len(sizes))]
    depths = rng.sample(DEPTHS, len(needles))
    positions = sorted(int(len(sentences) * d / 100) for d in depths)
    for pos, needle in zip(reversed(positions), reversed(needles)):
        sentences.insert(pos, needle)
    return sentences, " ", sorted(depths)


def _recall(spec: TaskSpec) -> TaskSpec:
    """These three also count toward HELMET's Recall category."""
    return replace(spec, markers=(*spec.markers, "recall"))


def _spec(name: str, cfg: NiahConfig, description: str) -> TaskSpec:
    gen = 128

    def build(ctx: BuildContext, length: int, index: int, rng: random.Random) -> Sample:
        return build_niah(name, cfg, gen, ctx, length, index, rng)

    return TaskSpec(name=name, suite="ruler", category="niah", metric="string_match_all", tokens_to_generate=gen,
                    build=build, markers=("ruler", "niah"), description=description)


@register
def niah_single_1() -> TaskSpec:
    return _spec("niah_single_1", NiahConfig("noise", "words", "numbers"), "passkey retrieval in repeated noise")


@register
def niah_single_2() -> TaskSpec:
    return _spec("niah_single_2", NiahConfig("essay", "words", "numbers"), "vanilla NIAH in essays")


@register
def niah_single_3() -> TaskSpec:
    return _spec("niah_single_3", NiahConfig("essay", "words", "uuids"), "UUID value in essays")


@register
def niah_multikey_1() -> TaskSpec:
    return _spec("niah_multikey_1", NiahConfig("essay", "words", "numbers", num_keys=4),
                 "one key among three distractor needles")


@register
def niah_multikey_2() -> TaskSpec:
    spec = _spec("niah_multikey_2", NiahConfig("needle", "words", "numbers"), "line retrieval: all distractors")
    return _recall(spec)


@register
def niah_multikey_3() -> TaskSpec:
    spec = _spec("niah_multikey_3", NiahConfig("needle", "uuids", "uuids"), "KV retrieval: UUID keys and values")
    return _recall(spec)


@register
def niah_multivalue() -> TaskSpec:
    return _recall(_spec("niah_multivalue", NiahConfig("essay", "words", "numbers", num_values=4),
                         "four values for one key"))


@register
def niah_multiquery() -> TaskSpec:
    return _spec("niah_multiquery", NiahConfig("essay", "words", "numbers", num_keys=4, num_queries=4), "four keys queried")

