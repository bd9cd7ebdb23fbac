"""The families' metrics: OpenAI MRCR's grade, NoLiMa's ``contains`` (and ctxgate's one-name
guard on it), and BABILong's answer rule
(``babilong/metrics.py``: ``compare_answers``, ``TASK_LABELS``), for its qa1-qa5.

An output is right when, of the task's labels, its first sentence names the target and no other
label besides those the question names (for a target of several labels, exactly those). A sample's
references therefore carry the target, the question and the labels (``references``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher

from ctxgate.api import Metric, Scored

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
            "BABILong needs three references, the target, 'question: ...' and 'labels: a | b', "
            f"got {list(refs)!r}"
        )
    labels = tuple(label for label in refs[2].removeprefix(LABELS).split(LABEL_SEP) if label)
    return refs[0], refs[1].removeprefix(QUESTION), labels


def score(output: str, refs: Sequence[str], prefix: str | None) -> tuple[float, str]:
    """``compare_answers`` (1.0 or 0.0) on the stripped output, and the text it looked at."""
    target, question, labels = parse_references(refs)
    output = output.strip()
    return float(compare_answers(target, output, question, labels)), preprocess_output(output)


CANDIDATES = "candidates: "
NAMED_OTHERS = "named_others"  # the share of outputs that named another of the characters


def nolima_references(gold: Sequence[str], candidates: Sequence[str]) -> tuple[str, ...]:
    """The gold names, then the record's characters (none: the official metric alone)."""
    return (*gold, CANDIDATES + LABEL_SEP.join(candidates)) if candidates else tuple(gold)


def _gold_and_candidates(refs: Sequence[str]) -> tuple[list[str], list[str]]:
    listed = [r.removeprefix(CANDIDATES) for r in refs if r.startswith(CANDIDATES)]
    names = [n for line in listed for n in line.split(LABEL_SEP) if n]
    return [r for r in refs if not r.startswith(CANDIDATES)], names


def names_in(response: str, candidates: Sequence[str]) -> set[str]:
    """The candidates a response names, the longer first: a name inside another ("Stu" in
    "Stuart") is not named by it."""
    found = set()
    for name in sorted(candidates, key=len, reverse=True):
        if name in response:
            found.add(name)
            response = response.replace(name, "\0")
    return found


def names_others(response: str, refs: Sequence[str]) -> bool:
    """Whether the response names one of the record's characters besides the gold ones."""
    gold, candidates = _gold_and_candidates(refs)
    return bool(names_in(response, candidates) - set(gold))


def nolima_one_name(response: str, refs: Sequence[str]) -> float:
    """NoLiMa's ``contains``, and 0 where the response also names another of the record's
    characters: listing every candidate would otherwise score 1 (docs/decisions.md)."""
    return 0.0 if names_others(response, refs) else nolima_contains(response, refs)


def nolima_contains(response: str, gold_answers: Sequence[str]) -> float:
    """NoLiMa's ``contains`` (evaluation/async_evaluate.py, ``_evaluate_response``), the one its run
    configs use: 1 when any gold answer (the needle's character name) is a substring of the raw
    response, else 0. No normalization: case, whitespace and punctuation count, as in the
    reference. The record's characters, where the references carry them, are no gold answer."""
    gold = _gold_and_candidates(gold_answers)[0]
    return float(any(name in response for name in gold))


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


def _raw_contains(pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    """The output as it came (NoLiMa's prompts have no answer prefix)."""
    return nolima_contains(pred, refs), pred


def _one_name(pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    return nolima_one_name(pred, refs), pred


def _mrcr(pred: str, refs: Sequence[str], prefix: str | None) -> Scored:
    if len(refs) != 2:
        raise ValueError(
            "MRCR needs two references, the answer and the random string it begins with (in "
            f"that order), got {list(refs)!r}"
        )
    answer, random_string = refs
    return mrcr_grade(pred, answer, random_string), pred


NOLIMA_CONTAINS = Metric(
    "nolima_contains",
    _raw_contains,
    "NoLiMa: a gold name in the raw output, case-sensitive",
)
NOLIMA_ONE_NAME = Metric(
    "nolima_one_name",
    _one_name,
    "NoLiMa's contains, and 0 where the output also names another of the record's characters "
    "(references: the gold names, then 'candidates: a | b')",
    parts=lambda output, refs: {NAMED_OTHERS: float(names_others(output, refs))},
)
BABILONG_MATCH = Metric(
    "babilong_match", score, "BABILong's rule: the target is the only label in the output"
)
MRCR_RATIO = Metric(
    "mrcr_ratio",
    _mrcr,
    "OpenAI MRCR's grade: 0 unless the output starts with the random string, else difflib's "
    "SequenceMatcher ratio of the rest to the answer's rest; "
    "references are (answer, random string)",
)
