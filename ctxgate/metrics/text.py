"""Text clean-up and matching rules of the reference implementations."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

_CONTROL = re.compile(r"[\x00-\x1f]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def ruler_clean(prediction: str) -> str:
    """RULER: strip, control characters to newlines, strip again."""
    return _CONTROL.sub("\n", prediction.strip()).strip()


def string_match_all(prediction: str, references: Sequence[str]) -> float:
    pred = prediction.lower()
    return sum(r.lower() in pred for r in references) / len(references)


def string_match_part(prediction: str, references: Sequence[str]) -> float:
    pred = prediction.lower()
    return float(any(r.lower() in pred for r in references))


def helmet_normalize(text: str) -> str:
    """HELMET (SQuAD-style): lowercase, drop ASCII punctuation and a/an/the, collapse spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def substring_exact_match(prediction: str, references: Sequence[str]) -> float:
    """HELMET SubEM: a normalized reference is in the normalized prediction ("1" matches "10")."""
    pred = helmet_normalize(prediction)
    return max(float(helmet_normalize(r) in pred) for r in references)


def parse_output(output: str, prefix: str = "Answer:") -> str:
    """HELMET: the rest of the line after the first case-insensitive ``prefix``, else the first
    line, less a repeated prefix at its start (chat models sometimes echo it)."""
    match = re.search(f"(?:{re.escape(prefix)})(.*)(?:\n|$)", output, flags=re.IGNORECASE)
    if match is None:
        match = re.search(r"^(.*)(?:\n|$)", output)
    rest = match.group(1).strip() if match else ""
    return re.sub(f"^{re.escape(prefix)}", "", rest, flags=re.IGNORECASE).strip()
