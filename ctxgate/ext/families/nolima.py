"""NoLiMa-style latent-association needles (Modarressi et al., 2025): needle and question share no
content word. ``ctx_nolima``: the project's set; ``ctx_nolima_direct``: asked literally;
``nolima``: NoLiMa's own (``--data-dir``), built as its ``evaluation/`` HEAD builds a test. The
essay, less sentences naming the keywords, holds fillers on other characters
(``nolima_haystack.py``), so "which character?" needs a hop."""

from __future__ import annotations

import functools
import random
import weakref
from array import array
from collections.abc import Callable, Sequence

import numpy as np

from ctxgate.api import (
    BuildContext,
    DataNotGiven,
    DataUnavailable,
    EssayTokens,
    Frame,
    Job,
    PieceEncoder,
    Sample,
    TaskSpec,
    essay_tokens,
    load_essay,
    register,
    register_suite,
    seeded_order,
)
from ctxgate.ext.families.lexical_overlap import LiteralOverlap, check_pair
from ctxgate.ext.families.metrics import NOLIMA_ONE_NAME, nolima_references
from ctxgate.ext.families.nolima_files import (
    CHARACTER,
    NeedleCase,
    NeedleSet,
    load_official,
    load_project,
)
from ctxgate.ext.families.nolima_haystack import (
    Filler,
    draw_fillers,
    fit_sentences,
    keyword_pattern,
)

DEPTHS = tuple(4 * i for i in range(26))  # np.linspace(0, 100, 26), in percent: 0, 4, ..., 100
# NoLiMa's SYSTEM_PROMPT, first for every provider but Claude on AWS (vllm, a local model's)
SYSTEM_PROMPT = "You are a helpful assistant"
TOKENS_TO_GENERATE = 192  # max_tokens of every model config
PROJECT_PAIRS = 36  # the shipped set's one-hop pairs (tests/test_family_nolima.py checks the file)
_USER = "\u27e6CTXGATE-NOLIMA-USER\u27e7"

Cases = Callable[[BuildContext], tuple[NeedleCase, ...]]


def case_and_depth(count: int, index: int, task: str, seed: int) -> tuple[int, int]:
    """Sample ``index``'s case (seeded order) and depth: every case, then every depth."""
    turn, at = divmod(index, count)
    return seeded_order(count, "nolima-order", task, seed)[at], DEPTHS[(at + turn) % len(DEPTHS)]


_SYSTEM_PARTS = weakref.WeakKeyDictionary[PieceEncoder, tuple[str, str]]()


def system_chat_parts(enc: PieceEncoder) -> tuple[str, str]:
    """The chat template around a user message after NoLiMa's system message."""
    if enc in _SYSTEM_PARTS:
        return _SYSTEM_PARTS[enc]
    head, tail = parts = enc.chat_parts()
    # The encoder renders user turns only, so a transformers tokenizer's template is asked directly
    render = getattr(enc.raw, "render", None)
    if render is not None:
        import jinja2  # there wherever a template is: transformers renders them with it

        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": _USER},
        ]
        try:
            text = str(render(messages))
        except jinja2.TemplateError:  # the template refuses a system role (Gemma's does)
            text = ""
        except Exception as exc:  # noqa: BLE001 - the template's bug, reported as the case's
            message = " ".join(str(exc).split())[:200]
            raise DataUnavailable(
                f"the chat template fails on NoLiMa's system message ({type(exc).__name__}: "
                f"{message}): fix the template, or pass --chat-template off"
            ) from None
        system_head, found, system_tail = text.partition(_USER)
        # a template that only concatenates messages gives the system text no turn
        turn = SYSTEM_PROMPT in system_head and system_head != SYSTEM_PROMPT + head
        if found and system_tail == tail and turn:
            parts = (system_head, system_tail)
    _SYSTEM_PARTS[enc] = parts
    return parts


def frame(ctx: BuildContext, head: str, tail: str) -> Frame:
    """The ids around the haystack; no answer prefix (NoLiMa's model answers freely)."""
    chat_head, chat_tail = system_chat_parts(ctx.encoder) if ctx.chat else ("", "")
    return ctx.text_frame(chat_head + head, tail + chat_tail)


# a haystack unit: an essay sentence (its index) or a filler sentence (its ids)
Unit = int | tuple[int, ...]


def build(cases: Cases, ctx: BuildContext, job: Job) -> Sample:
    enc = ctx.encoder
    try:
        pool = cases(ctx)
    except DataNotGiven as exc:  # the case's length in the skip's one line
        raise DataNotGiven(f"{job.task} at length {job.length}: {exc}") from None
    at, depth = case_and_depth(len(pool), job.index, job.task, ctx.seed)
    case = pool[at]
    character = job.rng.choice(case.characters) if case.characters else None
    needle = case.needle.replace(CHARACTER, character) if character else case.needle
    question = case.question.replace(CHARACTER, character) if character else case.question
    head, tail = case.template.split("{haystack}")
    f = frame(ctx, head.replace("{question}", question), tail.replace("{question}", question))
    # NoLiMa: the needle after a space, at a unit's end
    needle_ids = enc.encode_fresh([" " + needle])[0]
    room = f.budget(job.length, job.gen) - len(needle_ids)
    if room <= 0:
        why = f"its template, question and needle leave {max(room, 0)} tokens for the haystack"
        raise job.too_short(why)
    fillers = draw_fillers(enc, case, character, room, job.rng)
    essay_room = room - sum(len(ids) for _, ids in fillers)
    essay = load_essay(ctx.essay_path)
    tokens = essay_tokens(enc, essay)
    kept, lengths, ended = fit_sentences(tokens, keyword_pattern(case), essay_room)
    if ended and tokens.complete and essay_room - int(lengths.sum()) > tokens.longest:
        what = (
            f"{essay.source} (never repeated, its sentences naming the needle's keywords or "
            "characters left out)"
        )
        raise job.essay_ran_out(what, job.length - essay_room + int(lengths.sum()))
    job.need_room(len(kept), 1, "haystack sentences beside the needle")
    units, sizes = _interleave(kept, lengths, fillers, job.rng)
    units, place, first = _fit(enc, tokens, units, sizes, depth, room)
    context, offset = _assemble(tokens, units, place, first, needle_ids)
    job.need_room(sum(isinstance(u, int) for u in units), 1, "haystack sentences beside the needle")
    texts = {ids: text for text, ids in fillers}
    shown = [tokens.sentences[u] if isinstance(u, int) else texts[u] for u in units]
    # the first unit bare, the rest behind a space
    haystack = " ".join([*shown[:place], needle, *shown[place:]])
    return job.sample(
        f.around(context, haystack if place else " " + haystack),
        nolima_references((character,) if character else case.gold, case.characters),
        "",
        case=case.name,
        question=question,
        character=character,
        needles=[needle],
        needle_offsets=[len(f.pre) + offset],
        depths=[depth],
        haystack_units=len(units),
        fillers=[texts[u] for u in units if not isinstance(u, int)],
    )


def _interleave(
    kept: np.ndarray, lengths: np.ndarray, fillers: Sequence[Filler], rng: random.Random
) -> tuple[list[Unit], list[int]]:
    """The kept sentences, each filler after a sentence drawn for it (never first)."""
    slots = range(1, len(kept) + 1)
    if len(fillers) <= len(slots):
        drawn = rng.sample(slots, len(fillers))
    else:
        drawn = rng.choices(slots, k=len(fillers))
    after: dict[int, list[tuple[int, ...]]] = {}
    for slot, (_, ids) in zip(drawn, fillers):
        after.setdefault(slot, []).append(ids)
    units: list[Unit] = []
    sizes: list[int] = []
    for k, (index, size) in enumerate(zip(kept.tolist(), lengths.tolist()), start=1):
        units += [index, *after.get(k, ())]
        sizes += [size, *map(len, after.get(k, ()))]
    return units, sizes


def _fit(
    enc: PieceEncoder,
    tokens: EssayTokens,
    units: list[Unit],
    sizes: list[int],
    depth: int,
    room: int,
) -> tuple[list[Unit], int, tuple[int, ...]]:
    """The units that fit ``room``, the last dropped until they do; the needle's place among them,
    before the first unit at or past ``depth`` percent of their tokens (NoLiMa: the first line
    break past it); and the first unit's ids, tokenized bare where an essay sentence opens the
    haystack."""
    while True:
        before = np.concatenate(([0], np.cumsum(np.asarray(sizes, dtype=np.int64))))
        place = int(np.searchsorted(before * 100, depth * before[-1], side="left"))
        opening = units[0] if place and units else None  # an essay sentence: no filler goes first
        first = enc.encode(tokens.sentences[opening]) if isinstance(opening, int) else ()
        extra = len(first) - sizes[0] if first else 0
        if not units or before[-1] + extra <= room:
            return units, place, first
        units, sizes = units[:-1], sizes[:-1]


def _assemble(
    tokens: EssayTokens,
    units: Sequence[Unit],
    place: int,
    first: Sequence[int],
    needle_ids: Sequence[int],
) -> tuple[array, int]:
    """The haystack's ids, the needle at unit ``place``, ``first`` for the unit that opens it; and
    the needle's offset in them."""
    context = array("i", first)
    _extend(context, tokens, units[1:place] if place else [])
    offset = len(context)
    context.extend(needle_ids)
    _extend(context, tokens, units[place:])
    return context, offset


def _extend(context: array, tokens: EssayTokens, units: Sequence[Unit]) -> None:
    """The units' ids appended, consecutive essay sentences as one slice."""
    start = stop = -1
    for unit in units:
        if isinstance(unit, int) and unit == stop:
            stop += 1
            continue
        if stop > start:
            context.extend(tokens.span(start, stop))
        if isinstance(unit, int):
            start, stop = unit, unit + 1
        else:
            start = stop = -1
            context.extend(unit)
    if stop > start:
        context.extend(tokens.span(start, stop))


def _spec(
    name: str, cases: Cases, default: int, about: str, replaces: str | None = None
) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="nolima",
        category="latent",
        metric=NOLIMA_ONE_NAME,
        tokens_to_generate=TOKENS_TO_GENERATE,
        build=functools.partial(build, cases),
        # one of the record's ten characters, measured (bench/chance.py); the official file's
        # records offer as many
        chance=replaces or name,
        description=about,
        default_samples=default,
        chat_template=True,  # NoLiMa evaluates instruction-tuned models through their chat APIs
        pool_size=lambda ctx, length: len(cases(ctx)) * len(DEPTHS),
        replaces=replaces,
    )


@functools.lru_cache(maxsize=1)
def project_set() -> NeedleSet:
    """The project's needle set, held to the overlap cap on first use, not at import."""
    needles = load_project()
    try:
        for case in needles.of_kind(True):
            check_pair(case.question, case.needle, f"{needles.path} {case.name}")
    except LiteralOverlap as exc:
        raise DataUnavailable(str(exc)) from None
    return needles


def _project(latent: bool, ctx: BuildContext) -> tuple[NeedleCase, ...]:
    # the direct control is literal by design: the cap is the latent questions' alone
    return project_set().of_kind(True) if latent else load_project().of_kind(False)


def _official(ctx: BuildContext) -> tuple[NeedleCase, ...]:
    needles = load_official(ctx.data_dir)
    if not needles.of_kind(True):
        raise DataUnavailable(
            f"{needles.path}: every question is a direct one (the literal control NoLiMa's score "
            "leaves out); give NoLiMa's needle_set.json"
        )
    return needles.of_kind(True)


PROJECT_SAMPLES = PROJECT_PAIRS * len(DEPTHS)  # every pair at every depth: 36 x 26


register_suite("nolima", "NoLiMa-style")


@register
def ctx_nolima() -> TaskSpec:
    cases = functools.partial(_project, True)
    return _spec("ctx_nolima", cases, PROJECT_SAMPLES, "latent one-hop needles (the project's set)")


@register
def ctx_nolima_direct() -> TaskSpec:
    cases = functools.partial(_project, False)
    return _spec("ctx_nolima_direct", cases, PROJECT_SAMPLES, "the same needles asked literally")


@register
def nolima() -> TaskSpec:
    # NoLiMa's set has fewer cases than this: the pool (every case at every depth) is what runs
    about = "NoLiMa's own needle set (--data-dir)"
    return _spec("nolima", _official, 100 * len(DEPTHS), about, replaces="ctx_nolima")
