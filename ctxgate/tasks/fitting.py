"""HELMET-style prompts: fixed head and tail, a middle of whole units fitted to the length,
counted in the model's tokenizer, so a cut falls only on the context, never mid-passage."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from ctxgate.sources.kilt import Demo, Passage
from ctxgate.tasks.base import BuildContext, Job, Prompt, fill_count

SEP = "\n\n"


def fit_units(
    ctx: BuildContext,
    job: Job,
    head: str,
    tail: str,
    answer_prefix: str,
    separator: str,
    units: Sequence[str],
    minimum: int,
    what: str,
    layout: Callable[[int], list[int]] | None = None,
) -> tuple[Prompt, int]:
    """The prompt and the units used: ``units`` in the order kept (must-haves first), shown in
    ``layout(k)`` order, tokenized as far as the room reaches, outside the encoder's cache."""
    enc = ctx.encoder
    frame = ctx.frame(head, tail, answer_prefix, separator, after=False)
    budget = frame.budget(job.length, job.gen)
    encoded: list[tuple[int, ...]] = []
    used = 0
    while len(encoded) < len(units) and used <= budget:
        batch = units[len(encoded) : len(encoded) + 64]
        for ids in enc.encode_fresh([SEP + u for u in batch]):
            encoded.append(ids)
            used += len(ids)
    k = fill_count([len(ids) for ids in encoded], budget)
    job.need_room(k, minimum, what)
    while True:
        order = layout(k) if layout else list(range(k))
        body = tuple(enc.encode_fresh([units[order[0]]])[0]) if order else ()
        body += tuple(i for j in order[1:] for i in encoded[j])
        if len(body) <= budget:
            return frame.around(body, SEP.join(units[j] for j in order)), k
        if k <= minimum:  # tokens merged across a boundary and the must-haves alone overflow
            why = f"its fixed parts and {minimum} {what} take {len(body) - budget} tokens too many"
            raise job.too_short(why)
        k -= 1


def passage_demos(
    demos: Iterable[Demo], passage_text: Callable[[Passage], str], question: str, answer: str
) -> str:
    """HELMET's demos for RAG and re-rank: passages, then question and answer."""
    return "".join(
        f"{SEP.join(map(passage_text, d.passages))}\n\n{question}: {d.question}\n{answer}: "
        f"{d.answer}{SEP}"
        for d in demos
    )


OMITTED = " ... [the rest of the text is omitted]"  # HELMET's suffix for a cut document
MIN_DOCUMENT_TOKENS = 16


def fit_document(
    ctx: BuildContext,
    job: Job,
    head: str,
    tail: str,
    answer_prefix: str,
    separator: str,
    text: str,
    suffix: str = OMITTED,
    minimum: int = MIN_DOCUMENT_TOKENS,
    what: str = "document tokens",
) -> tuple[Prompt, int, bool]:
    """One long document cut to fit (ending with ``suffix``), its tokens, whether it was cut."""
    frame = ctx.frame(head, tail, answer_prefix, separator, after=False)
    budget = frame.budget(job.length, job.gen)
    job.need_room(budget - len(encoded_suffix(ctx, suffix)), minimum, what)
    doc, shown, cut = cut_document(ctx, text, budget, suffix)
    return frame.around(doc, shown), len(doc), cut


def fit_context(
    ctx: BuildContext, job: Job, head: str, tail: str, answer_prefix: str, context: str
) -> tuple[Prompt, bool]:
    """A pre-built context cut from its end, as HELMET cuts it at run time; whether cut."""
    prompt, _, cut = fit_document(ctx, job, head, tail, answer_prefix, "\n", context, suffix="")
    return prompt, cut


def cut_document(
    ctx: BuildContext, text: str, budget: int, suffix: str
) -> tuple[tuple[int, ...], str, bool]:
    """The first ``budget`` tokens (a longer text ends with ``suffix``), their text decoded,
    as HELMET cuts, and whether it was cut; long books are encoded in growing prefixes."""
    enc = ctx.encoder
    chars = max(budget * 6, 1024)
    while True:
        (ids,) = enc.encode_fresh([text[:chars]])
        if len(ids) > budget or chars >= len(text):
            break
        chars *= 2
    if len(ids) <= budget and chars >= len(text):
        return ids, text, False
    kept = ids[: max(budget - len(encoded_suffix(ctx, suffix)), 0)]
    return kept + encoded_suffix(ctx, suffix), enc.decode(kept) + suffix, True


def encoded_suffix(ctx: BuildContext, suffix: str) -> tuple[int, ...]:
    return ctx.encoder.encode_fresh([suffix])[0] if suffix else ()
