"""OpenAI MRCR's grade, as its dataset card defines it: an output that does not start with the
sample's random string scores 0; else, the random string off the output and the answer (where it
starts it), difflib's ``SequenceMatcher(None, output, answer).ratio()``, in that order (its junk
heuristic looks at the second sequence only). Nothing is stripped or normalized. References are
``(answer, random string)``, the answer as the data gives it."""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher


def grade(output: str, answer: str, prefix: str) -> float:
    if not output.startswith(prefix):
        return 0.0
    rest = output[len(prefix) :]
    gold = answer[len(prefix) :] if answer.startswith(prefix) else answer
    return float(SequenceMatcher(None, rest, gold).ratio())


def score(output: str, references: Sequence[str], answer_prefix: str | None) -> tuple[float, str]:
    if len(references) != 2:
        raise ValueError(
            "MRCR needs references (answer, random string to prepend), "
            f"got {list(references)!r}: give both, the answer first "
            "(ctxgate score --metric mrcr_ratio --answer ANSWER --answer RANDOM_STRING)"
        )
    answer, prefix = references
    return grade(output, answer, prefix), output
