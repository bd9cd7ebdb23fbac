"""HELMET LongQA: InfiniteBench book QA and multiple choice, NarrativeQA (judged), in HELMET's
prompts; the book cut from its end to fit, ending with ``fitting.OMITTED``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TypeVar

from ctxgate.metrics.registry import MC_ACCURACY, NARRATIVEQA_JUDGE, ROUGE_L_F1, Metric
from ctxgate.seeding import helmet_first, helmet_permutation, helmet_unseeded_seeds
from ctxgate.sources.judged import Book, load_infbench, load_narrativeqa
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec
from ctxgate.tasks.fitting import FitSpec
from ctxgate.tasks.helmet_compat import long_document
from ctxgate.tasks.registration import register_all
from ctxgate.tasks.selection import Document, helmet_selection

QA_INSTRUCTION = (
    "You are given a story and a question. Answer the question as concisely as you can, using a "
    "single phrase if possible.\n\n"
)
MC_INSTRUCTION = (
    "You are given a story and a question with multiple choices. Choose the best answer from the "
    "options provided. Only one of the following options is correct, output the answer using one "
    "single letter (A, B, C, or D). Don't say anything else.\n\n"
)
ANSWER_PREFIX = "Answer:"
B = TypeVar("B", bound=Document)
SHOTS = 2


def options_text(book: Book) -> str:
    return "A. {}\nB. {}\nC. {}\nD. {}".format(*book.options)


def gold_letter(book: Book) -> str:
    return "ABCD"[book.options.index(book.answers[0])]


def for_example(shots: Iterable[str], then: str = "read the following story") -> str:
    """HELMET's demos for a long document: shots with ``[story text]`` or nothing for their own."""
    return "For example:\n\n" + "\n\n".join(shots) + f"\n\nNow, {then}:\n\n"


def demo_block(task: str, demos: list[Book]) -> str:
    if task == "infbench_mc":
        return for_example(
            f"[story text]\nQuestion: {d.question}\nOptions:\n{options_text(d)}\n"
            f"Answer: {gold_letter(d)}"
            for d in demos
        )
    return for_example(
        f"[story text]\nQuestion: {d.question}\nAnswer: {d.answers[0]}" for d in demos
    )


def kept_infbench(task: str, ctx: BuildContext) -> tuple[int, ...]:
    data = load_infbench(task, ctx.data_dir)
    return helmet_selection(task, data.books, data.sha256, ctx)


def helmet_infbench(
    task: str, books: Sequence[B], digest: str, ctx: BuildContext, index: int
) -> tuple[B, list[B]]:
    """HELMET HEAD's InfiniteBench sample and demos (``data.py`` load_infbench)."""
    kept = helmet_selection(task, books, digest, ctx)
    at = kept[helmet_permutation(len(kept), ctx.seed)[index % len(kept)]]
    others = [b for i, b in enumerate(books) if i != at]
    return books[at], [others[i] for i in helmet_first(len(others), ctx.seed, SHOTS)]


def build_longqa(ctx: BuildContext, job: Job) -> Sample:
    task = job.task
    data = load_infbench(task, ctx.data_dir)
    book, demos = helmet_infbench(task, data.books, data.sha256, ctx, job.index)
    head = (MC_INSTRUCTION if task == "infbench_mc" else QA_INSTRUCTION) + demo_block(task, demos)
    tail = f"\n\nQuestion: {book.question}"
    if task == "infbench_mc":
        tail += f"\nOptions:\n{options_text(book)}"
        answers: tuple[str, ...] = (gold_letter(book), f"{gold_letter(book)}. {book.answers[0]}")
    else:
        answers = book.answers
    spec = FitSpec(head, tail, ANSWER_PREFIX, "\n\n")
    prompt, tokens, cut = long_document(ctx, job, spec, book.context)
    return job.sample(
        prompt,
        answers,
        ANSWER_PREFIX,
        book_id=book.key,
        story_tokens=tokens,
        truncated=cut,
        pool_exhausted=not cut,
        demo_ids=[d.key for d in demos],
        data_sha256=data.sha256,
    )


def _spec(name: str, metric: Metric, description: str, chance: float) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="helmet",
        category="longqa",
        metric=metric,
        tokens_to_generate=10,
        build=build_longqa,
        chance=chance,
        scoring_prefix=ANSWER_PREFIX,
        chat_template=True,
        description=description,
        pool_size=lambda ctx, length: len(kept_infbench(name, ctx)),
    )


# NarrativeQA (judged): HELMET's prompt; user text and answer prefix joined by one newline
NQA_INSTRUCTION = (
    "You are given a story, which can be either a novel or a movie script, and a question. "
    "Answer the question as concisely as you can, using a single phrase if possible.\n\n"
)


def build_narrativeqa(ctx: BuildContext, job: Job) -> Sample:
    data = load_narrativeqa(ctx.data_dir)
    # HELMET HEAD: the long documents of the seeded shuffle; per question, two train questions from
    # an unseeded shuffle (numpy's global generator, seeded at load)
    keep = set(kept_books(ctx))
    order = [i for i in helmet_permutation(len(data.items), ctx.seed) if i in keep]
    at = job.index % len(order)
    item = data.items[order[at]]
    draw = helmet_unseeded_seeds(ctx.seed, len(order))[at]
    demos = [data.demos[i] for i in helmet_first(len(data.demos), draw, SHOTS)]
    shots = (f"Question: {d.question}\nAnswer: {d.answers[0]}" for d in demos)
    head = NQA_INSTRUCTION + for_example(shots, "use the following story to answer the question")
    spec = FitSpec(head, f"\n\nQuestion: {item.question}", ANSWER_PREFIX, "\n")
    prompt, tokens, cut = long_document(ctx, job, spec, item.context)
    return job.sample(
        prompt,
        item.answers,
        ANSWER_PREFIX,
        item_id=item.key,
        story_tokens=tokens,
        truncated=cut,
        pool_exhausted=not cut,
        data_sha256=data.sha256,
        judge_input={"question": item.question, "answers": list(item.answers)},
    )


def kept_books(ctx: BuildContext) -> tuple[int, ...]:
    data = load_narrativeqa(ctx.data_dir)
    return helmet_selection("narrativeqa", data.items, data.sha256, ctx)


register_all(
    __name__,
    [
        # another answer from the book: not measured, declared 0, so no floor is refused for it
        _spec(
            "infbench_qa",
            ROUGE_L_F1,
            "InfiniteBench book QA with entity replacement (ROUGE-L F1)",
            0.0,
        ),
        # one of its four options
        _spec("infbench_mc", MC_ACCURACY, "InfiniteBench book multiple choice (accuracy)", 25.0),
        replace(
            # no random answer is judged here: 0, so no floor is refused for it
            _spec(
                "narrativeqa",
                NARRATIVEQA_JUDGE,
                "NarrativeQA over whole books and scripts (LLM judge: fluency x correctness)",
                0.0,
            ),
            tokens_to_generate=100,
            build=build_narrativeqa,
            markers=("judge",),
            pool_size=lambda ctx, length: len(kept_books(ctx)),
        ),
    ],
)
