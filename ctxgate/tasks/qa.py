"""RULER qa_1 (SQuAD) and qa_2 (HotpotQA): the gold documents among distractors, filled to the
length; past the data's documents, the whole pool again, as RULER does."""

from __future__ import annotations

import itertools
import threading
import weakref

from ctxgate.data import qa as qa_data
from ctxgate.metrics.registry import STRING_MATCH_PART
from ctxgate.seeding import seeded_order
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec, shuffle
from ctxgate.tasks.registration import register_all
from ctxgate.tokens.codec import PieceEncoder

INSTRUCTION = (
    "Answer the question based on the given documents. "
    "Only give me the answer and do not output any other words."
)
HEAD = INSTRUCTION + "\n\nThe following are given documents.\n\n"
TAIL = "\n\n" + INSTRUCTION + "\n\nQuestion: {query}"
ANSWER_PREFIX = " Answer:"


def _header(i: int) -> str:
    return f"Document {i}:\n" if i == 1 else f"\n\nDocument {i}:\n"


class _Headers:
    """One encoder's ids of the document headers, by number."""

    def __init__(self, enc: PieceEncoder) -> None:
        self.enc = enc
        self.ids: list[tuple[int, ...]] = [()]  # ids[i]: _header(i)'s
        self.lock = threading.Lock()

    def __call__(self, i: int) -> tuple[int, ...]:
        if i >= len(self.ids):
            with self.lock:
                while i >= len(self.ids):
                    more = range(len(self.ids), max(i + 1, 2 * len(self.ids)))
                    self.ids.extend(self.enc.encode_many([_header(n) for n in more]))
        return self.ids[i]


_HEADERS: weakref.WeakKeyDictionary[PieceEncoder, _Headers] = weakref.WeakKeyDictionary()


def load_pool(task: str, ctx: BuildContext) -> qa_data.QAPool:
    if task == "qa_1":
        return qa_data.load_squad(ctx.squad_source or qa_data.DEFAULT_SQUAD)
    return qa_data.load_hotpotqa(ctx.hotpotqa_source or qa_data.DEFAULT_HOTPOTQA)


def build_qa(ctx: BuildContext, job: Job) -> Sample:
    enc, rng, pool = ctx.encoder, job.rng, load_pool(job.task, ctx)
    # a seeded order without replacement: samples of a case ask different questions
    order = seeded_order(len(pool.questions), "qa-order", job.task, ctx.seed)
    q = pool.questions[order[job.index % len(order)]]
    frame = ctx.frame(HEAD, TAIL.format(query=q.query), ANSWER_PREFIX)
    budget = frame.budget(job.length, job.gen)
    related = [d for d in q.related if d not in q.gold]
    rng.shuffle(related)
    taken = set(q.gold) | set(related)
    others = [d for d in range(len(pool.docs)) if d not in taken]
    rng.shuffle(others)
    candidates = list(q.gold) + related + others
    # RULER: past the data's documents, the whole pool again (gold included), to fill the length
    doc_ids = enc.encode_many([pool.docs[d] for d in candidates])
    sizes = [len(ids) for ids in doc_ids]
    headers = _HEADERS.get(enc) or _HEADERS.setdefault(enc, _Headers(enc))
    used = itertools.accumulate(
        sizes[(n - 1) % len(sizes)] + len(headers(n)) for n in itertools.count(1)
    )
    k = sum(1 for _ in itertools.takewhile(lambda total: total <= budget, used))
    job.need_room(k, len(q.gold), "documents (the gold ones included)")
    chosen = [candidates[i % len(candidates)] for i in range(k)]
    shuffle(rng, chosen)  # per sample: the gold document is not at the same place in every one
    by_doc = dict(zip(candidates, doc_ids))
    pieces = itertools.chain.from_iterable(
        zip(map(headers, range(1, k + 1)), map(by_doc.__getitem__, chosen))
    )
    text = "".join(_header(n) + pool.docs[d] for n, d in enumerate(chosen, 1))
    return job.sample(
        frame.around(itertools.chain.from_iterable(pieces), text),
        q.answers,
        ANSWER_PREFIX,
        num_docs=k,
        gold_documents=[chosen.index(g) + 1 for g in q.gold],
        data_sha256=pool.sha256,
        pool_passes=-(-k // len(candidates)),  # over 1: the pool was repeated to fill the length
    )


def _spec(name: str, description: str) -> TaskSpec:
    return TaskSpec(
        name=name,
        suite="ruler",
        chat_template=True,
        category="qa",
        metric=STRING_MATCH_PART,
        tokens_to_generate=32,
        build=build_qa,
        # another answer scores only where it contains this one's: declared 0 (invented files)
        chance=0.0,
        description=description,
        pool_size=lambda ctx, length: len(load_pool(name, ctx).questions),
    )


TASKS = {
    "qa_1": "single-hop QA over SQuAD v2 documents",
    "qa_2": "multi-hop QA over HotpotQA distractor documents",
}
register_all(__name__, map(_spec, TASKS, TASKS.values()))
