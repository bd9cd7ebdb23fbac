"""NoLiMa needle sets: NoLiMa's released ``needle_set.json`` (read from ``--data-dir`` only, never shipped or
fetched: its licence is non-commercial) and the project's own set (``ctxgate/data/nolima_needles.json``), in the one
schema both use.

A needle set is a JSON list of records: ``id``, ``needle`` (a template with ``{CHAR}`` and ``{1}``, ``{2}``, ...),
``questions`` (question type -> template), ``character_set`` (the names ``{CHAR}`` is drawn from), ``tests`` (test
id -> ``input_args``, the values of ``{1}``, ``{2}``, ...; ``gold_answers`` where the needle names no character),
and optionally ``task_template`` (with ``{haystack}`` and ``{question}``) and ``system_prompt`` (which NoLiMa's
connector sends only where it has no default system prompt of its own, Claude on AWS: ctxgate does as its vllm
provider does and never sends it). An ``id`` starts with four digits, which NoLiMa's ``run_tests.py`` reads as a
number for the draw's seed. The project's set adds ``keywords`` to a test: words whose haystack sentences are
left out besides the test's own arguments. A case is one (record, question type, test), in NoLiMa's order
(``run_tests.py``: records, then question types, then tests).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ctxgate.memo import is_file, memo, noted
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import DataFile

OFFICIAL = Path("nolima", "needlesets", "needle_set.json")  # under --data-dir
CHARACTER = "{CHAR}"  # the needle's placeholder for the name drawn per sample
# for ``ctxgate data verify`` (sources/manifest.py): the file, its records' fields, and what runs without it
DATA_FILES = (
    DataFile(
        "nolima",
        OFFICIAL.parent.as_posix(),
        re.escape(OFFICIAL.name),
        ("id", "needle", "questions", "tests"),
        optional="the nolima case skips; ctx_nolima asks the project's own needles",
    ),
)
PROJECT = "nolima_needles.json"  # in ctxgate.data
# NoLiMa's default template (evaluation/run_tests.py, DEFAULT_TASK_TEMPLATE)
TASK_TEMPLATE = (
    "You will answer a question based on the following book snippet:\n\n{haystack}\n\nUse the information "
    "provided in the book snippet to answer the question. Your answer should be short and based on either "
    "explicitly stated facts or strong, logical inferences.\n\nQuestion: {question}\n\n Return only the final "
    "answer with no additional explanation or reasoning."
)
# NoLiMa's results leave out every question type named "direct" (the literal controls)
DIRECT = "direct"
FETCH = (
    "NoLiMa's needle set is not shipped and never downloaded (non-commercial licence): accept its licence, get "
    "needlesets/needle_set.json from the hub dataset amodaresi/NoLiMa yourself and put it at "
    "DATA_DIR/nolima/needlesets/needle_set.json, then pass --data-dir DATA_DIR"
)


@dataclass(frozen=True)
class NeedleCase:
    """One (record, question type, test) with the test's arguments filled in; ``{CHAR}`` is left to the sample."""

    record: str
    test: str
    kind: str  # the question type: onehop, twohop, direct, ...
    needle: str
    question: str
    characters: tuple[str, ...]
    gold: tuple[str, ...]  # used only where the needle names no character
    keywords: tuple[str, ...]  # the test's arguments and extra keywords: haystack sentences naming one are left out
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
        """The latent cases (every question type but NoLiMa's direct controls), or the direct ones."""
        return tuple(c for c in self.cases if (DIRECT not in c.kind) == latent)


def load_official(data_dir: str | None) -> NeedleSet:
    path = Path(data_dir or ".") / OFFICIAL
    if not data_dir or not is_file(path):
        raise DataNotGiven(f"nolima reads {OFFICIAL} under --data-dir, and there is none at {path}; {FETCH}")
    return _read(str(path), False)


def load_project() -> NeedleSet:
    """The project's own set (its task holds the latent questions to the overlap cap of ``data.lexical_overlap``)."""
    return _read(f"ctxgate:{PROJECT}", True)


@memo(4)
def _read(source: str, project: bool) -> NeedleSet:
    if project:
        raw = resources.files("ctxgate.data").joinpath(PROJECT).read_bytes()
    else:
        noted(Path(source))
        try:
            raw = Path(source).read_bytes()
        except OSError as exc:
            raise DataUnavailable(f"{source}: cannot be read ({exc.strerror or exc}); restore the file") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataUnavailable(f"{source}: not a JSON document ({exc}); restore the file ({FETCH})") from None
    cases = parse(doc, source)
    return NeedleSet(cases, source, hashlib.sha256(raw).hexdigest())


def parse(doc: object, source: str) -> tuple[NeedleCase, ...]:
    """Every case of a needle set, checked; ``DataUnavailable`` names the record, the field and the fix."""
    if not isinstance(doc, list) or not doc:
        raise DataUnavailable(f"{source}: a needle set is a non-empty JSON list of records; restore the file")
    cases: list[NeedleCase] = []
    for n, record in enumerate(doc, start=1):
        cases.extend(_cases(record, f"{source}: record {n}"))
    return tuple(cases)


def _bad(where: str, field: str, want: str) -> DataUnavailable:
    return DataUnavailable(f"{where}: field {field!r} must be {want}; restore the file (NoLiMa's schema)")


def _text(record: dict[str, Any], field: str, where: str) -> str:
    value = record.get(field)
    if not isinstance(value, str) or not value.strip():
        raise _bad(where, field, "a non-empty string")
    return value


def _texts(value: object, field: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise _bad(where, field, "a non-empty list of non-empty strings")
    return tuple(value)


def _cases(record: object, where: str) -> list[NeedleCase]:
    if not isinstance(record, dict):
        raise DataUnavailable(f"{where}: a record is a JSON object; restore the file (NoLiMa's schema)")
    rid = _text(record, "id", where)
    where = f"{where} ({rid!r})"  # repr: an id may hold a line break, and a message is one line
    if record.get("distractors"):
        raise DataUnavailable(
            f"{where}: field 'distractors' is NoLiMa's distractor variant, which ctxgate does not build; use "
            "needle_set.json"
        )
    needle = _text(record, "needle", where)
    template = record.get("task_template", TASK_TEMPLATE)
    if not isinstance(template, str) or [template.count("{haystack}"), template.count("{question}")] != [1, 1]:
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
        if not isinstance(question, str) or not question.strip():
            raise _bad(where, f"questions.{kind}", "a non-empty string")
        for test_id, test in tests.items():
            if not isinstance(test, dict):
                raise _bad(where, f"tests.{test_id}", "an object with input_args")
            args = _texts(test.get("input_args"), f"tests.{test_id}.input_args", where)
            gold = () if named else _gold(test.get("gold_answers"), f"tests.{test_id}.gold_answers", where)
            extra = _texts(test["keywords"], f"tests.{test_id}.keywords", where) if "keywords" in test else ()
            filled_needle, filled_question = fill(needle, question, args, f"{where} tests.{test_id}")
            keywords = tuple(dict.fromkeys((*args, *extra)))
            case = NeedleCase(
                rid, str(test_id), str(kind), filled_needle, filled_question, characters, gold, keywords, template
            )
            out.append(case)
    return out


def _gold(value: object, field: str, where: str) -> tuple[str, ...]:
    # one string is one answer; NoLiMa's contains iterates over it letter by letter (docs/decisions.md)
    return (value,) if isinstance(value, str) and value else _texts(value, field, where)


def fill(needle: str, question: str, args: tuple[str, ...], where: str) -> tuple[str, str]:
    """The test's arguments put in, as NoLiMa's ``run_tests.py`` does: into the needle one after another, and into
    the question each from the template again, so that only a question's last argument would survive; a question
    with two argument placeholders is refused for that reason, and so is a placeholder no argument fills."""
    filled_question = question
    for number, arg in enumerate(args, start=1):
        placeholder = "{" + str(number) + "}"
        if placeholder in question:
            filled_question = question.replace(placeholder, arg)
        needle = needle.replace(placeholder, arg)
    in_question = [p for p in range(1, 10) if "{" + str(p) + "}" in question]
    if len(in_question) > 1:
        raise DataUnavailable(f"{where}: the question names {len(in_question)} arguments, NoLiMa fills only one")
    for text, what in ((needle, "needle"), (filled_question, "question")):
        left = [f"{{{p}}}" for p in range(1, 10) if "{" + str(p) + "}" in text]
        if left:
            raise DataUnavailable(f"{where}: the {what} keeps {', '.join(left)}: input_args has too few values")
    return needle, filled_question
