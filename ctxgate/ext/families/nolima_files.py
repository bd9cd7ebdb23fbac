"""NoLiMa needle sets in NoLiMa's schema (docs/tasks.md): its ``needle_set.json`` (``--data-dir``
only, never shipped or fetched: non-commercial licence) and the project's ``nolima_needles.json``.
``system_prompt`` is never sent, as NoLiMa's vllm provider does; cases are in ``run_tests.py``'s
order: records, then question types, then tests."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TypeGuard

from ctxgate.api import DataFile, DataNotGiven, DataUnavailable, json_document, memo, sha256_of

OFFICIAL = Path("nolima", "needlesets", "needle_set.json")  # under --data-dir
CHARACTER = "{CHAR}"  # the needle's placeholder for the name drawn per sample
NEEDLE_SET = DataFile(
    "nolima",
    ("/".join(map(re.escape, OFFICIAL.parts)),),
    ("id", "needle", "questions", "tests"),
    optional="the nolima case skips; ctx_nolima asks the project's own needles",
)
DATA_FILES = (NEEDLE_SET,)
PROJECT = "nolima_needles.json"  # beside this module
# NoLiMa's default template (evaluation/run_tests.py, DEFAULT_TASK_TEMPLATE)
TASK_TEMPLATE = (
    "You will answer a question based on the following book snippet:\n\n{haystack}\n\nUse the "
    "information provided in the book snippet to answer the question. Your answer should be short "
    "and based on either explicitly stated facts or strong, logical inferences.\n\nQuestion: "
    "{question}\n\n Return only the final answer with no additional explanation or reasoning."
)
# NoLiMa's results leave out every question type named "direct" (the literal controls)
DIRECT = "direct"
FETCH = (
    "NoLiMa's needle set is not shipped and never downloaded (non-commercial licence): accept its "
    "licence, get needlesets/needle_set.json from the hub dataset amodaresi/NoLiMa yourself and "
    "put it at DATA_DIR/nolima/needlesets/needle_set.json, then pass --data-dir DATA_DIR"
)
_SCHEMA = " (NoLiMa's schema)"
_PLACEHOLDERS = tuple(f"{{{p}}}" for p in range(1, 10))


@dataclass(frozen=True)
class NeedleCase:
    """One (record, question type, test), arguments filled in; ``{CHAR}`` is left to the sample."""

    record: str
    test: str
    kind: str  # the question type: onehop, twohop, direct, ...
    needle: str
    question: str
    characters: tuple[str, ...]
    gold: tuple[str, ...]  # used only where the needle names no character
    keywords: tuple[str, ...]  # haystack sentences naming one are left out
    template: str

    @property
    def name(self) -> str:
        return f"{self.record}_{self.test}_{self.kind}"  # NoLiMa's test name


@dataclass(frozen=True)
class NeedleSet:
    cases: tuple[NeedleCase, ...]
    path: str
    sha256: str

    def of_kind(self, latent: bool) -> tuple[NeedleCase, ...]:
        """The latent cases (all but NoLiMa's direct controls), or the direct ones."""
        return tuple(c for c in self.cases if (DIRECT not in c.kind) == latent)


def load_official(data_dir: str | None) -> NeedleSet:
    path = Path(data_dir or ".") / OFFICIAL
    found = NEEDLE_SET.find(Path(data_dir)) if data_dir else ()
    if not found:
        raise DataNotGiven(
            f"nolima reads {OFFICIAL} under --data-dir, and there is none at {path}; {FETCH}"
        )
    return _read(str(found[0]), False)


def load_project() -> NeedleSet:
    """The project's own set (its latent questions held to ``data.lexical_overlap``'s cap)."""
    return _read(f"ctxgate:{PROJECT}", True)


@memo(4)
def _read(source: str, project: bool) -> NeedleSet:
    if project:
        raw = resources.files(__package__).joinpath(PROJECT).read_bytes()
        doc = json.loads(raw.decode("utf-8"))
        return NeedleSet(parse(doc, source), source, hashlib.sha256(raw).hexdigest())
    doc = json_document(Path(source), f"restore the file ({FETCH})")
    return NeedleSet(parse(doc, source), source, sha256_of(Path(source)))


def parse(doc: object, source: str) -> tuple[NeedleCase, ...]:
    """Every case of a needle set, checked; errors name the record, the field and the fix."""
    if not isinstance(doc, list) or not doc:
        raise _restore(source, "a needle set is a non-empty JSON list of records")
    return tuple(c for n, r in enumerate(doc, start=1) for c in _cases(r, f"{source}: record {n}"))


def _restore(where: str, problem: str, fix: str = "") -> DataUnavailable:
    return DataUnavailable(f"{where}: {problem}; restore the file{fix}")


def _bad(where: str, field: str, want: str) -> DataUnavailable:
    return _restore(where, f"field {field!r} must be {want}", _SCHEMA)


def _filled(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value.strip())


def _text(value: object, field: str, where: str) -> str:
    if not _filled(value):
        raise _bad(where, field, "a non-empty string")
    return value


def _texts(value: object, field: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(map(_filled, value)):
        raise _bad(where, field, "a non-empty list of non-empty strings")
    return tuple(value)


def _cases(record: object, where: str) -> list[NeedleCase]:
    if not isinstance(record, dict):
        raise _restore(where, "a record is a JSON object", _SCHEMA)
    rid = _text(record.get("id"), "id", where)
    where = f"{where} ({rid!r})"  # repr: an id may hold a line break, and a message is one line
    if record.get("distractors"):
        raise DataUnavailable(
            f"{where}: field 'distractors' is NoLiMa's distractor variant, which ctxgate does not "
            "build; use needle_set.json"
        )
    needle = _text(record.get("needle"), "needle", where)
    template = record.get("task_template", TASK_TEMPLATE)
    if not isinstance(template, str) or any(
        template.count(p) != 1 for p in ("{haystack}", "{question}")
    ):
        raise _bad(where, "task_template", "a string with {haystack} and {question} once each")
    questions, tests = record.get("questions"), record.get("tests")
    if not isinstance(questions, dict) or not questions:
        raise _bad(where, "questions", "an object of question type -> question")
    if not isinstance(tests, dict) or not tests:
        raise _bad(where, "tests", "an object of test id -> {input_args: [...]}")
    named = CHARACTER in needle
    characters = _texts(record.get("character_set"), "character_set", where) if named else ()
    out = []
    for kind, question in questions.items():
        _text(question, f"questions.{kind}", where)
        for test_id, test in tests.items():
            at = f"tests.{test_id}"
            if not isinstance(test, dict):
                raise _bad(where, at, "an object with input_args")
            args = _texts(test.get("input_args"), f"{at}.input_args", where)
            gold = () if named else _gold(test.get("gold_answers"), f"{at}.gold_answers", where)
            extra = _texts(test["keywords"], f"{at}.keywords", where) if "keywords" in test else ()
            filled = fill(needle, question, args, f"{where} {at}")
            keywords = tuple(dict.fromkeys((*args, *extra)))
            case = (rid, str(test_id), str(kind), *filled, characters, gold, keywords, template)
            out.append(NeedleCase(*case))
    return out


def _gold(value: object, field: str, where: str) -> tuple[str, ...]:
    # one string is one answer; NoLiMa's contains iterates it letter by letter (docs/decisions.md)
    return (value,) if isinstance(value, str) and value else _texts(value, field, where)


def fill(needle: str, question: str, args: tuple[str, ...], where: str) -> tuple[str, str]:
    """The arguments put in as ``run_tests.py`` does: into the needle one after another, into the
    question each from the template again (only its last would survive, so a question with two
    placeholders is refused), and a placeholder no argument fills is refused."""
    filled_question = question
    for number, arg in enumerate(args, start=1):
        placeholder = f"{{{number}}}"
        if placeholder in question:
            filled_question = question.replace(placeholder, arg)
        needle = needle.replace(placeholder, arg)
    in_question = [p for p in _PLACEHOLDERS if p in question]
    if len(in_question) > 1:
        raise DataUnavailable(
            f"{where}: the question names {len(in_question)} arguments, NoLiMa fills only one"
        )
    for text, what in ((needle, "needle"), (filled_question, "question")):
        left = [p for p in _PLACEHOLDERS if p in text]
        if left:
            raise DataUnavailable(
                f"{where}: the {what} keeps {', '.join(left)}: input_args has too few values"
            )
    return needle, filled_question
