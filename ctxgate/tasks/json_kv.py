"""HELMET's JSON KV retrieval: a JSON object of UUID pairs, the queried key at one of six depths
(cycling with the index), one object per sample where HELMET builds one per six questions."""

from __future__ import annotations

import itertools
import json
import random

from ctxgate.metrics.registry import HELMET_SUBEM
from ctxgate.sources.helmet_files import HelmetFile, load_json_kv_file
from ctxgate.tasks.base import BuildContext, Job, Sample, TaskSpec, fresh_lines
from ctxgate.tasks.fitting import fit_context
from ctxgate.tasks.niah import uuid4_text
from ctxgate.tasks.registration import register

INSTRUCTION = (
    "\n\nExtract the value corresponding to the specified key in the JSON object below.\n\n"
)
ANSWER_PREFIX = "Corresponding value:"
DEPTHS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
SHOTS = 2


def _uuid(rng: random.Random) -> str:
    return uuid4_text(rng.getrandbits(128))


def _pair(key: str, value: str) -> str:
    return f"{json.dumps(key)}: {json.dumps(value)}"


def _from_helmet_file(ctx: BuildContext, job: Job, f: HelmetFile) -> Sample:
    row = f.rows[job.index % len(f.rows)]
    shown = "".join(f"Key: {k}\nCorresponding value: {v}\n\n" for k, v in row["demos"][:SHOTS])
    tail = INSTRUCTION + shown + f"Key: {row['question']}"
    prompt, cut = fit_context(ctx, job, "", tail, ANSWER_PREFIX, row["context"])
    answers = row["answer"] if isinstance(row["answer"], list) else [row["answer"]]
    return job.sample(
        prompt,
        tuple(map(str, answers)),
        ANSWER_PREFIX,
        source="helmet_file",
        context_cut=cut,
        num_kvs=row.get("num_kvs"),
        data_file=f.path,
        data_sha256=f.sha256,
    )


def build_json_kv(ctx: BuildContext, job: Job) -> Sample:
    f = load_json_kv_file(ctx.data_dir, job.length, ctx.seed) if ctx.data_dir else None
    if f is not None:  # HELMET's record, its demos as HELMET formats them
        return _from_helmet_file(ctx, job, f)
    enc, rng = ctx.encoder, job.rng
    target_key, target_value = _uuid(rng), _uuid(rng)
    demos = [(_uuid(rng), _uuid(rng)) for _ in range(SHOTS)]
    demo_text = "".join(f"Key: {json.dumps(k)}\nCorresponding value: {v}\n\n" for k, v in demos)
    tail = INSTRUCTION + demo_text + f"Key: {json.dumps(target_key)}"
    frame = ctx.frame("JSON data:\n{", "}" + tail, ANSWER_PREFIX, "\n", after=False)
    budget = frame.budget(job.length, job.gen)
    # the demo pairs sit in the object too (their answers are in the context), the target once
    pairs = [_pair(k, v) for k, v in demos] + [_pair(target_key, target_value)]
    known = dict(zip(pairs, enc.encode_fresh([", " + p for p in pairs])))
    room = budget - sum(len(ids) for ids in known.values())
    if room < 0:
        why = f"its instruction, demos and target pair take {-room} tokens more than it holds"
        raise job.too_short(why)

    def filler_pair() -> tuple[str]:
        return (_pair(_uuid(rng), _uuid(rng)),)

    rows, ids, sizes = fresh_lines(enc, filler_pair, room, ", ", (True,), "json-kv-pair")
    filler = [row[0] for row in rows]
    ends = list(itertools.accumulate(sizes, initial=0))
    known.update((pair, tuple(ids[a:b])) for pair, a, b in zip(filler, ends, ends[1:]))
    others = filler + pairs[:SHOTS]
    rng.shuffle(others)
    depth = DEPTHS[job.index % len(DEPTHS)]
    position = round(depth * len(others))
    entries = others[:position] + [pairs[SHOTS]] + others[position:]
    job.need_room(len(entries), SHOTS + 1, "key-value pairs")
    piece_ids = enc.encode_fresh([entries[0]]) + [known[e] for e in entries[1:]]
    offset = len(frame.pre) + sum(len(p) for p in piece_ids[:position])
    prompt = frame.around((i for p in piece_ids for i in p), ", ".join(entries))
    return job.sample(
        prompt,
        (target_value,),
        ANSWER_PREFIX,
        depth=depth,
        position=position,
        num_kvs=len(entries),
        target_offset=offset,
        key=target_key,
        source="generated",
    )


def pool_size(ctx: BuildContext, length: int) -> int | None:
    f = load_json_kv_file(ctx.data_dir, length, ctx.seed) if ctx.data_dir else None
    return len(f.rows) if f is not None else None


@register
def json_kv() -> TaskSpec:
    return TaskSpec(
        name="json_kv",
        suite="helmet",
        category="recall",
        metric=HELMET_SUBEM,
        tokens_to_generate=100,
        build=build_json_kv,
        chance=0.0,  # a UUID drawn as the other values are is never the target's: measured
        scoring_prefix=ANSWER_PREFIX,
        description="value of a UUID key in a JSON object",
        pool_size=pool_size,
    )
