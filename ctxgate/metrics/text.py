"""Text clean-up and matching rules of the reference implementations."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from difflib import SequenceMatcher

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


def nolima_contains(response: str, gold_answers: Sequence[str]) -> float:
    """NoLiMa's ``contains`` (evaluation/async_evaluate.py, ``_evaluate_response``), the one its run
    configs use: 1 when any gold answer (the needle's character name) is a substring of the raw
    response, else 0. No normalization: case, whitespace and punctuation count, as in the
    reference."""
    return float(any(gold in response for gold in gold_answers))


def mrcr_grade(output: str, answer: str, prefix: str) -> float:
    """OpenAI MRCR's grade, as its dataset card defines it: an output that does not start with the
    sample's random string scores 0; else, the random string off the output and the answer (where
    it starts it), difflib's ``SequenceMatcher(None, output, answer).ratio()``, in that order (its
    junk heuristic looks at the second sequence only). Nothing is stripped or normalized."""
    if not output.startswith(prefix):
        return 0.0
    rest = output[len(prefix) :]
    gold = answer[len(prefix) :] if answer.startswith(prefix) else answer
    return float(SequenceMatcher(None, rest, gold).ratio())
