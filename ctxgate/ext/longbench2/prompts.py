"""LongBench v2's prompts, its middle truncation and its answer extraction, as THUDM/LongBench's v2
``pred.py`` applies them (``prompts/0shot.txt``, ``0shot_cot.txt``, ``0shot_cot_ans.txt``; the
texts below are those files' bytes, which end without a line break)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .records import Record

_QUESTION = (
    "What is the correct answer to this question: $Q$\nChoices:\n(A) $C_A$\n(B) $C_B$\n"
    "(C) $C_C$\n(D) $C_D$\n\n"
)
_FORMAT = 'Format your response as follows: "The correct answer is (insert answer here)".'
ZERO_SHOT = (
    "Please read the following text and answer the question below.\n\n<text>\n$DOC$\n</text>\n\n"
    + _QUESTION
    + _FORMAT
)
ZERO_SHOT_COT = (
    "Please read the following text and answer the questions below.\n\n<text>\n$DOC$\n</text>\n\n"
    + _QUESTION
    + "Let\u2019s think step by step:"
)
ZERO_SHOT_COT_ANS = (
    "Please read the following text and answer the questions below.\n\nThe text is too long and "
    "omitted here.\n\n"
    + _QUESTION
    + "Let\u2019s think step by step: $COT$\n\nBased on the above, what is the single, most likely "
    "answer choice? " + _FORMAT
)
# pred.py's max_len for every model of a 128K window (config/model2maxlen.json)
REFERENCE_MAX_LEN = 120000
REFERENCE_WINDOW = 131072
ANSWER_TOKENS = 128  # pred.py's max_new_tokens without chain of thought, and for its answer step
COT_TOKENS = 1024  # pred.py's max_new_tokens for the chain of thought
_PARENTHESIZED = re.compile(r"The correct answer is \(([A-D])\)")
_BARE = re.compile(r"The correct answer is ([A-D])")


def fill(template: str, record: Record, cot: str | None = None) -> str:
    """The template filled as pred.py does: one ``str.replace`` after another, in its order, each
    value stripped (so a value holding a later placeholder has it filled too), ``$COT$`` last."""
    text = template.replace("$DOC$", record.context.strip())
    text = text.replace("$Q$", record.question.strip())
    for letter, choice in zip("ABCD", record.choices, strict=True):
        text = text.replace(f"$C_{letter}$", choice.strip())
    return text if cot is None else text.replace("$COT$", cot)


def extract_answer(response: str) -> str | None:
    """pred.py's ``extract_answer``: asterisks dropped, then "The correct answer is (X)", else
    "The correct answer is X"; None where neither is found."""
    response = response.replace("*", "")
    found = _PARENTHESIZED.search(response) or _BARE.search(response)
    return found.group(1) if found else None


def middle(ids: Sequence[int], max_len: int) -> list[int]:
    """pred.py's truncation: ``ids[:max_len//2] + ids[-max_len//2:]`` where there are more than
    ``max_len``. Python's ``-max_len//2`` is ``(-max_len)//2``: an odd budget keeps one more token
    at the end than at the start."""
    if len(ids) <= max_len:
        return list(ids)
    return [*ids[: max_len // 2], *ids[-max_len // 2 :]]


def reference_budget(length: int) -> int:
    """The reference's max_len scaled to ``length``: 120,000 at 128K (131,072), in proportion
    elsewhere."""
    return length * REFERENCE_MAX_LEN // REFERENCE_WINDOW
