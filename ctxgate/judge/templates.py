"""The judge prompts, kept as text files in ``rubrics/`` so they can be compared with the paper byte
for byte. HELMET's hold the full text of its released scoring scripts (the paper's Tables 10-13
abridge it); ctxgate's own (``keypoints``, ``entailment``) serve where HELMET has none."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

RUBRICS = tuple(
    "longqa fluency_legal fluency_book recall_legal recall_book precision_legal precision_book "
    "keypoints entailment".split()
)
_FIELD = re.compile(
    r"\{(question|correct_answers|parsed_output|text|keypoints|summary|expert_summary|premise"
    r"|hypothesis)\}"
)


@cache
def template(name: str) -> str:
    if name not in RUBRICS:
        raise KeyError(f"unknown judge rubric {name!r}; choose one of {', '.join(RUBRICS)}")
    return (resources.files("ctxgate.judge") / "rubrics" / f"{name}.txt").read_text("utf-8")


def render(name: str, **values: str) -> str:
    """One pass over the template, so a value holding ``{summary}`` is never substituted again."""
    text = template(name)
    wanted = set(_FIELD.findall(text))
    if wanted != set(values):
        raise ValueError(f"rubric {name!r} takes {sorted(wanted)}, got {sorted(values)}")
    return _FIELD.sub(lambda m: values[m.group(1)], text)
