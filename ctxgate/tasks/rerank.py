"""HELMET Re-rank: MS MARCO passages ranked by the model (NDCG@10), in HELMET's prompt
("relelvant" included); HELMET's own at the lengths it has a file for, else the query's judged
passages balanced over labels, in one of three seeded orders (sample i: query i // 3)."""

from __future__ import annotations

import random

from ctxgate.metrics.registry import NDCG_AT_10
from ctxgate.seeding import derive_seed, seeded_order, seeded_sample
from ctxgate.sources.errors import DataUnavailable
from ctxgate.sources.helmet_files import HelmetFile, load_msmarco_file, pick_demos
from ctxgate.sources.kilt import Passage, load_msmarco, ranked_demo
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec, interleave
from ctxgate.tasks.fitting import SEP, FitSpec, fit_context, fit_units, passage_demos
from ctxgate.tasks.registration import register

INSTRUCTION = (
    "You are provided with a list of documents, each indicated by their ID. Rank each document "
    "based on their relevance to the question in descending order from most relelvant to least "
    "relevant texts. Include all documents in the rankings. Write your answer using the unique "
    "IDs, with the following format:\nRanking: ID3 > ID1 > ID2\n\n"
)
ANSWER_PREFIX = "Ranking:"
SHOTS = 2
PERMUTATIONS = 3


def passage_text(p: Passage) -> str:
    if p.title:
        return f"[ID: {p.pid}] Document (Title: {p.title}): {p.text}"
    return f"[ID: {p.pid}] Document: {p.text}"


def balanced(passages: tuple[Passage, ...], rng: random.Random) -> list[Passage]:
    """Round-robin over the labels, each label's passages in a seeded order."""
    by_label: dict[int, list[Passage]] = {}
    for p in passages:
        by_label.setdefault(p.label, []).append(p)
    queues = [by_label[lab] for lab in sorted(by_label, reverse=True)]
    for q in queues:
        rng.shuffle(q)
    return interleave(queues)


def build_from_file(f: HelmetFile, ctx: BuildContext, job: Job) -> Sample:
    """HELMET's prompt for line ``index`` of its file (titles as its first passage has)."""
    row = f.rows[job.index % len(f.rows)]
    titled = "title" in row["ctxs"][0]

    def passage(c: dict[str, object]) -> Passage:
        label = c["label"]
        if not isinstance(label, (int, float, str)):
            raise DataUnavailable(
                f"{f.path}: a passage's label is {label!r}, where HELMET's files hold a number"
            )
        return Passage(str(c["title"]) if titled else "", str(c["text"]), str(c["id"]), int(label))

    picked = pick_demos(f.demos, "qid", row["qid"], SHOTS, exclude_same=True)
    demos = [ranked_demo(str(d["qid"]), d["query"], tuple(map(passage, d["ctxs"]))) for d in picked]
    shown = [passage(c) for c in row["ctxs"]]
    head = INSTRUCTION + passage_demos(demos, passage_text, "Query", "Ranking")
    tail, context = f"\n\nQuery: {row['query']}", SEP.join(map(passage_text, shown))
    prompt, cut = fit_context(ctx, job, head, tail, ANSWER_PREFIX, context)
    return job.sample(
        prompt,
        tuple(f"{p.pid}:{p.label}" for p in shown),
        ANSWER_PREFIX,
        qid=str(row["qid"]),
        num_passages=len(shown),
        passages="helmet_file",
        context_cut=cut,
        shown_ids=[p.pid for p in shown],
        demo_ids=[d.key for d in demos],
        data_file=f.path,
        data_sha256=f.sha256,
    )


def build_rerank(ctx: BuildContext, job: Job) -> Sample:
    f = load_msmarco_file(ctx.data_dir or "", job.length, ctx.seed)
    if f is not None:
        return build_from_file(f, ctx, job)
    pool = load_msmarco(ctx.data_dir)
    order = seeded_order(len(pool.items), "queries", "msmarco_rerank", ctx.seed)
    item = pool.items[order[(job.index // PERMUTATIONS) % len(order)]]
    perm = job.index % PERMUTATIONS
    others = [d for d in pool.demos if d.key != item.key]
    demos = seeded_sample(others, SHOTS, "demos", "msmarco_rerank", item.key, ctx.seed)
    kept = balanced(item.distractors, random.Random(derive_seed("balance", item.key, ctx.seed)))

    def layout(k: int) -> list[int]:
        return list(seeded_order(k, "permutation", item.key, perm, k, ctx.seed))

    head = INSTRUCTION + passage_demos(demos, passage_text, "Query", "Ranking")
    spec = FitSpec(head, f"\n\nQuery: {item.question}", ANSWER_PREFIX, "\n", 2, "passages")
    prompt, k = fit_units(ctx, job, spec, [passage_text(p) for p in kept], layout)
    shown = [kept[i] for i in layout(k)]
    labels = [p.label for p in shown]
    return job.sample(
        prompt,
        tuple(f"{p.pid}:{p.label}" for p in shown),
        ANSWER_PREFIX,
        qid=item.key,
        num_passages=k,
        permutation=perm,
        pool_exhausted=k == len(kept),
        shown_ids=[p.pid for p in shown],
        labels={str(lab): labels.count(lab) for lab in sorted(set(labels))},
        demo_ids=[d.key for d in demos],
        passages="placed",
        data_sha256=pool.sha256,
    )


def pool_size(ctx: BuildContext, length: int) -> int:
    f = load_msmarco_file(ctx.data_dir or "", length, ctx.seed)
    if f is not None:
        return len(f.rows)
    return len(load_msmarco(ctx.data_dir).items) * PERMUTATIONS


@register
def msmarco_rerank() -> TaskSpec:
    return TaskSpec(
        name="msmarco_rerank",
        suite="helmet",
        category="rerank",
        metric=NDCG_AT_10,
        tokens_to_generate=200,
        build=build_rerank,
        # a random order of balanced labels 0-3: 1.5 expected at every rank, the ideal's 3: 50%
        chance=50.0,
        scoring_prefix=ANSWER_PREFIX,
        default_samples=300,
        pool_size=pool_size,
        description="rank MS MARCO passages for a query (NDCG@10)",
    )
