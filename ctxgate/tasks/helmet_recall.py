"""HELMET Recall's RULER tasks from HELMET's own files (``ruler/niah_multikey_2|3``, ``ruler/niah_multivalue``),
as HELMET's ``load_ruler`` formats them: its templates, the answer prefix joined to the question by a newline
(``...mentioned in the provided text?\\nThe special magic ...``), budgets 50 / 100 / 50, RULER's recall metric.

HELMET cuts the end of a record's context to fit the length; so does this, by tokens, without a suffix. Where
the data folder has no file for a length the case skips, and the Recall category uses the suite's RULER cases
(``aggregate.recall_members``).
"""

from __future__ import annotations

from ctxgate.metrics.registry import STRING_MATCH_ALL
from ctxgate.sources.helmet_files import load_ruler_file, order
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec
from ctxgate.tasks.fitting import fit_document
from ctxgate.tasks.niah import ANSWER_PREFIX, TEMPLATE_HEAD, TEMPLATE_TAIL, singular
from ctxgate.tasks.registration import register

# RULER's templates (niah.py), the answer prefix without its leading space; singular for one value
MANY = (TEMPLATE_HEAD, TEMPLATE_TAIL, ANSWER_PREFIX.removeprefix(" "))
ONE = tuple(map(singular, MANY))


def build(ctx: BuildContext, job: Job) -> Sample:
    task = job.task
    data = load_ruler_file(task, ctx.data_dir, job.length)
    record = data.records[order(len(data.records), ctx.seed)[job.index % len(data.records)]]
    head, tail, prefix = (
        part.format(type_needle_v=record.type_needle_v, query=record.query)
        for part in (MANY if task == "helmet_multivalue" else ONE)
    )
    prompt, _, cut = fit_document(ctx, job, head, tail, prefix, "\n", record.context, "", 1, "context tokens")
    return job.sample(
        prompt,
        record.answers,
        prefix,
        query=record.query,
        context_cut=cut,
        data_file=data.path,
        data_sha256=data.sha256,
    )


def _spec(name: str, gen: int, replaces: str, description: str) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="helmet",
        category="recall",
        metric=STRING_MATCH_ALL,
        tokens_to_generate=gen,
        build=build,
        chance=0.0,  # RULER's needles: as niah_multikey_2/3 and niah_multivalue's
        description=description,
        pool_size=lambda ctx, length: len(load_ruler_file(name, ctx.data_dir, length).records),
        replaces=replaces,
    )


@register
def helmet_multikey_2() -> TaskSpec:
    return _spec("helmet_multikey_2", 50, "niah_multikey_2", "HELMET's RULER niah_multikey_2 file (Recall)")


@register
def helmet_multikey_3() -> TaskSpec:
    return _spec("helmet_multikey_3", 100, "niah_multikey_3", "HELMET's RULER niah_multikey_3 file (Recall)")


@register
def helmet_multivalue() -> TaskSpec:
    return _spec("helmet_multivalue", 50, "niah_multivalue", "HELMET's RULER niah_multivalue file (Recall)")
