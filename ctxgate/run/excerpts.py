"""What the predictions file keeps of a sample's prompt instead of the prompt (up to a million
tokens): the text around each needle, with the needle and its depth, and the prompt's end."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ctxgate.tasks.base import Sample

# tokens of context before a needle (twice as many from it on), and of the prompt's end
EXCERPT_TOKENS = 40


def excerpts(sample: Sample, decode: Callable[[Sequence[int]], str]) -> dict[str, object]:
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
