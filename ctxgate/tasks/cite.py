"""HELMET Cite: ALCE ASQA and QAMPARI, answers citing retrieved passages, in HELMET's prompt; as
many whole documents as fit (``--helmet-compat``: HELMET's count, the context's end cut). Samples
and demos are HELMET HEAD's seeded draws; citations need an entailment judge."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from ctxgate.metrics.registry import ALCE_ASQA, ALCE_QAMPARI, Metric
from ctxgate.seeding import helmet_permutation, helmet_sample_draws
from ctxgate.sources.judged import load_alce
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec
from ctxgate.tasks.fitting import FitSpec, fit_units
from ctxgate.tasks.helmet_compat import ALCE_DOCS, helmet_ids
from ctxgate.tasks.registration import register_all

PREFIX = "Answer:"
SHOTS = 2


def _docs(doc_prompt: str, docs: Iterable[tuple[str, str]]) -> list[str]:
    return [doc_prompt.format(ID=i + 1, title=t, text=x) for i, (t, x) in enumerate(docs)]


def build_cite(ctx: BuildContext, job: Job) -> Sample:
    data = load_alce(job.task, ctx.data_dir)
    at = helmet_permutation(len(data.items), ctx.seed)[job.index % len(data.items)]
    item = data.items[at]
    # HELMET: random.seed before loading, then random.sample(demos, 2) per item in file order
    picks = helmet_sample_draws(len(data.items), len(data.demos), SHOTS, ctx.seed)[at]

    def demo(d: dict[str, Any]) -> str:
        context = "\n\n".join(_docs(data.doc_prompt, ((x["title"], x["text"]) for x in d["docs"])))
        return data.demo_prompt.format(**{**d, "instruction": data.instruction, "context": context})

    demos = "\n\n\n".join(demo(data.demos[i]) for i in picks)
    head = f"{demos}\n\n\n{data.instruction}\n\nQuestion: {item.question}\n\n"
    units = _docs(data.doc_prompt, item.docs)
    spec = FitSpec(head, "", PREFIX, "\n\n", 1, "documents")
    if ctx.helmet_compat and job.length in ALCE_DOCS:
        context = "\n\n".join(units[: ALCE_DOCS[job.length]])
        prompt, shown, _ = helmet_ids(ctx, job, spec, context)
        starts = itertools.accumulate((len(u) + 2 for u in units), initial=0)
        k = sum(1 for start, _ in zip(starts, units) if start < len(shown))  # the last may be cut
    else:
        prompt, k = fit_units(ctx, job, spec, units)
    answers = [list(a) for a in item.answers]
    return job.sample(
        prompt,
        tuple(a[0] for a in item.answers if a),
        PREFIX,
        item_id=item.key,
        num_docs=k,
        pool_exhausted=k == len(item.docs),
        demo_indices=list(picks),
        data_sha256=data.sha256,
        # every document: a citation to one not shown is checked against it, as the reference does
        judge_input={
            "question": item.question,
            "docs": [list(d) for d in item.docs],
            ("answers" if job.task == "alce_qampari" else "short_answers"): answers,
        },
    )


def _spec(name: str, metric: Metric, description: str) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="helmet",
        category="cite",
        metric=metric,
        tokens_to_generate=300,
        build=build_cite,
        chance=0.0,  # no random answer is judged here: 0, so no floor is refused for it
        markers=("judge",),
        scoring_prefix=PREFIX,
        chat_template=True,
        description=f"ALCE {name.removeprefix('alce_').upper()}: {description}",
        pool_size=lambda ctx, length: len(load_alce(name, ctx.data_dir).items),
    )


register_all(
    __name__,
    [
        _spec("alce_asqa", ALCE_ASQA, "long answers with citations (str_em, citation rec/prec)"),
        _spec("alce_qampari", ALCE_QAMPARI, "answer lists with citations (rec_top5, citations)"),
    ],
)
