"""The one way a sample is built: (task, length, index, seed) in, a prompt that obeys the length rule out, or a
designed refusal (``ctxgate.records.refusal.Refusal``) carrying its cause.

The length rule, as RULER and HELMET count it: the model's input ids (BOS, chat template, instruction, context,
question, answer prefix) plus the task's generation budget fit in the length. Length 0 is the bare form of a task
that has one (``TaskSpec.bare``: BABILong's "0k", the facts without background text), which no length limits.
Every caller - the pytest cases, the CLI workflows, the benches and the fixtures' builders - comes through
``build_sample``, so the rule is checked in one place and a builder cannot hand out a prompt that breaks it."""

from __future__ import annotations

from dataclasses import replace

from ctxgate.seeding import sample_rng
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec, check_fill, too_short


class LengthRuleBroken(RuntimeError):
    """A builder produced a prompt longer than its length allows: a bug in the builder, never a refusal."""


def task_context(spec: TaskSpec, ctx: BuildContext) -> BuildContext:
    """With ``--chat-template task``, the task's own policy decides whether its prompt uses the template."""
    if not ctx.chat_by_task or ctx.chat == spec.chat_template:
        return ctx
    return replace(ctx, chat=spec.chat_template)


def fits_at_all(spec: TaskSpec, length: int) -> bool:
    """Whether a sample of ``spec`` can be built at ``length`` at all: its bare form at 0, else a length its
    generation budget does not fill. ``build_sample`` refuses the others before the task reads any data."""
    return spec.bare if length == 0 else length > spec.tokens_to_generate


def build_sample(
    spec: TaskSpec, ctx: BuildContext, length: int, index: int, seed: int, *, fill_rule: bool = True
) -> Sample:
    """Sample ``index`` of ``spec`` at ``length`` for ``seed``: its random stream and the task's seeded choices
    (order, demos) come from the seed alone, so a sample never depends on which others were built.
    ``fill_rule=False`` keeps a prompt whose data ran out short of the length (tests that compare a prompt's
    bytes with the reference's); a case never runs one."""
    ctx = task_context(spec, ctx)
    if ctx.seed != seed:
        ctx = replace(ctx, seed=seed)
    job = Job(spec.name, length, index, spec.tokens_to_generate, sample_rng(spec.name, length, index, seed))
    if not fits_at_all(spec, length):
        if length == 0:
            raise too_short(job, "length 0 is the bare form (the facts alone, BABILong's 0k) of tasks that have one")
        raise too_short(job, f"its generation budget of {spec.tokens_to_generate} tokens fills it")
    s = spec.build(ctx, job)
    if length == 0:
        return s
    over = len(s.input_ids) + spec.tokens_to_generate - length
    if over > 0:
        raise LengthRuleBroken(
            f"{spec.name} built sample {index} at length {length} {over} tokens over the length rule (prompt "
            f"{len(s.input_ids)} + generation budget {spec.tokens_to_generate}); this is a ctxgate bug: please "
            "report it with the command that ran"
        )
    if fill_rule:
        check_fill(spec, s)
    return s
