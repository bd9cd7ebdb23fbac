"""HELMET-style prompts: fixed head and tail, a middle of whole units (passages, demos) fitted to the length.

HELMET pre-builds each file for a number of passages or shots counted in Llama-2 tokens and then cuts the tail of
the context to the model's window. ctxgate counts in the model's own tokenizer instead and keeps whole units, so the
cut still falls only on the context, never on the instruction, the demos or the question, and never mid-passage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ctxgate.tasks.base import BuildContext, TaskTooShort, fill_count, make_frame, need_room

SEP = "\n\n"


def fit_units(ctx: BuildContext, task: str, length: int, gen: int, head: str, tail: str, answer_prefix: str,
              separator: str, sizes: Sequence[int], arrange: Callable[[int], list[str]], minimum: int,
              what: str) -> tuple[tuple[int, ...], int]:
    """Prompt ids and the number of units used. ``sizes`` are the token counts of the candidate units in the order
    they are kept (the must-haves first); ``arrange(k)`` lays the first k out in display order."""
    enc = ctx.encoder
    frame = make_frame(ctx, [head], [tail], answer_prefix, separator)
    budget = frame.budget(length, gen)
    k = fill_count(sizes, budget)
    need_room(task, length, k, minimum, what)
    while True:
        units = arrange(k)
        pieces = [units[0]] + [SEP + u for u in units[1:]] if units else []
        body = tuple(i for ids in enc.encode_many(pieces) for i in ids)
        if len(body) <= budget:
            return frame.pre + body + frame.post, k
        if k <= minimum:  # tokens merged across a boundary and the must-haves alone overflow
            raise TaskTooShort(f"{task} cannot be built at length {length}: its fixed parts and {minimum} "
                               f"{what} take {len(body) - budget} tokens too many; choose a longer --lengths value")
        k -= 1


def unit_sizes(ctx: BuildContext, units: Sequence[str]) -> list[int]:
    """Token counts of units as they appear after a separator."""
    return [len(ids) for ids in ctx.encoder.encode_many([SEP + u for u in units])]


def cut_document(ctx: BuildContext, text: str, budget: int, suffix: str) -> tuple[tuple[int, ...], bool]:
    """The first ``budget`` tokens of a document; a longer one is cut and ends with ``suffix`` (HELMET's
    " ... [the rest of the text is omitted]"). Long books are encoded in growing prefixes, never whole."""
    enc = ctx.encoder
    chars = max(budget * 6, 1024)
    while True:
        (ids,) = enc.encode_fresh([text[:chars]])
        if len(ids) > budget or chars >= len(text):
            break
        chars *= 2
    if len(ids) <= budget and chars >= len(text):
        return ids, False
    (tail,) = enc.encode_fresh([suffix])
    return ids[: max(budget - len(tail), 0)] + tail, True
