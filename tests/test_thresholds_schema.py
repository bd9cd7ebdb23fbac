"""thresholds.toml through its one reader (``gate.thresholds_schema.schema()``): each key has one
type and range (a length is a whole number of tokens or a length string, never a boolean or a
float; a share is in (0, 1]), and a document of any TOML value at any key reads as Thresholds or is
refused in one line naming the file, the key, the value and the fix, never another exception
(Hypothesis writes the documents). pytest and every verb refuse such a file alike, exit 4."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxgate.gate.summaries import summary_names
from ctxgate.gate.thresholds import Rule, ThresholdsError, parse_thresholds
from ctxgate.gate.thresholds_schema import schema
from ctxgate.lengths import parse_length
from ctxgate.tasks.registry import task_names
from tests.conftest import ROOT, call_ctxgate
from tests.test_thresholds_lookup import pending_report, verb_arguments

SETTINGS = settings(max_examples=150, deadline=None)


def parse(text: str) -> Any:
    return parse_thresholds(text, "t.toml", task_names())


def toml(value: object) -> str:
    """A value as TOML writes it, a table inline (``a = {b = 1}`` reads as ``[a] b = 1``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)  # nan, inf, 1e-05: TOML's spellings too
    if isinstance(value, str):  # TOML's basic string is JSON's, DEL escaped too
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, list):
        return f"[{', '.join(map(toml, value))}]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{toml(k)} = {toml(v)}" for k, v in value.items()) + "}"


def document(doc: dict[str, Any]) -> str:
    return "".join(f"{toml(k)} = {toml(v)}\n" for k, v in doc.items())


def leaves(tree: Any = None, prefix: str = "") -> dict[str, str]:
    """Each dotted key of the schema that holds a value -> the Thresholds field it sets."""
    out: dict[str, str] = {}
    for name, node in (schema() if tree is None else tree).items():
        out |= (
            {prefix + name: node[0]}
            if isinstance(node, tuple)
            else leaves(node, f"{prefix}{name}.")
        )
    return out


def put(doc: dict[str, Any], key: str, value: object) -> None:
    """Sets ``key`` (``floor[0].task``, ``session.min_effective_length``) in ``doc``."""
    *path, last = re.findall(r"[^.\[\]]+|\[\d+\]", key)
    for part in path:
        doc = doc[int(part[1:-1])] if part.startswith("[") else doc.setdefault(part, {})
    doc[last] = value


def numbers(lo: float, hi: float, **bounds: bool) -> st.SearchStrategy[int | float]:
    """Ints and floats in [lo, hi] (``exclude_min``: above lo)."""
    floats, above = st.floats(lo, hi, **bounds), bounds.get("exclude_min", False)
    if math.ceil(lo) > hi:
        return floats
    return st.integers(math.ceil(lo), math.floor(hi)).filter(lambda n: n > lo or not above) | floats


COUNTS = st.builds("{}{}".format, st.integers(0, 10**6), st.sampled_from(["", *"kKmM"]))
LENGTHS = st.integers(0, 2**40) | COUNTS | COUNTS.map(" {} ".format) | st.just("8 k")
# a rule's length: "*", a length, a comparison (a length with a space in it is none)
PATTERNS = (
    st.integers(0, 2**40)
    | st.just("*")
    | st.builds("{}{}".format, st.sampled_from(["", "<", "<=", ">", ">=", "=="]), COUNTS)
)
# a floor of a task (or 0, no floor): the file's own rule (the run's lengths hold it to chance)
FLOOR_RULES = st.fixed_dictionaries(
    {"task": st.sampled_from(task_names()), "floor": st.just(0) | numbers(1, 100)},
    optional={"length": PATTERNS},
)
TOLERANCE_RULES = st.fixed_dictionaries(
    {"task": st.sampled_from(task_names()), "points": numbers(0, 100)},
    optional={"length": PATTERNS},
)
# each key's valid values, and what Thresholds holds for one
VALID: dict[str, tuple[st.SearchStrategy[Any], Any]] = {
    "defaults.floor": (st.just(0) | numbers(1, 100), float),
    "defaults.confidence": (numbers(0.5, 0.999), float),
    "defaults.rule": (st.sampled_from(["score", "upper"]), str),
    "effective_length.threshold": (numbers(0, 100), float),
    "session.min_effective_length": (LENGTHS, parse_length),
    "regression.tolerance": (numbers(0, 100), float),
    "regression.confidence": (numbers(0.5, 0.999), float),
    "judge.max_failure_rate": (numbers(0, 1), float),
    "thinking.max_cut_share": (numbers(0, 1), float),
    "relative_effective_length.share": (numbers(0, 1, exclude_min=True), float),
    "relative_effective_length.base_up_to": (LENGTHS, parse_length),
    "relative_effective_length.min_length": (
        st.dictionaries(st.sampled_from(summary_names()), LENGTHS, max_size=3),
        lambda table: tuple((name, parse_length(v)) for name, v in table.items()),
    ),
    "floor": (
        st.lists(FLOOR_RULES, max_size=3),
        lambda rules: tuple(
            Rule(r["task"], str(r.get("length", "*")), float(r["floor"])) for r in rules
        ),
    ),
    "tolerance": (
        st.lists(TOLERANCE_RULES, max_size=3),
        lambda rules: tuple(
            Rule(r["task"], str(r.get("length", "*")), float(r["points"])) for r in rules
        ),
    ),
}
NAMES = sorted(
    {part for key in leaves() for part in key.split(".")}
    | {"task", "length", "points", "flor", *summary_names()}
)
# every type TOML has, the shapes the file uses among the strings
SCALARS = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    st.text(max_size=10),
    st.sampled_from(["32k", "128K", "0", " 8 k ", "-1", "1.5k", "<=32k", "*", "niah_*", "upper"]),
    st.datetimes(timezones=st.none() | st.just(dt.timezone.utc)),
    st.dates(),
    st.times(),
)
KEYS = st.sampled_from(NAMES) | st.text(max_size=6)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(KEYS, inner, max_size=3)
        | st.lists(st.dictionaries(KEYS, inner, max_size=3), min_size=1, max_size=2)
    ),
    max_leaves=8,
)


@st.composite
def valid_documents(draw: st.DrawFn) -> dict[str, Any]:
    """Some of the schema's keys, each with a valid value (dotted key -> value)."""
    keys = draw(st.lists(st.sampled_from(sorted(VALID)), min_size=1, unique=True))
    return {key: draw(VALID[key][0]) for key in keys}


def nested(flat: dict[str, Any]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in flat.items():
        put(doc, key, value)
    return doc


def refused(text: str) -> str:
    """The one line a document is refused with."""
    with pytest.raises(ThresholdsError) as err:
        parse(text)
    message = str(err.value)
    assert message.startswith("t.toml: ") and "\n" not in message and "Fix" in message, message
    return message


def test_every_key_of_the_schema_has_valid_values_here():
    assert set(VALID) == set(leaves())


@SETTINGS
@given(flat=valid_documents())
def test_a_valid_document_reads_each_value_as_its_type_says(flat):
    thresholds = parse(document(nested(flat)))
    fields = leaves()
    for key, value in flat.items():
        assert thresholds.value(fields[key]) == VALID[key][1](value), key


@SETTINGS
@given(flat=valid_documents(), data=st.data())
def test_any_value_at_any_key_reads_or_is_refused_naming_that_key(flat, data):
    """A valid document with one key (a table, a value, a rule's task, length or value, a
    summary's length) set to any TOML value: it reads, or the refusal names that key."""
    doc = nested(flat)
    slots = [*leaves(), *(k for k, v in schema().items() if isinstance(v, dict))]
    slots += [f"relative_effective_length.min_length.{s}" for s in summary_names()]
    slots += [
        f"{table}[{i}].{key}"
        for table, value_key in (("floor", "floor"), ("tolerance", "points"))
        for i in range(len(doc.get(table, [])))
        for key in ("task", "length", value_key)
    ]
    key, value = data.draw(st.sampled_from(slots)), data.draw(VALUES)
    put(doc, key, value)
    try:
        parse(document(doc))
    except ThresholdsError as exc:
        message = str(exc)
        named = re.sub(r"(\[\d+\]).*", r"\1", key)
        assert message.startswith(f"t.toml: {named}") and "\n" not in message, message
        assert ". Fix: " in message, message
        if isinstance(value, bool):  # as the file spells it, not as Python does
            assert f": {str(value).lower()} is " in message, message


@SETTINGS
@example(doc={"\n": []})  # a table no package reads, named by a key that needs quoting
@given(doc=st.dictionaries(KEYS, VALUES, max_size=4))
def test_any_document_reads_or_is_refused_in_one_line(doc):
    try:
        parse(document(doc))
    except ThresholdsError as exc:
        assert str(exc).startswith("t.toml: ") and "\n" not in str(exc), str(exc)


LENGTH = 'a length (a whole number of tokens, or e.g. "8k")'


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "[relative_effective_length.min_length]\nruler = true\n",
            f"relative_effective_length.min_length.ruler: true is a boolean, not {LENGTH}. "
            'Fix: write e.g. ruler = "1k"',
        ),
        (
            "[relative_effective_length]\nbase_up_to = true\n",
            f"relative_effective_length.base_up_to: true is a boolean, not {LENGTH}. "
            'Fix: write e.g. base_up_to = "1k"',
        ),
        (
            "[session]\nmin_effective_length = false\n",
            f"session.min_effective_length: false is a boolean, not {LENGTH}. "
            'Fix: write e.g. min_effective_length = "32k"',
        ),
        (
            "[session]\nmin_effective_length = 1024.0\n",
            f"session.min_effective_length: 1024.0 is a float, not {LENGTH}. "
            'Fix: write min_effective_length = 1024, a whole number, or e.g. "32k"',
        ),
        (
            "[relative_effective_length]\nbase_up_to = 1024.0\n",
            f"relative_effective_length.base_up_to: 1024.0 is a float, not {LENGTH}. "
            'Fix: write base_up_to = 1024, a whole number, or e.g. "1k"',
        ),
        (
            "[relative_effective_length.min_length]\nnolima = 1024.5\n",
            f"relative_effective_length.min_length.nolima: 1024.5 is a float, not {LENGTH}. "
            'Fix: write e.g. nolima = "1k"',
        ),
        (
            '[[floor]]\ntask = "vt"\nlength = 1024.0\nfloor = 50\n',
            'floor[0].length: 1024.0 is a float, not a length pattern. Fix: write "*", "8k", '
            '"<=32k" or ">4096"',
        ),
        (
            "[[relative_effective_length]]\nshare = 0.85\n",
            "relative_effective_length: [{'share': 0.85}] is an array of tables, not a table. "
            "Fix: write [relative_effective_length], one pair of brackets, and its keys (share, "
            "base_up_to, min_length)",
        ),
        (
            '[floor]\ntask = "vt"\nfloor = 50\n',
            "floor: {'floor': 50, 'task': 'vt'} is a table, not an array of tables. "
            "Fix: write [[floor]] entries",
        ),
        (
            '[session]\nmin_efective_length = "8k"\n',
            "session.min_efective_length: unknown key (did you mean min_effective_length?). "
            "Fix: use one of min_effective_length (or delete the line)",
        ),
        (
            '"defaults" = {"a\\nb" = 1}\n',
            "defaults.'a\\nb': unknown key. Fix: use one of floor, confidence, rule (or delete "
            "the line)",
        ),
        (
            "[defaults]\nfloor = 1979-05-27\n",
            "defaults.floor: 1979-05-27 is a date, not a number in [0, 100]. "
            "Fix: write e.g. floor = 80",
        ),
        (
            "[relative_effective_length]\nshare = 0\n",
            "relative_effective_length.share: 0 is not a number in (0, 1]. "
            "Fix: write e.g. share = 0.85",
        ),
        (
            "[judge]\nmax_failure_rate = nan\n",
            "judge.max_failure_rate: nan is not a number in [0, 1]. "
            "Fix: write e.g. max_failure_rate = 0.05",
        ),
        (
            '[defaults]\nrule = ["upper"]\n',
            'defaults.rule: [\'upper\'] is not a rule. Fix: write rule = "score" or rule = "upper"',
        ),
        (
            "[[tolerance]]\ntask = 7\npoints = 5\n",
            "tolerance[0].task: 7 is an integer, not a task name. Fix: use a task name such as "
            "niah_single_1, niah_single_2, niah_single_3 or a glob like 'niah_*'",
        ),
    ],
)
def test_a_value_of_another_type_or_shape_is_named_with_its_key_and_the_fix(text, line):
    assert refused(text) == f"t.toml: {line}"


def test_a_share_is_any_number_above_0_up_to_1():
    assert parse("[relative_effective_length]\nshare = 0.001\n").relative_share == 0.001
    assert parse("[relative_effective_length]\nshare = 1\n").relative_share == 1.0


def test_a_document_past_what_python_reads_is_refused_in_one_line():
    assert "is not a length" in refused(f'[session]\nmin_effective_length = "{"9" * 5000}"\n')
    assert "not valid TOML" in refused(f"[session]\nmin_effective_length = {'9' * 5000}\n")
    assert "nested too deeply" in refused(f"a = {'[' * 5000}{']' * 5000}\n")


BAD = {  # the file, and what its refusal says after the file's name
    "float": (
        "[session]\nmin_effective_length = 1024.0\n",
        f"session.min_effective_length: 1024.0 is a float, not {LENGTH}. Fix: write "
        'min_effective_length = 1024, a whole number, or e.g. "32k"',
    ),
    "bool": (
        "[relative_effective_length.min_length]\nruler = true\n",
        f"relative_effective_length.min_length.ruler: true is a boolean, not {LENGTH}. Fix: "
        'write e.g. ruler = "1k"',
    ),
}


@pytest.mark.parametrize("bad", sorted(BAD))
def test_pytest_refuses_a_value_of_another_type_in_one_line_exit_4(real_suite, pytester, bad):
    text, said = BAD[bad]
    (pytester.path / "thresholds.toml").write_text(text)
    result = real_suite("-k", "vt", "--lengths", "1k")
    out = result.stdout.str() + result.stderr.str()
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert result.ret == 4 and "INTERNALERROR" not in out and "Traceback" not in out, out
    assert errors == [f"ERROR: {pytester.path.resolve() / 'thresholds.toml'}: {said}"], out
    gates = " ".join((ROOT / "docs" / "gates.md").read_text().split())
    assert bad != "float" or f"ERROR: thresholds.toml: {said}" in gates  # the page shows it


@pytest.mark.parametrize("verb", ["diff", "bisect", "html", "judge"])
@pytest.mark.parametrize("bad", sorted(BAD))
def test_every_verb_refuses_it_alike_in_one_line_exit_4(tmp_path, verb, bad):
    text, said = BAD[bad]
    (tmp_path / "t.toml").write_text(text)
    report = pending_report(tmp_path)
    done = call_ctxgate(*verb_arguments(verb, report, "t.toml"), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (4, f"ctxgate {verb}: t.toml: {said}\n")


def test_diff_refuses_the_file_it_finds_as_it_refuses_one_given(tmp_path):
    (tmp_path / ".git").mkdir()
    text, said = BAD["float"]
    (tmp_path / "thresholds.toml").write_text(text)
    done = call_ctxgate("diff", "a.json", "b.json", cwd=tmp_path)
    expected = f"ctxgate diff: {tmp_path.resolve() / 'thresholds.toml'}: {said}\n"
    assert (done.returncode, done.stderr) == (4, expected)
