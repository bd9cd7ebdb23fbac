"""HELMET's length selection for its long-document tasks: NarrativeQA keeps documents longer than 131072 tokens,
Multi-LexSum those of at least 65536 (``data.py``: ``filter_length``), so that at every length the same long
documents are cut to fit and none enters a length whole.

HELMET counts in Llama-2's tokenizer, which cannot be downloaded here; ctxgate counts in the model's own tokenizer
(docs/decisions.md). A document is tokenized only as far as the answer needs: fewer bytes than the threshold
cannot hold that many tokens, and a prefix that already does settles it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from ctxgate.sources.errors import DataNotGiven
from ctxgate.sources.judged import LongDoc
from ctxgate.textcodec import PieceEncoder

MIN_TOKENS = {"narrativeqa": 131073, "multi_lexsum": 65536}  # HELMET: > 131072 and >= 65536
_KEPT: dict[tuple[str, str, str], tuple[int, ...]] = {}  # (task, data digest, tokenizer) -> indices kept


def has_tokens(enc: PieceEncoder, text: str, n: int) -> bool:
    """Whether ``text`` is at least ``n`` tokens long."""
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


def long_documents(task: str, items: Sequence[LongDoc], digest: str, enc: PieceEncoder) -> tuple[int, ...]:
    """Indices of the items whose document HELMET keeps for ``task``; raises when there is none."""
    key = (task, digest, enc.identity)
    if key not in _KEPT:
        verdicts: dict[str, bool] = {}  # NarrativeQA asks many questions of one document: count it once
        kept = []
        for i, item in enumerate(items):
            doc = hashlib.sha256(item.context.encode("utf-8")).hexdigest()
            if doc not in verdicts:
                verdicts[doc] = has_tokens(enc, item.context, MIN_TOKENS[task])
            if verdicts[doc]:
                kept.append(i)
        _KEPT[key] = tuple(kept)
    if not _KEPT[key]:
        raise DataNotGiven(
            f"{task}: no document in the data is {'longer than 131072' if task == 'narrativeqa' else 'at least 65536'}"
            " tokens, HELMET's selection (counted in the model's tokenizer); give the full dataset with --data-dir "
            "(the fixtures' long documents: python fixtures/make_helmet_fixtures.py --long-documents DIR)"
        )
    return _KEPT[key]
