"""RULER's eight needle-in-a-haystack tasks (Hsieh et al., 2024, App. B and D)."""

from __future__ import annotations

import functools
import itertools
import random
import re
from dataclasses import dataclass

from ctxgate.data import words
from ctxgate.data.haystacks import NOISE_LINE, essay_tokens, load_essay
from ctxgate.metrics.registry import STRING_MATCH_ALL
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec, distinct, fresh_lines
from ctxgate.tasks.registration import register_all
from ctxgate.tokens.codec import PieceEncoder

TEMPLATE_HEAD = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to "
    "memorize it. I will quiz you about the {type_needle_v} afterwards.\n"
)
TEMPLATE_TAIL = (
    "\nWhat are all the special magic {type_needle_v} for {query} mentioned in the provided text?"
)
ANSWER_PREFIX = " The special magic {type_needle_v} for {query} mentioned in the provided text are"
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
# A UUID's runs of hex letters or digits, where byte-level BPE splits it (each recurs, cached)
UUID_RUNS = re.compile(r" ?-?(?:[a-f]+|[0-9]+)")
# RULER's 40 evenly spaced insertion depths, rounded to whole percent.
DEPTHS = tuple(round(i * 100 / 39) for i in range(40))


Known = dict[str, tuple[int, ...]]  # each needle's ids, behind its separator
Placed = list[tuple[str, int]]  # each needle placed, and its offset in the context


@dataclass(frozen=True)
class NiahConfig:
    haystack: str  # noise | essay | needle
    type_key: str  # words | uuids
    type_value: str  # numbers | uuids
    num_keys: int = 1
    num_values: int = 1
    num_queries: int = 1


@dataclass(frozen=True)
class Needles:
    """A sample's needles in the order drawn, their ids behind the separator, and their keys."""

    texts: list[str]
    ids: Known
    keys: list[str]


def singular(text: str) -> str:
    """RULER's rewrite for one value, of the task template only (the reference's rewrite of the
    chat template mangles a system prompt containing "are")."""
    for old, new in (("Some", "A"), ("are all", "is"), ("are", "is"), ("answers", "answer")):
        text = text.replace(old, new)
    return text


def make_key(rng: random.Random, kind: str) -> str:
    if kind == "words":
        return f"{rng.choice(words.adjectives())}-{rng.choice(words.nouns())}"
    return make_value(rng, "uuids")


def make_value(rng: random.Random, kind: str) -> str:
    if kind == "numbers":  # randint(10**6, 10**7 - 1), the same draw without a call
        return str(rng.randrange(10**6, 10**7))
    return uuid4_text(rng.getrandbits(128))


_UUID_KEEP = ~((0xC000 << 48) | (0xF000 << 64))
_UUID_SET = (0x8000 << 48) | (4 << 76)


def uuid4_text(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))`` without the object."""
    h = ((bits & _UUID_KEEP) | _UUID_SET).to_bytes(16, "big").hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def build_niah(cfg: NiahConfig, ctx: BuildContext, job: Job) -> Sample:
    enc, rng = ctx.encoder, job.rng
    keys = distinct(lambda: make_key(rng, cfg.type_key), cfg.num_keys)
    values = [[make_value(rng, cfg.type_value) for _ in range(cfg.num_values)] for _ in keys]
    needles = [
        NEEDLE.format(type_needle_v=cfg.type_value, key=k, value=v)
        for k, vs in zip(keys, values)
        for v in vs
    ]
    rng.shuffle(needles)
    queried = sorted(rng.sample(range(cfg.num_keys), cfg.num_queries))
    asked = [keys[i] for i in queried]
    query = asked[0] if len(asked) == 1 else ", ".join(asked[:-1]) + ", and " + asked[-1]
    answers = tuple(v for i in queried for v in values[i])

    head, tail, prefix, type_v = TEMPLATE_HEAD, TEMPLATE_TAIL, ANSWER_PREFIX, cfg.type_value
    if cfg.num_values * cfg.num_queries == 1:
        head, tail, prefix, type_v = singular(head), singular(tail), singular(prefix), type_v[:-1]
    answer_prefix = prefix.format(type_needle_v=type_v, query=query)
    tail = tail.format(type_needle_v=type_v, query=query)
    frame = ctx.frame(head.format(type_needle_v=type_v), tail, answer_prefix)
    budget = frame.budget(job.length, job.gen)

    sep = " " if cfg.haystack == "essay" else "\n"
    known = dict(zip(needles, enc.encode_fresh([sep + n for n in needles])))
    room = budget - sum(len(ids) for ids in known.values())
    if cfg.haystack == "essay":
        context, text, placed, units, depths = _essay_context(ctx, job, needles, known, room)
    else:
        hidden = Needles(needles, known, keys)
        context, text, placed, units = _line_context(enc, cfg, job, hidden, room)
        # RULER puts these needles at random lines: where each landed, in percent of the context
        depths = [round(100 * at / max(1, len(context))) for _, at in placed]
    return job.sample(
        frame.around(context, text),
        answers,
        answer_prefix,
        needle_offsets=[len(frame.pre) + at for _, at in placed],
        needles=[needle for needle, _ in placed],
        depths=depths,
        haystack_units=units,
    )


def _line_context(
    enc: PieceEncoder, cfg: NiahConfig, job: Job, hidden: Needles, room: int
) -> tuple[list[int], str, Placed, int]:
    """A line haystack, the needles at random lines: its ids, text, the needles' places, lines."""
    rng, needles, known = job.rng, hidden.texts, hidden.ids
    # the noise line, or a distractor by its index in ``rows``; and the needles
    lines: list[str | int]
    if cfg.haystack == "noise":
        lines = [NOISE_LINE] * max(0, room // enc.count("\n" + NOISE_LINE))
        rows: list[tuple[str, ...]] = []
        ids: list[int] = []
        ends = [0]
    else:  # distractor needles with fresh keys
        rows, ids, sizes = _distractors(enc, cfg, hidden.keys, room, rng)
        lines = list(range(len(sizes)))
        ends = list(itertools.accumulate(sizes, initial=0))  # r: ids[ends[r]:ends[r + 1]]
    # RULER: needles go in at random lines, inserted from the back so positions stay valid
    at_lines = sorted(rng.sample(range(len(lines) + 1), len(needles)), reverse=True)
    for pos, needle in zip(at_lines, needles):
        lines.insert(pos, needle)
    job.need_room(len(lines) - len(needles), 1)
    noise = enc.encode("\n" + NOISE_LINE) if cfg.haystack == "noise" else ()
    needle_set = set(needles)
    context: list[int] = []
    placed: Placed = []

    def haystack(a: int, b: int) -> None:
        """Lines [a, b), no needle among them, each behind its newline."""
        if a < b:
            first = lines[a]
            if isinstance(first, str):
                context.extend(noise * (b - a))
            else:
                context.extend(ids[ends[first] : ends[first + b - a]])

    first = lines[0]  # bare, without the newline
    if first in needle_set:
        placed.append((str(first), 0))
    text = first if isinstance(first, str) else "".join(rows[first])
    one_off = first in needle_set or isinstance(first, int)
    context.extend(enc.encode_fresh([text])[0] if one_off else enc.encode(text))
    done = 1
    for at, line in enumerate(lines):
        if at and isinstance(line, str) and line in needle_set:
            haystack(done, at)
            placed.append((line, len(context)))
            context.extend(known[line])
            done = at + 1
    haystack(done, len(lines))
    text = "\n".join(line if isinstance(line, str) else "".join(rows[line]) for line in lines)
    return context, text, placed, len(lines) - len(needles)


def _distractors(
    enc: PieceEncoder, cfg: NiahConfig, keys: list[str], room: int, rng: random.Random
) -> tuple[list[tuple[str, ...]], list[int], list[int]]:
    """Distractor needles with fresh keys until ``room`` is used (``fresh_lines``)."""
    used = set(keys)
    lead = f"One of the special magic {cfg.type_value} for"
    words_key, numbers = cfg.type_key == "words", cfg.type_value == "numbers"
    adjectives, nouns = words.adjectives(), words.nouns()
    spaced, dashed = [" " + a for a in adjectives], ["-" + n for n in nouns]  # the key's pieces
    # make_key and make_value's draws by index: ``choice(seq)`` is ``seq[_randbelow(len(seq))]``,
    # ``randrange(a, b)`` is ``a + _randbelow(b - a)``
    below = rng._randbelow  # type: ignore[attr-defined]
    getrandbits = rng.getrandbits

    def distractor() -> tuple[str, ...]:
        # NEEDLE in the pieces tokenizers split at; UUID keys and values one-off
        if words_key:
            a, b = below(len(adjectives)), below(len(nouns))
            while f"{adjectives[a]}-{nouns[b]}" in used:
                a, b = below(len(adjectives)), below(len(nouns))
            used.add(f"{adjectives[a]}-{nouns[b]}")
        else:
            uuid = uuid4_text(getrandbits(128))
            while uuid in used:
                uuid = uuid4_text(getrandbits(128))
            used.add(uuid)
        value = f" {10**6 + below(9 * 10**6)}" if numbers else " " + uuid4_text(getrandbits(128))
        if words_key:
            return (lead, spaced[a], dashed[b], " is:", value, ".")
        return (lead, " " + uuid, " is:", value, ".")

    how = UUID_RUNS if not numbers else True
    fresh = (False, False, False) if words_key else (False, UUID_RUNS)
    shape = f"niah-needle-{cfg.type_key}-{cfg.type_value}"
    return fresh_lines(enc, distractor, room, "\n", (*fresh, False, how, False), shape)


def _essay_context(
    ctx: BuildContext, job: Job, needles: list[str], known: Known, room: int
) -> tuple[list[int], str, Placed, int, list[int]]:
    """The essay's leading sentences that fit, the needles at RULER's depths."""
    enc = ctx.encoder
    essay = load_essay(ctx.essay_path)
    tokens = essay_tokens(enc, essay)
    k = tokens.fit(room)
    if tokens.complete and k == len(tokens.sentences) and room - tokens.ends[k] > tokens.longest:
        what = f"{essay.source} ({tokens.ends[k]:,} tokens of this tokenizer, never repeated)"
        raise job.essay_ran_out(what, job.length - room + tokens.ends[k])
    depths = job.rng.sample(DEPTHS, len(needles))
    space = enc.encode(" ")
    job.need_room(k, 1, "essay sentences beside the needles")
    while True:
        positions = ruler_positions(k, depths)
        gaps = len(space) * empty_runs(positions, k)
        if tokens.ends[k] + gaps <= room:
            break
        k = min(k - 1, tokens.fit(room - gaps))  # the separators of empty runs take room too
        job.need_room(k, 1, "essay sentences beside the needles")
    context: list[int] = []
    placed: Placed = []
    runs: list[str] = []

    def sentences(start: int, stop: int) -> None:
        if start < stop and not context:  # the first sentence, with no separator
            context.extend(enc.encode(tokens.sentences[start]))
            start += 1
        context.extend(tokens.span_list(start, stop))

    # RULER joins [run 0, needle 0, run 1, ..., run m] with single spaces, empty runs included: a
    # needle first has a space before it, one last a space after it, two at one place two spaces
    # between them
    done = 0
    for i, (position, needle) in enumerate(zip(positions, needles)):
        if i and position == done:
            context.extend(space)
        sentences(done, position)
        runs.extend((" ".join(tokens.sentences[done:position]), needle))
        placed.append((needle, len(context)))
        context.extend(known[needle])
        done = position
    if done == k:
        context.extend(space)
    sentences(done, k)
    runs.append(" ".join(tokens.sentences[done:k]))
    return context, " ".join(runs), placed, k, sorted(depths)


def ruler_positions(sentences: int, depths: list[int]) -> list[int]:
    """The sentence before each needle, ``int(n * (depth / 100))`` as RULER rounds it."""
    return sorted(int(sentences * (d / 100)) for d in depths)


def empty_runs(positions: list[int], sentences: int) -> int:
    """Empty runs of sentences after the first (each still costs RULER's join a separator)."""
    last = positions[-1] == sentences if positions else 0
    return sum(1 for a, b in zip(positions, positions[1:]) if a == b) + last


DESCRIPTIONS = {
    "niah_single_1": "passkey retrieval in repeated noise",
    "niah_single_2": "vanilla NIAH in essays",
    "niah_single_3": "UUID value in essays",
    "niah_multikey_1": "one key among three distractor needles",
    "niah_multikey_2": "line retrieval: all distractors",
    "niah_multikey_3": "KV retrieval: UUID keys and values",
    "niah_multivalue": "four values for one key",
    "niah_multiquery": "four keys queried",
}
# these also count toward HELMET's Recall
RECALL = ("niah_multikey_2", "niah_multikey_3", "niah_multivalue")


def _spec(name: str, cfg: NiahConfig) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="ruler",
        chat_template=True,
        category="niah",
        metric=STRING_MATCH_ALL,
        tokens_to_generate=128,
        build=functools.partial(build_niah, cfg),
        # values drawn as the distractors' (7-digit numbers, UUIDs) are never the needle's: measured
        chance=0.0,
        markers=("niah",),
        description=DESCRIPTIONS[name],
        helmet_category="recall" if name in RECALL else None,
    )


register_all(
    __name__,
    [
        _spec("niah_single_1", NiahConfig("noise", "words", "numbers")),
        _spec("niah_single_2", NiahConfig("essay", "words", "numbers")),
        _spec("niah_single_3", NiahConfig("essay", "words", "uuids")),
        _spec("niah_multikey_1", NiahConfig("essay", "words", "numbers", num_keys=4)),
        _spec("niah_multikey_2", NiahConfig("needle", "words", "numbers")),
        _spec("niah_multikey_3", NiahConfig("needle", "uuids", "uuids")),
        _spec("niah_multivalue", NiahConfig("essay", "words", "numbers", num_values=4)),
        _spec(
            "niah_multiquery", NiahConfig("essay", "words", "numbers", num_keys=4, num_queries=4)
        ),
    ],
)
