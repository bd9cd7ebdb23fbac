"""HELMET RAG: NQ, TriviaQA, PopQA and HotpotQA over KILT passages, in HELMET's prompt; HELMET's own
at the lengths it has a file for, else the gold and the best distractors that fit, the gold at one
of six depths (sample i: question i // 6; HotpotQA: three shuffles, question i // 3)."""

from __future__ import annotations

from ctxgate.metrics.registry import HELMET_SUBEM
from ctxgate.seeding import seeded_order, seeded_sample
from ctxgate.sources.helmet_files import HelmetFile, load_rag_file, pick_demos
from ctxgate.sources.kilt import Demo, Passage, load_rag
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec
from ctxgate.tasks.fitting import SEP, FitSpec, fit_context, fit_units, passage_demos
from ctxgate.tasks.registration import register_all

INSTRUCTION = (
    "Use the given documents to write a concise and short answer to the question. Write your "
    "answer in the following format:\nAnswer: [answer]\n\n"
)
ANSWER_PREFIX = "Answer:"
SHOTS = 2
DEPTHS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
PERMUTATIONS = 3


def passage_text(p: Passage) -> str:
    return f"Document (Title: {p.title}): {p.text}"


def demo_text(demos: list[Demo]) -> str:
    return passage_demos(demos, passage_text, "Question", "Answer")


def passages(ctxs: list[dict[str, str]]) -> tuple[Passage, ...]:
    return tuple(Passage(c["title"], c["text"]) for c in ctxs)


def build_from_file(f: HelmetFile, ctx: BuildContext, job: Job) -> Sample:
    row = f.rows[job.index % len(f.rows)]
    key = row[f.key]
    # PopQA's demos come from the same split
    demos = pick_demos(f.demos, f.key, key, SHOTS, exclude_same=job.task == "kilt_popqa")
    shots = [
        Demo(str(d[f.key]), d["question"], str(d["answers"][0]), passages(d["ctxs"])) for d in demos
    ]
    context = SEP.join(map(passage_text, passages(row["ctxs"])))
    tail = f"\n\nQuestion: {row['question']}"
    head = INSTRUCTION + demo_text(shots)
    prompt, cut = fit_context(ctx, job, head, tail, ANSWER_PREFIX, context)
    return job.sample(
        prompt,
        tuple(str(a) for a in row["answers"]),
        ANSWER_PREFIX,
        question_id=str(key),
        num_passages=len(row["ctxs"]),
        passages="helmet_file",
        context_cut=cut,
        data_file=f.path,
        demo_ids=[str(d[f.key]) for d in demos],
        data_sha256=f.sha256,
    )


def copies(task: str) -> int:
    """Samples per question: one per gold depth, or per permutation of HotpotQA's passages."""
    return PERMUTATIONS if task == "kilt_hotpotqa" else len(DEPTHS)


def build_rag(ctx: BuildContext, job: Job) -> Sample:
    task = job.task
    f = load_rag_file(task, ctx.data_dir or "", job.length, ctx.seed)
    if f is not None:
        return build_from_file(f, ctx, job)
    pool = load_rag(task, ctx.data_dir)
    multi_gold = task == "kilt_hotpotqa"
    order = seeded_order(len(pool.items), "questions", task, ctx.seed)
    item = pool.items[order[(job.index // copies(task)) % len(order)]]
    copy = job.index % copies(task)
    # two demos per question, the same at every depth and length, never the question itself
    avoid = {item.key, item.question}
    allowed = [d for d in pool.demos if not avoid & {d.key, d.question}]
    demos = seeded_sample(allowed, SHOTS, "demos", task, item.key, ctx.seed)
    head = INSTRUCTION + demo_text(demos)
    tail = f"\n\nQuestion: {item.question}"
    gold = [passage_text(p) for p in item.gold[: 2 if multi_gold else 1]]
    units = gold + [passage_text(p) for p in item.distractors]

    def layout(k: int) -> list[int]:
        if multi_gold:
            return list(seeded_order(k, "permutation", task, item.key, copy, k, ctx.seed))
        where = round(DEPTHS[copy] * (k - 1))
        return list(range(1, where + 1)) + [0] + list(range(where + 1, k))

    spec = FitSpec(head, tail, ANSWER_PREFIX, "\n", len(gold), "passages (the gold ones included)")
    prompt, k = fit_units(ctx, job, spec, units, layout)
    shown = layout(k)
    return job.sample(
        prompt,
        item.answers,
        ANSWER_PREFIX,
        question_id=item.key,
        num_passages=k,
        gold_positions=[shown.index(g) + 1 for g in range(len(gold))],
        depth=None if multi_gold else DEPTHS[copy],
        permutation=copy if multi_gold else None,
        demo_ids=[d.key for d in demos],
        pool_exhausted=k == len(units),
        passages="placed",
        data_sha256=pool.sha256,
    )


def _spec(name: str, description: str) -> TaskSpec:
    def pool_size(ctx: BuildContext, length: int) -> int:
        f = load_rag_file(name, ctx.data_dir or "", length, ctx.seed)
        if f is not None:
            return len(f.rows)
        return len(load_rag(name, ctx.data_dir).items) * copies(name)

    return TaskSpec(
        name=name,
        suite="helmet",
        category="rag",
        metric=HELMET_SUBEM,
        tokens_to_generate=20,
        build=build_rag,
        # another answer scores only where it contains this one's: declared 0 (files not shipped)
        chance=0.0,
        scoring_prefix=ANSWER_PREFIX,
        description=description,
        default_samples=100 * copies(name),  # HELMET: 100 questions x every depth or permutation
        pool_size=pool_size,
    )


TASKS = {
    "kilt_nq": "Natural Questions over retrieved Wikipedia passages",
    "kilt_triviaqa": "TriviaQA over retrieved Wikipedia passages",
    "kilt_popqa": "PopQA long-tail entities (popularity < 10^3) over retrieved passages",
    "kilt_hotpotqa": "HotpotQA multi-hop: two gold passages among retrieved ones",
}
register_all(__name__, map(_spec, TASKS, TASKS.values()))
