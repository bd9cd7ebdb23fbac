"""HELMET Summ: InfiniteBench Sum and Multi-LexSum, LLM-judged, in HELMET's prompts."""

from __future__ import annotations

from ctxgate.metrics.registry import SUMMARY_JUDGE
from ctxgate.seeding import (
    HELMET_MAX_TEST_SAMPLES,
    helmet_first,
    helmet_permutation,
    helmet_unseeded_seeds,
)
from ctxgate.sources.judged import LongDoc, LongDocSet, load_infbench_sum, load_multi_lexsum
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec
from ctxgate.tasks.fitting import FitSpec
from ctxgate.tasks.helmet_compat import long_document
from ctxgate.tasks.longqa import for_example, helmet_infbench
from ctxgate.tasks.registration import register_all
from ctxgate.tasks.selection import helmet_selection

PREFIX = "Summary:"
SHOTS = 2
BOOK = (
    "You are given a book and you are tasked to summarize it. Write a summary of about 1000 to "
    "1200 words. Only write about the plot and characters of the story. Do not discuss the "
    "themes or background of the book. Do not provide any analysis or commentary.\n\n"
)
LEGAL = (
    "You are given the legal documents in a civil rights lawsuit, and you are tasked to "
    "summarize the case. Write a concise summary of one paragraph (200 to 250 words). The "
    "summary should contain a short description of the background, the parties involved, and the "
    "outcomes of the case.\n\n"
)


def kept_items(task: str, data: LongDocSet, ctx: BuildContext) -> list[int]:
    return list(helmet_selection(task, data.items, data.sha256, ctx))


def _helmet_multi_lexsum(
    data: LongDocSet, kept: list[int], index: int, seed: int
) -> tuple[LongDoc, list[LongDoc]]:
    """HELMET HEAD's sample and demos (one unseeded train shuffle per case, train first)."""
    order = kept
    if len(kept) > HELMET_MAX_TEST_SAMPLES:
        order = [kept[i] for i in helmet_permutation(len(kept), seed)]
    j = order[index % len(order)]
    draw = helmet_unseeded_seeds(seed, len(data.demos) + len(data.items))[len(data.demos) + j]
    return data.items[j], [data.demos[i] for i in helmet_first(len(data.demos), draw, SHOTS)]


def load_documents(task: str, ctx: BuildContext) -> LongDocSet:
    if task == "infbench_sum":
        return load_infbench_sum(ctx.data_dir)
    return load_multi_lexsum(ctx.data_dir)


def build_summary(ctx: BuildContext, job: Job) -> Sample:
    task, data = job.task, load_documents(job.task, ctx)
    if task == "infbench_sum":
        item, demos = helmet_infbench(task, data.items, data.sha256, ctx, job.index)
        head = BOOK + for_example(f"[story text]\nSummary: {d.answers[0].strip()}" for d in demos)
        tail, style = "\n\nNow summarize the book.", "book"
    else:
        item, demos = _helmet_multi_lexsum(data, kept_items(task, data, ctx), job.index, ctx.seed)
        shots = "\n\n".join(f"Summary: {d.answers[0]}" for d in demos)
        head = f"{LEGAL}Example summaries:\n\n{shots}\n\n"
        head += "Now, write a summary of the following legal documents.\n"
        head += "Legal documents:\n"  # HELMET's context template begins with it
        tail, style = "\n\nNow please summarize the case.", "legal"
    spec = FitSpec(head, tail, PREFIX, "\n\n")
    prompt, doc_tokens, cut = long_document(ctx, job, spec, item.context)
    return job.sample(
        prompt,
        item.answers,
        PREFIX,
        item_id=item.key,
        document_tokens=doc_tokens,
        truncated=cut,
        pool_exhausted=not cut,
        demo_ids=[d.key for d in demos],
        data_sha256=data.sha256,
        judge_input={
            "style": style,
            "expert_summary": item.expert_summary,
            "keypoints": list(item.keypoints),
            "keypoint_source": item.keypoint_source,
        },
    )


def _spec(name: str, gen: int, description: str) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="helmet",
        category="summ",
        metric=SUMMARY_JUDGE,
        tokens_to_generate=gen,
        build=build_summary,
        chance=0.0,  # no random summary is judged here: 0, so no floor is refused for it
        markers=("judge",),
        scoring_prefix=PREFIX,
        chat_template=True,
        description=f"{description} (LLM judge: fluency x key-point F1)",
        pool_size=lambda ctx, length: len(kept_items(name, load_documents(name, ctx), ctx)),
    )


register_all(
    __name__,
    [
        _spec("infbench_sum", 1200, "InfiniteBench novel summaries"),
        _spec("multi_lexsum", 400, "Multi-LexSum case summaries"),
    ],
)
