"""The judge prompts, kept as text files in ``rubrics/`` so they can be compared with the paper byte
for byte.

HELMET's rubrics (paper Tables 10-13; the paper abridges its second examples, the released scoring
scripts carry them in full, and these files hold that full text): ``longqa`` (NarrativeQA),
``fluency_*``, ``recall_*`` and ``precision_*`` for summaries, ``legal`` for Multi-LexSum and
``book`` for InfiniteBench Sum. ctxgate's own, used only where HELMET has no prompt: ``keypoints``
(decomposing a gold summary when the data ships no key points) and ``entailment`` (citation checks
with an LLM instead of an NLI model). docs/decisions.md says so.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

RUBRICS = tuple(
    "longqa fluency_legal fluency_book recall_legal recall_book precision_legal precision_book "
    "keypoints "
    "entailment".split()
)
_FIELD = re.compile(
    r"\{(question|correct_answers|parsed_output|text|keypoints|summary|expert_summary|premise|hypothesis)\}"
)


@cache
def template(name: str) -> str:
    if name not in RUBRICS:
        raise KeyError(f"unknown judge rubric {name!r}; choose one of {', '.join(RUBRICS)}")
    return (
        resources.files("ctxgate.judge")
        .joinpath("rubrics")
        .joinpath(f"{name}.txt")
        .read_text(encoding="utf-8")
    )


def render(name: str, **values: str) -> str:
    """One pass over the template, so a value that itself contains ``{summary}`` is never
    substituted again."""
    text = template(name)
    wanted = set(_FIELD.findall(text))
    if wanted != set(values):
        raise ValueError(f"rubric {name!r} takes {sorted(wanted)}, got {sorted(values)}")
    return _FIELD.sub(lambda m: values[m.group(1)], text)
