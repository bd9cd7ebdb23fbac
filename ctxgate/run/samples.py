"""A case's samples: built one at a time through the task's builder, what the predictions file
keeps of each prompt, and the hash that says two runs built the same prompts."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence

from ctxgate.tasks.base import BuildContext, Sample, TaskSpec
from ctxgate.tasks.build import build_sample, fits_at_all, task_context

# tokens of context before a needle (twice as many from it on), and of the prompt's end
EXCERPT_TOKENS = 40


def excerpts(sample: Sample, decode: Callable[[Sequence[int]], str]) -> dict[str, object]:
    """What the predictions file keeps of a prompt instead of the prompt (up to a million tokens):
    the text around each needle, with the needle and its depth, and the prompt's end."""
    ids, meta = sample.input_ids, sample.meta
    offsets = list(meta.get("needle_offsets") or ())
    depths = list(meta.get("depths") or ()) or [None] * len(offsets)
    return {
        "needles": [
            {
                "needle": needle,
                "depth": depth,
                "text": decode(ids[max(0, at - EXCERPT_TOKENS) : at + 2 * EXCERPT_TOKENS]),
            }
            for needle, at, depth in zip(meta.get("needles") or (), offsets, depths, strict=False)
        ],
        "end": decode(ids[-EXCERPT_TOKENS:]),
    }


def iter_samples(
    spec: TaskSpec, ctx: BuildContext, length: int, n: int, seed: int
) -> Iterator[Sample]:
    """One at a time: a case holds one prompt (up to 128K tokens) in memory, not n, and starts
    generating at once. A sample short of material ends the case (``MaterialExhausted``)."""
    for i in range(n):
        yield build_sample(spec, ctx, length, i, seed)


def samples_to_run(spec: TaskSpec, ctx: BuildContext, length: int, requested: int) -> int:
    """``requested``, or the task's pool when its data holds fewer distinct samples (no repeats)."""
    # a length the task cannot take at all is refused by build_sample before its pool is read
    pool = (
        spec.pool_size(task_context(spec, ctx), length)
        if spec.pool_size and fits_at_all(spec, length)
        else None
    )
    return requested if pool is None else min(requested, pool)


def build_samples(
    spec: TaskSpec, ctx: BuildContext, length: int, n: int, seed: int
) -> list[Sample]:
    return list(iter_samples(spec, ctx, length, n, seed))


def data_hash(sample_digests: Sequence[str]) -> str:
    return hashlib.sha256("".join(sample_digests).encode("ascii")).hexdigest()
