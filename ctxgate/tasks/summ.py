"""HELMET Summ: InfiniteBench Sum (novels) and Multi-LexSum (civil-rights case files), scored by an LLM judge.

Prompts (HELMET, verbatim; user text and ``Summary:`` joined by a blank line):
InfBench ``You are given a book and you are tasked to summarize it. Write a summary of about 1000 to 1200 words. Only
write about the plot and characters of the story. Do not discuss the themes or background of the book. Do not
provide any analysis or commentary.\\n\\n{demo}{context}\\n\\nNow summarize the book.``, demos ``For example:\\n\\n``
+ ``[story text]\\nSummary: {gold}`` x 2 + ``\\n\\nNow, read the following story:\\n\\n``; 1200 new tokens.
Multi-LexSum ``You are given the legal documents in a civil rights lawsuit, and you are tasked to summarize the case.
Write a concise summary of one paragraph (200 to 250 words). The summary should contain a short description of the
background, the parties involved, and the outcomes of the case.\\n\\n{demo}Legal documents:\\n{context}\\n\\nNow please
summarize the case.``, demos ``Example summaries:\\n\\n`` + ``Summary: {short}`` x 2 + ``\\n\\nNow, write a summary of
the following legal documents.\\n``; 400 new tokens. Chat template on (HELMET's policy). The document is cut to fit.
"""

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
from ctxgate.tasks.helmet_compat import long_document
from ctxgate.tasks.longqa import helmet_infbench
from ctxgate.tasks.registration import register
from ctxgate.tasks.selection import helmet_selection

PREFIX = "Summary:"
SHOTS = 2
BOOK = (
    "You are given a book and you are tasked to summarize it. Write a summary of about 1000 to 1200 words. Only "
    "write about the plot and characters of the story. Do not discuss the themes or background of the book. Do "
    "not provide any analysis or commentary.\n\n"
)
LEGAL = (
    "You are given the legal documents in a civil rights lawsuit, and you are tasked to summarize the case. "
    "Write a concise summary of one paragraph (200 to 250 words). The summary should contain a short "
    "description of the background, the parties involved, and the outcomes of the case.\n\n"
)


def kept_items(task: str, data: LongDocSet, ctx: BuildContext) -> list[int]:
    """HELMET's selection: Multi-LexSum's cases and InfBench Sum's books of at least 65536 tokens."""
    return list(helmet_selection(task, data.items, data.sha256, ctx))


def _helmet_multi_lexsum(data: LongDocSet, kept: list[int], index: int, seed: int) -> tuple[LongDoc, list[LongDoc]]:
    """HELMET HEAD's sample and demos: ``all_data.map`` shuffles the train split afresh, unseeded, for every case of
    train, then validation (file order, after the short-summary filter), so validation case j takes draw
    ``len(train) + j``; the long validation cases are kept in file order, shuffled with the seed only when more than
    ``max_test_samples``."""
    order = kept
    if len(kept) > HELMET_MAX_TEST_SAMPLES:
        order = [kept[i] for i in helmet_permutation(len(kept), seed)]
    j = order[index % len(order)]
    draw = helmet_unseeded_seeds(seed, len(data.demos) + len(data.items))[len(data.demos) + j]
    return data.items[j], [data.demos[i] for i in helmet_first(len(data.demos), draw, SHOTS)]


def build_summary(data: LongDocSet, ctx: BuildContext, job: Job) -> Sample:
    task = job.task
    if task == "infbench_sum":
        item, demos = helmet_infbench(task, data.items, data.sha256, ctx, job.index)
        head = (
            BOOK
            + "For example:\n\n"
            + "\n\n".join(f"[story text]\nSummary: {d.answers[0].strip()}" for d in demos)
            + "\n\nNow, read the following story:\n\n"
        )
        tail, style = "\n\nNow summarize the book.", "book"
    else:
        item, demos = _helmet_multi_lexsum(data, kept_items(task, data, ctx), job.index, ctx.seed)
        head = (
            LEGAL
            + "Example summaries:\n\n"
            + "\n\n".join(f"Summary: {d.answers[0]}" for d in demos)
            + "\n\nNow, write a summary of the following legal documents.\nLegal documents:\n"
        )
        tail, style = "\n\nNow please summarize the case.", "legal"
    ids, doc_tokens, cut = long_document(ctx, job, head, tail, PREFIX, "\n\n", item.context)
    return job.sample(
        ids,
        item.answers,
        PREFIX,
        {
            "item_id": item.key,
            "document_tokens": doc_tokens,
            "truncated": cut,
            "pool_exhausted": not cut,
            "demo_ids": [d.key for d in demos],
            "data_sha256": data.sha256,
            "judge_input": {
                "style": style,
                "expert_summary": item.expert_summary,
                "keypoints": list(item.keypoints),
                "keypoint_source": item.keypoint_source,
            },
        },
    )


def _spec(name: str, gen: int, description: str) -> TaskSpec:
    def load(ctx: BuildContext) -> LongDocSet:
        return load_infbench_sum(ctx.data_dir) if name == "infbench_sum" else load_multi_lexsum(ctx.data_dir)

    def build(ctx: BuildContext, job: Job) -> Sample:
        return build_summary(load(ctx), ctx, job)

    return TaskSpec(
        name=name,
        suite="helmet",
        category="summ",
        metric=SUMMARY_JUDGE,
        tokens_to_generate=gen,
        build=build,
        markers=("judge",),
        scoring_prefix=PREFIX,
        chat_template=True,
        description=description,
        pool_size=lambda ctx, length: len(kept_items(name, load(ctx), ctx)),
    )


@register
def infbench_sum() -> TaskSpec:
    return _spec("infbench_sum", 1200, "InfiniteBench novel summaries (LLM judge: fluency x key-point F1)")


@register
def multi_lexsum() -> TaskSpec:
    return _spec("multi_lexsum", 400, "Multi-LexSum case summaries (LLM judge: fluency x key-point F1)")
