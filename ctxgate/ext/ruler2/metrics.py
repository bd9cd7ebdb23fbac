"""RULERv2's scoring: ``eval_ruler2``'s match types (all, part, 2steps: a reference found in the
output, or one less its word error rate) and ``eval_mcq``'s letter for the multiple-choice tasks."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ctxgate.api import Metric, Scored

_DOCUMENT = re.compile(r"Document \d+:(?:.*\n)+?\n")
_LETTER_LAST = re.compile(r"\b[A-J]\b(?!.*\b[A-J]\b)", re.DOTALL)
_ANSWER_LINE = re.compile(
    r"(?i)[\*\_]{0,2}Answer[\*\_]{0,2}\s*:[\s\*\_]{0,2}\s*([A-Z])(?![a-zA-Z0-9])"
)


def post_process(text: str) -> str:
    """The text after the last ``</think>``, then after the last ``Answer:``."""
    if "</think>" in text:
        text = text.split("</think>")[-1]
    if "Answer:" in text:
        text = text.split("Answer:")[-1]
    return text


def word_edits(a: Sequence[str], b: Sequence[str]) -> int:
    """Levenshtein distance between two word lists (``editdistance.eval``)."""
    row = list(range(len(b) + 1))
    for i, word in enumerate(a, start=1):
        diagonal, row[0] = row[0], i
        for j, other in enumerate(b, start=1):
            diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diagonal + (word != other))
    return row[-1]


def one_less_wer(prediction: str, reference: str) -> float:
    words = reference.split()
    if not words:
        return float("-inf")  # the reference's infinite rate
    return 1 - word_edits(prediction.split(), words) / len(words)


def _hit(prediction: str, reference: str) -> float:
    pred, ref = prediction.lower(), reference.lower()
    return max(1.0 if ref in pred else 0.0, one_less_wer(pred, ref))


def match_all(prediction: str, references: Sequence[str], prefix: str | None = None) -> Scored:
    said = post_process(prediction)
    return sum(_hit(said, r) for r in references) / len(references), said


def match_2steps(prediction: str, references: Sequence[str], prefix: str | None = None) -> Scored:
    said = post_process(prediction).split("\n\n")[-1]
    return sum(_hit(said, r) for r in references) / len(references), said


def match_part(prediction: str, references: Sequence[str], prefix: str | None = None) -> Scored:
    said = _DOCUMENT.sub("", post_process(prediction))
    return max(_hit(said, r) for r in references), said


def boxed(text: str) -> str | None:
    """math_grader's ``extract_answer``: the last ``\\boxed{...}``'s content, braces balanced."""
    start = text.rfind("\\boxed")
    if start < 0:
        return None
    depth = 0
    for at in range(start, len(text)):
        depth += (text[at] == "{") - (text[at] == "}")
        if text[at] == "}" and depth == 0:
            found = text[start : at + 1]
            left = "\\boxed{"
            return found[len(left) : -1] if found.startswith(left) else None
    return None


def letter(text: str) -> str | None:
    """``eval_mcq``'s ``extract_letter``."""
    parsed = boxed(text)
    if parsed is not None and len(parsed) != 1:
        found = _LETTER_LAST.findall(parsed)
        if found:
            parsed = found[-1].strip()
    if parsed is None:
        found = _ANSWER_LINE.findall(text)
        if found:
            parsed = found[-1].strip()
    return parsed


def multichoice(prediction: str, references: Sequence[str], prefix: str | None = None) -> Scored:
    said = letter(prediction)
    return float(said == references[0]), said or ""


ALL = Metric(
    "ruler2_all", match_all, "every reference in the output, or one less its word error rate"
)
PART = Metric(
    "ruler2_part",
    match_part,
    "any reference in the output less its copied documents, or one less its word error rate",
)
TWO_STEPS = Metric(
    "ruler2_2steps",
    match_2steps,
    "every reference in the output's last paragraph, or one less its word error rate",
)
MULTICHOICE = Metric(
    "ruler2_multichoice",
    multichoice,
    "the last boxed letter (else the last 'Answer: X') is the answer",
)
METRICS = (ALL, PART, TWO_STEPS, MULTICHOICE)
