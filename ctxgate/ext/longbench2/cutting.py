"""pred.py's middle cut of a prompt (``tokenizer.encode`` of the whole text, then the first and last
halves of the budget decoded) without tokenizing a context of up to two million words whole.

Only the text's two ends are tokenized, each cut off at a *split*: a place where the tokenizer's ids
of the text are the ids of the part before it followed by those of the part after it. A split is
sought at the start of a whitespace run (where a word ends) and checked, not assumed: the text
around it (``Scale.reach`` characters each side) must tokenize to the same ids whole as in its two
parts. The first half's ids are then the whole text's first ids, the last half's its last ids, and
the decoded text is byte for byte what the whole text's ids give. Wherever no checked split is found
near enough (a text without whitespace, a tokenizer that merges across words) or the text is not
much longer than the budget, the whole text is tokenized, as pred.py does."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ctxgate.api import PieceEncoder

from .prompts import middle

_WORD_END = re.compile(r"(?<=\S)\s")  # a whitespace run's first character


@dataclass(frozen=True)
class Scale:
    """How far the search for the ends reaches, in characters; ``ends`` False tokenizes every text
    whole (pred.py's way, for comparison)."""

    reach: int = 256  # each side of a split, tokenized whole and in parts to check it
    look: int = 4096  # past (head) or before (tail) a guess, searched for a split
    tries: int = 8  # word ends checked near a guess before giving up
    sample: int = 8192  # of each end, tokenized to guess characters per id
    ends: bool = True


SCALE = Scale()
WHOLE = Scale(ends=False)


def truncated(enc: PieceEncoder, text: str, budget: int, scale: Scale = SCALE) -> str:
    """pred.py's ``query_llm`` cut: the text tokenized as ``tokenizer.encode`` does (BOS first);
    past ``budget`` ids, its first and last halves decoded without special tokens; the text itself
    (the same object) where it fits."""
    kept = kept_ids(enc, text, budget, scale)
    if kept is None:
        return text
    special = set(enc.prefix) | set(enc.raw.eos_ids())
    return enc.decode([i for i in kept if i not in special])


def kept_ids(
    enc: PieceEncoder, text: str, budget: int, scale: Scale = SCALE
) -> Sequence[int] | None:
    """The ids pred.py's cut keeps, None where the text's ids fit the budget."""
    found = from_ends(enc, text, budget, scale) if scale.ends else None
    if found is not None:
        return found
    ids = enc.whole(text)
    return None if len(ids) <= budget else middle(ids, budget)


def from_ends(enc: PieceEncoder, text: str, budget: int, scale: Scale) -> list[int] | None:
    """The kept ids from the text's two ends alone; None where that cannot be shown to give the
    whole text's (then the whole text is tokenized)."""
    first, last = budget // 2, budget - budget // 2  # pred.py's [:b//2] and [-b//2:]
    if first < 1 or len(text) < 2 * scale.sample:
        return None
    guess = _per_id(enc, text[: scale.sample])
    if len(text) < 2 * budget * guess:  # not much longer than the budget: whole costs little
        return None
    half = len(text) // 2
    head = _head(enc, text, first + len(enc.prefix), guess, scale)
    if head is None or head[0] > half:
        return None
    tail = _tail(enc, text, last, _per_id(enc, text[-scale.sample :]), scale)
    if tail is None or tail[0] < half:
        return None
    # both splits hold: the whole text's ids are the head's, the middle's, then the tail's
    if len(head[1]) + len(tail[1]) <= budget:
        return None
    return [*head[1][:first], *tail[1][-last:]]


def _per_id(enc: PieceEncoder, sample: str) -> float:
    return len(sample) / max(1, len(enc.raw.encode(sample)))


def _head(
    enc: PieceEncoder, text: str, need: int, per_id: float, scale: Scale
) -> tuple[int, tuple[int, ...]] | None:
    """A split with at least ``need`` ids before it (the prefix among them), and those ids."""
    at = int(need * per_id * 1.05) + scale.reach
    for _ in range(4):  # a guess short of ``need`` grows from what the last cut measured
        cut = _split(enc, text, at, scale, forward=True)
        if cut is None:
            return None
        ids = enc.whole(text[:cut])
        if len(ids) >= need:
            return cut, ids
        at = cut + int((need - len(ids)) * cut / max(1, len(ids)) * 1.1) + scale.reach
    return None


def _tail(
    enc: PieceEncoder, text: str, need: int, per_id: float, scale: Scale
) -> tuple[int, tuple[int, ...]] | None:
    """A split with at least ``need`` ids after it, and those ids."""
    back = int(need * per_id * 1.05) + scale.reach
    for _ in range(4):
        cut = _split(enc, text, len(text) - back, scale, forward=False)
        if cut is None:
            return None
        ids = enc.whole(text[cut:], bos=False)
        if len(ids) >= need:
            return cut, ids
        size = len(text) - cut
        back = size + int((need - len(ids)) * size / max(1, len(ids)) * 1.1) + scale.reach
    return None


def _split(enc: PieceEncoder, text: str, at: int, scale: Scale, forward: bool) -> int | None:
    """The first word end at or past ``at`` (``forward``), else the last before it, within
    ``scale.look`` characters, where the text splits; None where none of ``scale.tries`` does."""
    if not 0 < at < len(text):
        return None
    if forward:
        found = _WORD_END.finditer(text, at, min(len(text), at + scale.look))
        cuts = [m.start() for _, m in zip(range(scale.tries), found)]
    else:
        ends = [m.start() for m in _WORD_END.finditer(text, max(1, at - scale.look), at + 1)]
        cuts = ends[::-1][: scale.tries]
    return next((c for c in cuts if splits(enc, text, c, scale.reach)), None)


def splits(enc: PieceEncoder, text: str, cut: int, reach: int) -> bool:
    """Whether the text around ``cut`` tokenizes to the same ids whole as in its two parts."""
    left, right = text[max(0, cut - reach) : cut], text[cut : cut + reach]
    both, before, after = enc.raw.encode_batch([left + right, left, right])
    return bool(before) and bool(after) and both == before + after
