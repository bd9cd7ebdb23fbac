"""HELMET-style prompts: fixed head and tail, a middle of whole units fitted to the length,
counted in the model's tokenizer, so a cut falls only on the context, never mid-passage."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ctxgate.sources.kilt import Demo, Passage
from ctxgate.tasks.base import BuildContext, Frame, Job, Prompt, fill_count
from ctxgate.tokens.codec import PieceEncoder

SEP = "\n\n"
OMITTED = " ... [the rest of the text is omitted]"  # HELMET's suffix for a cut document
MIN_DOCUMENT_TOKENS = 16
Layout = Callable[[int], list[int]]  # k -> the order the first k units are shown in


@dataclass(frozen=True)
class FitSpec:
    """What to fit: the fixed parts around the middle (``separator`` before the answer prefix, with
    no chat template) and the least middle the task takes, ``minimum`` ``what``."""

    head: str
    tail: str
    answer_prefix: str
    separator: str = "\n"
    minimum: int = MIN_DOCUMENT_TOKENS
    what: str = "document tokens"

    def frame(self, ctx: BuildContext) -> Frame:
        return ctx.frame(self.head, self.tail, self.answer_prefix, self.separator, after=False)


def fit_units(
    ctx: BuildContext, job: Job, spec: FitSpec, units: Sequence[str], layout: Layout | None = None
) -> tuple[Prompt, int]:
    """The prompt and the units used: ``units`` in the order kept (must-haves first), shown in
    ``layout(k)`` order, tokenized as far as the room reaches, outside the encoder's cache."""
    enc, frame = ctx.encoder, spec.frame(ctx)
    budget = frame.budget(job.length, job.gen)
    encoded = _encoded_until(enc, units, budget)
    k = fill_count([len(ids) for ids in encoded], budget)
    job.need_room(k, spec.minimum, spec.what)
    while True:
        order = layout(k) if layout else list(range(k))
        body = tuple(enc.encode_fresh([units[order[0]]])[0]) if order else ()
        body += tuple(i for j in order[1:] for i in encoded[j])
        if len(body) <= budget:
            return frame.around(body, SEP.join(units[j] for j in order)), k
        if k <= spec.minimum:  # tokens merged across a boundary and the must-haves alone overflow
            over = len(body) - budget
            why = f"its fixed parts and {spec.minimum} {spec.what} take {over} tokens too many"
            raise job.too_short(why)
        k -= 1


def _encoded_until(enc: PieceEncoder, units: Sequence[str], budget: int) -> list[tuple[int, ...]]:
    """Each unit's ids behind ``SEP`` as far as ``budget`` reaches, in batches sized by the mean."""
    encoded: list[tuple[int, ...]] = []
    used, size = 0, 64
    while len(encoded) < len(units) and used <= budget:
        batch = enc.encode_fresh([SEP + u for u in units[len(encoded) : len(encoded) + size]])
        encoded.extend(batch)
        used += sum(map(len, batch))
        size = max(64, (budget - used) * len(encoded) // max(used, 1) + 64)
    return encoded


def passage_demos(
    demos: Iterable[Demo], passage_text: Callable[[Passage], str], question: str, answer: str
) -> str:
    """HELMET's demos for RAG and re-rank: passages, then question and answer."""
    return "".join(
        f"{SEP.join(map(passage_text, d.passages))}\n\n{question}: {d.question}\n{answer}: "
        f"{d.answer}{SEP}"
        for d in demos
    )


def fit_document(
    ctx: BuildContext, job: Job, spec: FitSpec, text: str, suffix: str = OMITTED
) -> tuple[Prompt, int, bool]:
    """One long document cut to fit (ending with ``suffix``), its tokens, whether it was cut: its
    first tokens decoded, as HELMET cuts; a long book is encoded in growing prefixes."""
    enc, frame = ctx.encoder, spec.frame(ctx)
    budget = frame.budget(job.length, job.gen)
    end = enc.encode_fresh([suffix])[0] if suffix else ()
    job.need_room(budget - len(end), spec.minimum, spec.what)
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
    prompt, _, cut = fit_document(ctx, job, FitSpec(head, tail, answer_prefix), context, suffix="")
    return prompt, cut
