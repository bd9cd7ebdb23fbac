"""HELMET's length selection (``data.py``: ``filter_length``): NarrativeQA's documents over 131072
tokens, Multi-LexSum's and InfiniteBench's of at least 65536, counted in ``--helmet-tokenizer`` or
the model's (docs/decisions.md), each only as far as the answer needs."""

from __future__ import annotations

import hashlib
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from ctxgate.sources.errors import DataNotGiven
from ctxgate.tasks.base import BuildContext
from ctxgate.tokens.codec import PieceEncoder

# HELMET's thresholds, BOS included (NarrativeQA: longer than 131072)
HELMET_MIN_TOKENS = {
    "narrativeqa": 131073,
    **dict.fromkeys(("multi_lexsum", "infbench_qa", "infbench_mc", "infbench_sum"), 65536),
}
# (task, data digest, tokenizer) -> indices kept
_KEPT: dict[tuple[str, str, str], tuple[int, ...]] = {}


def has_tokens(enc: PieceEncoder, text: str, n: int) -> bool:
    if len(text.encode("utf-8")) < n:  # every token covers at least one byte
        return False
    chars = n
    while True:
        (ids,) = enc.encode_fresh([text[:chars]])
        if len(ids) >= n:
            return True
        if chars >= len(text):
            return False
        # aim just past the threshold at this prefix's rate, and at least double
        chars = max(2 * chars, int(chars * n / max(len(ids), 1) * 1.05))


class Document(Protocol):
    @property
    def context(self) -> str: ...


def helmet_selection(
    task: str, items: Sequence[Document], digest: str, ctx: BuildContext
) -> tuple[int, ...]:
    """Indices of the items HELMET keeps for ``task``, counted in ``--helmet-tokenizer``, else the
    model's tokenizer."""
    enc, counted_in = ctx.encoder, "the model's tokenizer"
    if ctx.helmet_encoder is not None:
        enc, counted_in = ctx.helmet_encoder, f"--helmet-tokenizer {ctx.helmet_tokenizer}"
    key = (task, digest, enc.identity)
    if key not in _KEPT:
        # NarrativeQA asks many questions of one document: count it once
        verdicts: dict[str, bool] = {}
        kept = []
        for i, item in enumerate(items):
            doc = hashlib.sha256(item.context.encode("utf-8")).hexdigest()
            if doc not in verdicts:
                verdicts[doc] = has_tokens(enc, item.context, HELMET_MIN_TOKENS[task] - 1)
            if verdicts[doc]:
                kept.append(i)
        _KEPT[key] = tuple(kept)
    if not _KEPT[key]:
        raise DataNotGiven(
            f"{task}: no document in the data is at least {HELMET_MIN_TOKENS[task]} tokens, "
            f"HELMET's selection (counted in {counted_in}, BOS included); give the full dataset "
            f"with --data-dir{_fixture_hint()}"
        )
    return _KEPT[key]


def _fixture_hint() -> str:
    script = Path(__file__).resolve().parents[2] / "fixtures" / "make_helmet_fixtures.py"
    if not script.is_file():
        return ""
    command = shlex.join([sys.executable, str(script), "--long-documents", "out/helmet_data"])
    return f" (long fixture documents: `{command}`, then --data-dir out/helmet_data)"
