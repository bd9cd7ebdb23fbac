"""The judge's rubrics and verdicts. The prompts are text files in ``rubrics/``, to compare with the
paper byte for byte: HELMET's hold the full text of its released scoring scripts (the paper's Tables
10-13 abridge it); ctxgate's own (``keypoints``, ``entailment``) serve where HELMET has none. A
verdict is the last ``{...}`` of the reply, as HELMET reads it (also in the single-quoted form the
paper's tables print), each field checked: a score outside the rubric's range is a failed verdict,
never clamped into range."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
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


_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)


class Unparseable(ValueError):
    """The reply holds no usable verdict; the message says what was wrong."""


def last_object(text: str) -> dict[str, object]:
    for candidate in reversed(_OBJECT.findall(text)):
        for parse in (json.loads, ast.literal_eval):
            try:
                value = parse(candidate)
            except (ValueError, SyntaxError, RecursionError):
                continue
            if isinstance(value, dict):
                return value
    raise Unparseable(f"no JSON object in the reply: {text[-200:]!r}")


def _integer(d: dict[str, object], key: str, low: int, high: int | None) -> int:
    if key not in d:
        raise Unparseable(f"the verdict lacks {key!r}: {d}")
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise Unparseable(f"{key!r} must be a whole number, got {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        raise Unparseable(f"{key!r} = {value} is outside {low}..{'' if high is None else high}")
    return value


def longqa(d: dict[str, object]) -> tuple[int, int]:
    """(fluency 0/1, correctness 0-3)."""
    return _integer(d, "fluency", 0, 1), _integer(d, "correctness", 0, 3)


def fluency(d: dict[str, object]) -> int:
    return _integer(d, "fluency", 0, 1)


def recall(n_keypoints: int) -> Callable[[dict[str, object]], int]:
    return lambda d: _integer(d, "recall", 0, n_keypoints)


def precision(d: dict[str, object]) -> tuple[int, int]:
    """(supported sentences, sentence count), the judge's own count of the summary's sentences."""
    count = _integer(d, "sentence_count", 0, None)
    return _integer(d, "precision", 0, count), count


def keypoints(d: dict[str, object]) -> tuple[str, ...]:
    points = d.get("key_points")
    if (
        not isinstance(points, list)
        or not points
        or not all(isinstance(p, str) and p.strip() for p in points)
    ):
        raise Unparseable(f"'key_points' must be a non-empty list of strings, got {points!r}")
    return tuple(p.strip() for p in points)


def entailment(d: dict[str, object]) -> bool:
    return bool(_integer(d, "entailment", 0, 1))
