"""RULER's eight needle-in-a-haystack tasks (Hsieh et al., 2024, App. B and D)."""

from __future__ import annotations

import functools
import random
import re
from dataclasses import dataclass

from ctxgate.data import words
from ctxgate.data.haystacks import NOISE_LINE, essay_tokens, load_essay
from ctxgate.metrics.registry import STRING_MATCH_ALL
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec, distinct, fill_fresh, make_frame, need_room, ran_out
from ctxgate.tasks.registration import register
from ctxgate.textcodec import PieceEncoder

TEMPLATE_HEAD = (
    "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the {type_needle_v} afterwards.\n"
)
TEMPLATE_TAIL = "\nWhat are all the special magic {type_needle_v} for {query} mentioned in the provided text?"
ANSWER_PREFIX = " The special magic {type_needle_v} for {query} mentioned in the provided text are"
NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
# A UUID's runs of hex letters or digits (a hyphen or a leading space with the run after it), where byte-level BPE
# tokenizers split it: each run recurs across UUIDs, so it is tokenized once (PieceEncoder.encode_joined checks)
UUID_RUNS = re.compile(r" ?-?(?:[a-f]+|[0-9]+)")
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
        return str(rng.randrange(10**6, 10**7))  # randint(10**6, 10**7 - 1), the same draw without a call
    return uuid4_text(rng.getrandbits(128))


_UUID_KEEP = ~((0xC000 << 48) | (0xF000 << 64))
_UUID_SET = (0x8000 << 48) | (4 << 76)


def uuid4_text(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))`` without building the object: the variant and version bits set, the
    hex grouped 8-4-4-4-12 (a 1M-token UUID haystack draws some 50,000 a sample)."""
    h = "%032x" % ((bits & _UUID_KEEP) | _UUID_SET)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def join_query(keys: list[str]) -> str:
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + ", and " + keys[-1]


def build_niah(cfg: NiahConfig, ctx: BuildContext, job: Job) -> Sample:
    enc, rng = ctx.encoder, job.rng
    keys = distinct(lambda: make_key(rng, cfg.type_key), cfg.num_keys)
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
    frame = make_frame(
        ctx, [head.format(type_needle_v=type_v)], [tail.format(type_needle_v=type_v, query=query)], answer_prefix
    )
    budget = frame.budget(job.length, job.gen)

    # Every one-off line (needles, distractors) is tokenized once behind its separator and kept here.
    sep = " " if cfg.haystack == "essay" else "\n"
    known: dict[str, tuple[int, ...]] = dict(zip(needles, enc.encode_fresh([sep + n for n in needles])))
    room = budget - sum(len(ids) for ids in known.values())
    if cfg.haystack == "essay":
        context, placed, units, depths = _essay_context(ctx, job, needles, known, room)
    else:
        lines = _line_haystack(ctx, cfg, keys, needles, room, rng, known)
        context, placed, units = _assemble_lines(enc, job, lines, needles, known, sep)
        # RULER puts these needles at random lines, not at its depths: where each landed, in percent of the context
        depths = [round(100 * at / max(1, len(context))) for _, at in placed]
    ids = frame.pre + tuple(context) + frame.post
    return job.sample(
        ids,
        answers,
        answer_prefix,
        needle_offsets=[len(frame.pre) + at for _, at in placed],
        needles=[needle for needle, _ in placed],
        depths=depths,
        haystack_units=units,
    )


def _line_haystack(
    ctx: BuildContext,
    cfg: NiahConfig,
    keys: list[str],
    needles: list[str],
    room: int,
    rng: random.Random,
    known: dict[str, tuple[int, ...]],
) -> list[str]:
    enc = ctx.encoder
    if cfg.haystack == "noise":
        lines = [NOISE_LINE] * max(0, room // enc.count("\n" + NOISE_LINE))
    else:  # a haystack made of distractor needles with fresh keys (never one of the real keys)
        used = set(keys)
        lead = f"One of the special magic {cfg.type_value} for"
        words_key = cfg.type_key == "words"
        type_key, type_value = cfg.type_key, cfg.type_value

        # make_key inlined (the same draws, in the same order): a 1M-token haystack is 50,000 lines
        choice, getrandbits = rng.choice, rng.getrandbits
        adjectives, nouns = words.adjectives(), words.nouns()

        def distractor() -> tuple[str, ...]:
            # NEEDLE's text in pieces that tokenizers split at: word keys as " adjective" "-noun" (both from the
            # word lists, so cached), UUID keys and every value one-off
            if words_key:
                adjective, noun = choice(adjectives), choice(nouns)
                while f"{adjective}-{noun}" in used:
                    adjective, noun = choice(adjectives), choice(nouns)
                used.add(f"{adjective}-{noun}")
                key: tuple[str, ...] = (" " + adjective, "-" + noun)
            else:
                uuid = uuid4_text(getrandbits(128))
                while uuid in used:
                    uuid = uuid4_text(getrandbits(128))
                used.add(uuid)
                key = (" " + uuid,)
            return (lead, *key, " is:", " " + make_value(rng, type_value), ".")

        value = UUID_RUNS if type_value == "uuids" else True
        fresh = (False, False, False, False, value, False) if words_key else (False, UUID_RUNS, False, value, False)
        lines = fill_fresh(enc, distractor, room, "\n", known, fresh, f"niah-needle-{type_key}-{type_value}")
    # RULER: needles go in at random line positions, inserted from the back so positions stay valid.
    for pos, needle in zip(sorted(rng.sample(range(len(lines) + 1), len(needles)), reverse=True), needles):
        lines.insert(pos, needle)
    return lines


def _assemble_lines(
    enc: PieceEncoder, job: Job, lines: list[str], needles: list[str], known: dict[str, tuple[int, ...]], sep: str
) -> tuple[list[int], list[tuple[str, int]], int]:
    """A line haystack's ids: the first line bare, every other behind the separator; where the needles landed."""
    need_room(job, len(lines) - len(needles), 1)
    needle_set = set(needles)
    repeated = [sep + line for line in lines[1:] if line not in known]  # haystack units: from the cache
    cached = dict(zip(repeated, enc.encode_many(repeated)))
    context: list[int] = list(enc.encode_fresh([lines[0]])[0] if lines[0] in known else enc.encode(lines[0]))
    placed: list[tuple[str, int]] = [(lines[0], 0)] if lines[0] in needle_set else []
    for line in lines[1:]:
        if line in needle_set:
            placed.append((line, len(context)))
        context.extend(known[line] if line in known else cached[sep + line])
    return context, placed, len(lines) - len(needles)


def _essay_context(
    ctx: BuildContext, job: Job, needles: list[str], known: dict[str, tuple[int, ...]], room: int
) -> tuple[list[int], list[tuple[str, int]], int, list[int]]:
    """The essay's leading sentences that fit in ``room`` (RULER never repeats its haystack, and neither does this),
    with the needles at RULER's depths: the ids, where each needle landed, the sentences used and the depths."""
    enc = ctx.encoder
    essay = load_essay(ctx.essay_path)
    tokens = essay_tokens(enc, essay)
    k = tokens.fit(room)
    if tokens.complete and k == len(tokens.sentences) and room - tokens.ends[k] > tokens.longest:
        raise ran_out(
            job.task,
            job.length,
            f"the essay haystack {essay.source} ({tokens.ends[k]:,} tokens of this tokenizer, never repeated)",
            job.length - room + tokens.ends[k],
            "pass --haystack with a longer text (a .txt, or a dataset with a 'text' column)",
        )
    depths = job.rng.sample(DEPTHS, len(needles))
    space = enc.encode(" ")
    need_room(job, k, 1, "essay sentences beside the needles")
    while True:
        positions = ruler_positions(k, depths)
        gaps = len(space) * empty_runs(positions, k)
        if tokens.ends[k] + gaps <= room:
            break
        k = min(k - 1, tokens.fit(room - gaps))  # the separators of empty runs take room too
        need_room(job, k, 1, "essay sentences beside the needles")
    context: list[int] = []
    placed: list[tuple[str, int]] = []

    def sentences(start: int, stop: int) -> None:
        if start < stop and not context:  # the prompt's first sentence, with no separator before it
            context.extend(enc.encode(tokens.sentences[start]))
            start += 1
        context.extend(tokens.span(start, stop))

    # RULER joins [run 0, needle 0, run 1, ..., needle m-1, run m] with single spaces, empty runs of sentences
    # included: a needle first in the context has a space before it, one last a space after it, and two needles
    # before the same sentence two spaces between them.
    done = 0
    for i, (position, needle) in enumerate(zip(positions, needles)):  # a needle goes before the sentence there
        if i and position == done:
            context.extend(space)
        sentences(done, position)
        placed.append((needle, len(context)))
        context.extend(known[needle])
        done = position
    if done == k:
        context.extend(space)
    sentences(done, k)
    return context, placed, k, sorted(depths)


def ruler_positions(sentences: int, depths: list[int]) -> list[int]:
    """The sentence before which each needle goes, as RULER computes it: ``int(n * (depth / 100))``, whose float
    rounding differs from ``n * depth // 100`` (100 sentences at depth 29: sentence 28, not 29)."""
    return sorted(int(sentences * (d / 100)) for d in depths)


def empty_runs(positions: list[int], sentences: int) -> int:
    """How many of the runs of sentences after the first are empty (each still costs RULER's join a separator)."""
    return sum(1 for a, b in zip(positions, positions[1:]) if a == b) + (positions[-1] == sentences if positions else 0)


def _spec(name: str, cfg: NiahConfig, description: str, helmet_category: str | None = None) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="ruler",
        chat_template=True,
        category="niah",
        metric=STRING_MATCH_ALL,
        tokens_to_generate=128,
        build=functools.partial(build_niah, cfg),
        markers=("niah",),
        description=description,
        helmet_category=helmet_category,
    )


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
    return _spec(
        "niah_multikey_1", NiahConfig("essay", "words", "numbers", num_keys=4), "one key among three distractor needles"
    )


# niah_multikey_2, niah_multikey_3 and niah_multivalue also count toward HELMET's Recall category
@register
def niah_multikey_2() -> TaskSpec:
    cfg = NiahConfig("needle", "words", "numbers")
    return _spec("niah_multikey_2", cfg, "line retrieval: all distractors", helmet_category="recall")


@register
def niah_multikey_3() -> TaskSpec:
    cfg = NiahConfig("needle", "uuids", "uuids")
    return _spec("niah_multikey_3", cfg, "KV retrieval: UUID keys and values", helmet_category="recall")


@register
def niah_multivalue() -> TaskSpec:
    cfg = NiahConfig("essay", "words", "numbers", num_values=4)
    return _spec("niah_multivalue", cfg, "four values for one key", helmet_category="recall")


@register
def niah_multiquery() -> TaskSpec:
    return _spec(
        "niah_multiquery", NiahConfig("essay", "words", "numbers", num_keys=4, num_queries=4), "four keys queried"
    )
