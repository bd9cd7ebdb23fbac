"""The one way a sample is built, so the length rule is checked in one place: a prompt that obeys
it, or a designed refusal (``Refusal``). Its ids are the tokenizer's own for the whole text, as
RULER and HELMET tokenize it; past ``WHOLE_UP_TO``, the joined ids where the case's first sample's
equal them (a 1M-token text takes seconds to tokenize, its pieces join in a fiftieth of that)."""

from __future__ import annotations

from dataclasses import replace

from ctxgate.refusal import Refusal
from ctxgate.seeding import sample_rng
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec, check_fill

WHOLE_UP_TO = 32768  # every prompt up to this length is tokenized whole
PROBE_UP_TO = 131072


class LengthRuleBroken(RuntimeError):
    """A builder's prompt broke the length rule: a bug, never a refusal."""


def task_context(spec: TaskSpec, ctx: BuildContext) -> BuildContext:
    """With ``--chat-template task``, the task's own policy decides."""
    if not ctx.chat_by_task or ctx.chat == spec.chat_template:
        return ctx
    return replace(ctx, chat=spec.chat_template)


def fits_at_all(spec: TaskSpec, length: int) -> bool:
    """Its bare form at 0, else a length its generation budget does not fill."""
    return spec.bare if length == 0 else length > spec.held_in_length


def build_sample(
    spec: TaskSpec, ctx: BuildContext, length: int, index: int, seed: int, *, fill_rule: bool = True
) -> Sample:
    """Sample ``index`` of ``spec``, from the seed alone; ``fill_rule=False``: tests only."""
    ctx = task_context(spec, ctx)
    if ctx.seed != seed:
        ctx = replace(ctx, seed=seed)
    rng = sample_rng(spec.name, length, index, seed)
    job = Job(spec.name, length, index, spec.held_in_length, rng)
    if not fits_at_all(spec, length):
        if length == 0:
            raise job.too_short(
                "length 0 is the bare form (the facts alone, BABILong's 0k) of tasks that have one"
            )
        raise job.too_short(f"its generation budget of {spec.tokens_to_generate} tokens fills it")
    s = _tokenized_whole(spec, ctx, job)
    if length == 0:
        return s
    prompt = len(s.input_ids) + len(
        s.after_thought
    )  # a prefix held for after a thought counts here too
    over = prompt + spec.held_in_length - length
    if over > 0:
        raise LengthRuleBroken(
            f"{spec.name} built sample {index} at length {length} {over} tokens over the length "
            f"rule (prompt {prompt} + generation budget {spec.held_in_length}); "
            "this is a ctxgate bug: please report it with the command that ran"
        )
    if fill_rule:
        check_fill(spec, s)
    return s


def _tokenized_whole(spec: TaskSpec, ctx: BuildContext, job: Job) -> Sample:
    """The sample with its whole text's ids, rebuilt with any excess held back."""
    while True:
        s = spec.build(ctx, job)
        ids = _ids(spec, ctx, s)
        over = len(ids) + len(s.after_thought) + spec.held_in_length - job.length
        if job.length == 0 or over <= 0 or len(ids) <= len(s.input_ids):
            return s if ids is s.input_ids else replace(s, input_ids=ids)
        rng = sample_rng(spec.name, job.length, job.index, ctx.seed)
        job = replace(job, gen=job.gen + over, rng=rng)


def _ids(spec: TaskSpec, ctx: BuildContext, s: Sample) -> tuple[int, ...]:
    enc = ctx.encoder
    probe = min(s.length, PROBE_UP_TO)
    key = (spec.name, ctx, probe)
    if s.length > WHOLE_UP_TO and enc.joins_hold(key, lambda: _joins_hold(spec, ctx, s, probe)):
        return s.input_ids
    return enc.whole(s.text, s.bos)


def _joins_hold(spec: TaskSpec, ctx: BuildContext, s: Sample, length: int) -> bool:
    """Whether the task's first sample at ``length`` has its whole text's ids as its joined ids."""
    if s.index or s.length != length:
        rng = sample_rng(spec.name, length, 0, ctx.seed)
        try:
            s = spec.build(ctx, Job(spec.name, length, 0, spec.held_in_length, rng))
        except Refusal:
            return False
    return s.input_ids == ctx.encoder.whole(s.text, s.bos)
