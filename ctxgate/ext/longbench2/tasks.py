"""``longbench2``: LongBench v2's multiple-choice questions (``--data-dir``), each prompt the
reference's template filled and cut in its middle to the case's budget, as pred.py cuts it at 128K.
A case's length is that budget's scale: ``reference`` cuts a prompt to pred.py's max_len in
proportion (120,000 tokens at 131,072), ``fill`` to all the length rule leaves; the chat template
and the generation budget come on top, within the length."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from ctxgate.api import (
    BuildContext,
    DataNotGiven,
    Job,
    Metric,
    PieceEncoder,
    Prompt,
    Sample,
    Scored,
    TaskSpec,
    register,
    register_suite,
    seeded_order,
)

from .cot import StepTwo, remember
from .cutting import truncated
from .prompts import (
    ANSWER_TOKENS,
    COT_TOKENS,
    ZERO_SHOT,
    ZERO_SHOT_COT,
    ZERO_SHOT_COT_ANS,
    extract_answer,
    fill,
    reference_budget,
)
from .records import DIFFICULTIES, LENGTHS, Record, load
from .settings import FILL, NAME, SECTION, Longbench2Settings

TASK = "longbench2"
SAMPLES = 503  # the released set: every question once
CHANCE = 25.0  # one of four letters; an answer not found scores 0, as in result.py
SPLITS = (*DIFFICULTIES, *LENGTHS)  # result.py's columns after Overall


@functools.lru_cache(maxsize=64)
def least_budget(enc: PieceEncoder, template: str) -> int:
    """The smallest budget whose halves keep the template's fixed text whole: its instruction in
    the first, the question's frame and the answer format in the last."""
    head, tail = template.split("$DOC$")
    for placeholder in ("$Q$", "$C_A$", "$C_B$", "$C_C$", "$C_D$"):
        tail = tail.replace(placeholder, "")
    return 2 * max(len(enc.whole(head)), len(enc.encode(tail)) + 1)


def budget(ctx: BuildContext, job: Job, chosen: Longbench2Settings) -> int:
    """The prompt's ids pred.py's cut may keep (its BOS among them, as in pred.py) at this length;
    a chain of thought's longer first answer comes out of it."""
    extra = COT_TOKENS - ANSWER_TOKENS if chosen.cot else 0
    room = ctx.frame("", "", "").budget(job.length, job.gen + extra) + len(ctx.encoder.prefix)
    return room if chosen.truncation == FILL else min(room, reference_budget(job.length))


def records(ctx: BuildContext) -> tuple[Record, ...]:
    return load(ctx.data_dir).records


def pick(ctx: BuildContext, job: Job) -> Record:
    """Sample ``index``'s question: every question once, in an order fixed by the seed."""
    try:
        found = records(ctx)
    except DataNotGiven as exc:  # the case's length in the skip's one line
        raise DataNotGiven(f"{job.task} at length {job.length}: {exc}") from None
    order = seeded_order(len(found), "longbench2-order", job.task, ctx.seed)
    return found[order[job.index % len(found)]]


def build(ctx: BuildContext, job: Job) -> Sample:
    chosen, enc = SECTION.of(ctx.extras), ctx.encoder
    template = ZERO_SHOT_COT if chosen.cot else ZERO_SHOT
    keep, least = budget(ctx, job, chosen), least_budget(enc, template)
    if keep < least:
        raise job.too_short(
            f"its prompt may keep {max(keep, 0)} tokens, and the cut needs {least} to keep the "
            "instruction, the question's frame and the answer format whole"
        )
    record = pick(ctx, job)
    frame = ctx.frame("", "", "")
    filled = fill(template, record)
    while True:  # the cut's ids joined to the template's ends may merge into a few more
        body = truncated(enc, filled, keep)
        text = frame.pre_text + body + frame.post_text
        ids = enc.whole(text)
        over = len(ids) + job.gen - job.length
        if over <= 0:
            break
        if keep - over < least:
            raise job.too_short(f"its prompt joined to the chat template runs {over} tokens over")
        keep -= over
    if chosen.cot:
        second = fill(ZERO_SHOT_COT_ANS, record)
        remember(job, StepTwo(second, keep, frame.pre_text, frame.post_text, enc))
    labels = (f"difficulty:{record.difficulty}", f"length:{record.length}")
    return job.sample(
        Prompt(ids, text),
        (record.answer, *labels),
        "",
        id=record.id,
        domain=record.domain,
        sub_domain=record.sub_domain,
        truncated=body is not filled,
        budget=keep,
    )


def _choice(prediction: str, references: Sequence[str], prefix: str | None) -> Scored:
    """1 where pred.py's extraction from the stripped output is the gold letter; what was
    extracted is what was scored ('' where nothing was)."""
    said = extract_answer(prediction.strip())
    return float(said == references[0]), said or ""


def _splits(prediction: str, references: Sequence[str]) -> dict[str, float]:
    """Which of result.py's splits the question is in, and whether it was answered right in it:
    the case keeps their shares, from which the report counts each split's accuracy."""
    right = _choice(prediction, references, None)[0]
    labels = {r.partition(":")[2] for r in references[1:]}
    out: dict[str, float] = {}
    for split in SPLITS:
        inside = float(split in labels)
        out[split], out[f"{split}_right"] = inside, inside * right
    return out


LONGBENCH2_CHOICE = Metric(
    "longbench2_choice",
    _choice,
    "LongBench v2: the letter of 'The correct answer is (X)' in the output is the gold one",
    parts=_splits,
)

register_suite(NAME, "LongBench v2")


@register
def longbench2() -> TaskSpec:
    return TaskSpec(
        name=TASK,
        suite=NAME,
        category="choice",
        metric=LONGBENCH2_CHOICE,
        tokens_to_generate=ANSWER_TOKENS,
        build=build,
        chance=CHANCE,
        description="LongBench v2's 503 multiple-choice questions (--data-dir), middle-truncated",
        default_samples=SAMPLES,
        chat_template=True,  # pred.py sends each prompt as a chat's user message
        pool_size=lambda ctx, length: len(records(ctx)),
    )
