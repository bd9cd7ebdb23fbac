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
        batch = enc.encode_fresh([SEP + u for u in units[len(encoded) : len(encoded) + 64]])
        encoded.extend(batch)
        used += sum(map(len, batch))
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
    """One long document cut to fit (ending with ``suffix``), its tokens, whether it was cut: its
    first tokens decoded, as HELMET cuts; a long book is encoded in growing prefixes."""
    enc = ctx.encoder
    frame = ctx.frame(head, tail, answer_prefix, separator, after=False)
    budget = frame.budget(job.length, job.gen)
    end = enc.encode_fresh([suffix])[0] if suffix else ()
    job.need_room(budget - len(end), minimum, what)
    chars = max(budget * 6, 1024)
    (ids,) = enc.encode_fresh([text[:chars]])
    while len(ids) <= budget and chars < len(text):
        chars *= 2
        (ids,) = enc.encode_fresh([text[:chars]])
    if len(ids) <= budget:
        return frame.around(ids, text), len(ids), False
    kept = ids[: max(budget - len(end), 0)]
    return frame.around(kept + end, enc.decode(kept) + suffix), len(kept + end), True


def fit_context(
    ctx: BuildContext, job: Job, head: str, tail: str, answer_prefix: str, context: str
) -> tuple[Prompt, bool]:
    """A pre-built context cut from its end, as HELMET cuts it at run time; whether cut."""
    prompt, _, cut = fit_document(ctx, job, head, tail, answer_prefix, "\n", context, suffix="")
    return prompt, cut
