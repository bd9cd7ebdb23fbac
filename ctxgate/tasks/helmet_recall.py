"""HELMET Recall's RULER tasks from HELMET's own files, as its ``load_ruler`` formats them; a
length without a file skips, and Recall uses the RULER cases (``aggregate.recall_members``)."""

from __future__ import annotations

from ctxgate.metrics.registry import STRING_MATCH_ALL
from ctxgate.sources.helmet_files import load_ruler_file, order
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec
from ctxgate.tasks.fitting import FitSpec, fit_document
from ctxgate.tasks.niah import ANSWER_PREFIX, TEMPLATE_HEAD, TEMPLATE_TAIL, singular
from ctxgate.tasks.registration import register_all

# RULER's templates, the answer prefix without its leading space; singular for one value
MANY = (TEMPLATE_HEAD, TEMPLATE_TAIL, ANSWER_PREFIX.removeprefix(" "))
ONE = tuple(map(singular, MANY))


def build(ctx: BuildContext, job: Job) -> Sample:
    data = load_ruler_file(job.task, ctx.data_dir, job.length)
    record = data.records[order(len(data.records), ctx.seed)[job.index % len(data.records)]]
    head, tail, prefix = (
        part.format(type_needle_v=record.type_needle_v, query=record.query)
        for part in (MANY if job.task == "helmet_multivalue" else ONE)
    )
    spec = FitSpec(head, tail, prefix, "\n", 1, "context tokens")
    prompt, _, cut = fit_document(ctx, job, spec, record.context, suffix="")
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


register_all(
    __name__,
    [
        _spec(f"helmet_{kind}", gen, f"niah_{kind}", f"HELMET's RULER niah_{kind} file (Recall)")
        for kind, gen in (("multikey_2", 50), ("multikey_3", 100), ("multivalue", 50))
    ],
)
