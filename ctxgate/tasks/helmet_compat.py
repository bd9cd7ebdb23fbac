"""HELMET's own prompts for its long-document and citation tasks (``--helmet-compat``): the
pre-cut of ``data.py`` in Llama-2 tokens (ALCE: a fixed number of documents), then
``model_utils.tokenize``'s cut of the context's end, and ctxgate's further cuts while the prompt is
still over L - gen (docs/decisions.md)."""

from __future__ import annotations

import functools
from array import array
from typing import Any

from ctxgate.tasks.base import BuildContext, Job, Prompt
from ctxgate.tasks.fitting import MIN_DOCUMENT_TOKENS, OMITTED, FitSpec, fit_document
from ctxgate.tokens.codec import PieceEncoder

# L minus the length in HELMET's dataset names (configs/longqa.yaml, summ.yaml, _short)
PRECUT_SLACK = dict(
    narrativeqa=300, infbench_qa=210, infbench_mc=210, infbench_sum=1400, multi_lexsum=700
)
# ALCE's documents at HELMET's lengths (configs/cite.yaml, cite_short.yaml; 4K: the paper)
ALCE_DOCS = {4096: 8, 8192: 30, 16384: 75, 32768: 165, 65536: 345, 131072: 700}
# the tasks whose prompts --helmet-compat changes
COMPAT_TASKS = frozenset({*PRECUT_SLACK, "alce_asqa", "alce_qampari"})


def transformers_tokenizer(enc: PieceEncoder, flag: str) -> Any:
    tok = getattr(enc.raw, "tok", None)
    if tok is None:
        raise ValueError(
            f"{flag} needs a Hugging Face tokenizer, and this backend has none: drop "
            "--helmet-compat"
        )
    return tok


def check_tokenizers(model: PieceEncoder, length: PieceEncoder | None) -> None:
    """Raises ValueError where HELMET's cuts cannot run (no fast tokenizer's offsets)."""
    transformers_tokenizer(model, "--helmet-compat")
    counted = length or model
    if not getattr(transformers_tokenizer(counted, "--helmet-compat"), "is_fast", False):
        flag = "--helmet-tokenizer" if length else "the model's tokenizer"
        raise ValueError(
            f"{flag} has no tokenizer.json, and HELMET's pre-cut needs its offsets: "
            "give a folder with tokenizer.json"
        )


def precut(ctx: BuildContext, job: Job, text: str) -> str:
    """``truncate_llama2``: keep L - slack - len(suffix) tokens of a longer document."""
    enc = ctx.helmet_encoder or ctx.encoder
    flag = "--helmet-tokenizer" if ctx.helmet_encoder else "--helmet-compat"
    tok = transformers_tokenizer(enc, flag)
    keep = job.length - PRECUT_SLACK[job.task]
    separator = len(tok(OMITTED)["input_ids"])
    job.need_room(keep - separator, MIN_DOCUMENT_TOKENS, "document tokens after HELMET's pre-cut")
    ends = _token_ends(tok, text)
    return text if len(ends) <= keep else text[: ends[keep - separator]] + OMITTED


@functools.lru_cache(maxsize=16)
def _token_ends(tok: Any, text: str) -> array[int]:
    # NarrativeQA asks many questions of one script, at every length: a document is tokenized once
    offsets = tok(text, return_offsets_mapping=True, verbose=False)["offset_mapping"]
    return array("q", [end for _, end in offsets])


def helmet_ids(ctx: BuildContext, job: Job, spec: FitSpec, context: str) -> tuple[Prompt, str, int]:
    """``model_utils.tokenize``'s prompt, context shown and context tokens (``spec.minimum`` unused:
    HELMET cuts the context until the prompt fits)."""
    tok = transformers_tokenizer(ctx.encoder, "--helmet-compat")
    limit = job.length - job.gen

    def rendered(shown: str) -> str:
        user = spec.head + shown + spec.tail
        if ctx.chat:
            messages = [{"role": "user", "content": user}]
            return str(ctx.encoder.raw.render(messages))  # type: ignore[attr-defined]
        return user + spec.separator + spec.answer_prefix

    def render(shown: str) -> tuple[int, ...]:
        # a chat prompt as apply_chat_template tokenizes it, without BOS
        return ctx.encoder.whole(rendered(shown), not ctx.chat)

    ids = render(context)
    while len(ids) > limit:
        over = len(ids) - limit
        if tok.is_fast:
            offsets = tok(context, return_offsets_mapping=True, verbose=False)["offset_mapping"]
            shorter = context[: offsets[-over][0]] if over <= len(offsets) else ""
        else:  # HELMET decodes the kept ids of a tokenizer without offsets
            shorter = tok.decode(tok(context, verbose=False)["input_ids"][:-over])
        if len(shorter) >= len(context) or not shorter:
            raise job.too_short(f"its fixed parts take {over} tokens more than the context holds")
        context = shorter
        ids = render(context)
    return Prompt(ids, rendered(context), not ctx.chat), context, len(ids) - len(render(""))


def long_document(
    ctx: BuildContext, job: Job, spec: FitSpec, text: str
) -> tuple[Prompt, int, bool]:
    """``fit_document``'s prompt, or HELMET's under ``--helmet-compat``."""
    if not ctx.helmet_compat:
        return fit_document(ctx, job, spec, text)
    prompt, shown, tokens = helmet_ids(ctx, job, spec, precut(ctx, job, text))
    return prompt, tokens, shown != text
