"""BABILong's answer rule (``babilong/metrics.py``: ``compare_answers``, ``TASK_LABELS``), for its
qa1-qa5.

An output is right when, of the task's labels, its first sentence names the target and no other
label besides those the question names (for a target of several labels, exactly those). A sample's
references therefore carry the target, the question and the labels (``references``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# BABILong's TASK_LABELS for the tasks ctxgate runs: every answer a task's questions can have
_ROOMS = ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
TASK_LABELS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("qa1", "qa2", "qa3", "qa4"), _ROOMS),
    "qa5": ("Bill", "Fred", "Jeff", "Mary", "apple", "football", "milk"),
}

QUESTION = "question: "
LABELS = "labels: "
LABEL_SEP = " | "


def preprocess_output(output: str) -> str:
    """Lower case, up to the first full stop, before any ``<context>`` or ``<example>`` (the
    reference's cut at "Question", after lowering, never applies)."""
    output = output.lower().split(".")[0]
    return output.split("<context>")[0].split("<example>")[0]


def compare_answers(target: str, output: str, question: str, task_labels: Iterable[str]) -> bool:
    """BABILong's ``compare_answers``: labels named in the question never count as answers."""
    output = preprocess_output(output)
    target = target.lower()
    labels = {label.lower() for label in task_labels}
    in_question = {label for label in labels if label in question.lower()}
    in_output = {label for label in labels if label in output} - in_question
    if "," in target and len(target) > 3:  # several labels, each must be there and nothing else
        parts = target.split(",")
        return all(part in in_output for part in parts) and len(in_output) == len(parts)
    return target in in_output and len(in_output) == 1


def references(target: str, question: str, labels: Sequence[str]) -> tuple[str, str, str]:
    return target, QUESTION + question, LABELS + LABEL_SEP.join(labels)


def parse_references(refs: Sequence[str]) -> tuple[str, str, tuple[str, ...]]:
    if len(refs) != 3 or not refs[1].startswith(QUESTION) or not refs[2].startswith(LABELS):
        raise ValueError(
            "BABILong references are (target, 'question: ...', 'labels: a | b'), "
            f"got {list(refs)!r}: "
            "build them with ctxgate.metrics.babilong.references"
        )
    labels = tuple(label for label in refs[2].removeprefix(LABELS).split(LABEL_SEP) if label)
    return refs[0], refs[1].removeprefix(QUESTION), labels


def score(output: str, refs: Sequence[str], prefix: str | None) -> tuple[float, str]:
    """``compare_answers`` (1.0 or 0.0) on the stripped output, and the text it looked at."""
    target, question, labels = parse_references(refs)
    output = output.strip()
    return float(compare_answers(target, output, question, labels)), preprocess_output(output)
