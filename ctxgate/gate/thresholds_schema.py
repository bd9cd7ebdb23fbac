"""thresholds.toml's schema: ``SCHEMA`` gives each key its type and range, and one walk of it
reads the document tomllib read, refusing the first problem in the file's order in one line naming
the file, the key, the value and the fix."""

from __future__ import annotations

import datetime as dt
import difflib
import fnmatch
import operator as op
import re
import reprlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ctxgate.gate.summaries import RELATIVE_SHARE, RULER_THRESHOLD, summary_names
from ctxgate.hooks import flat, hook, installed
from ctxgate.lengths import LengthError, parse_length
from ctxgate.refusal import CtxgateError
from ctxgate.values import did_you_mean, is_number

_COMPARE = re.compile(r"^\s*(<=|>=|<|>|==)?\s*(\S+)\s*$")
_OPERATORS = {"<=": op.le, ">=": op.ge, "<": op.lt, ">": op.gt, "==": op.eq}
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")  # a key TOML takes unquoted
# what tomllib reads, as a refusal names its type (a subclass first: bool, datetime)
_KINDS = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    (list, "an array"),
    (dict, "a table"),
    (dt.datetime, "a date-time"),
    (dt.date, "a date"),
    (dt.time, "a time"),
)
_REPR = reprlib.Repr()  # a value as a refusal shows it: one line, cut short
_REPR.maxstring = _REPR.maxother = 40


class ThresholdsError(CtxgateError, ValueError):
    """Malformed or missing thresholds; the message names the file and the fix."""

    exit_status = 4  # a usage error, as pytest ends on it


@dataclass(frozen=True)
class Rule:
    task: str
    length: str
    value: float  # a floor or a tolerance, in percent / points

    def matches(self, task: str, length: int) -> bool:
        return fnmatch.fnmatchcase(task, self.task) and _length_matches(self.length, length)


def _length_matches(spec: str, length: int) -> bool:
    """Raises LengthError on a spec that is not a length pattern (checked at load)."""
    if spec.strip() == "*":
        return True
    m = _COMPARE.match(spec)
    if not m:
        raise LengthError(spec)
    return bool(_OPERATORS[m.group(1) or "=="](length, parse_length(m.group(2))))


@dataclass(frozen=True)
class _At:
    """Where a value sits: the file, the value's dotted key as a refusal names it, and the task
    names a rule may match."""

    path: str
    key: str
    tasks: Sequence[str]

    @property
    def name(self) -> str:
        """The key's last part, as its line in the file starts."""
        return self.key.rpartition(".")[2]

    def at(self, part: str | int) -> _At:
        if isinstance(part, int):
            return replace(self, key=f"{self.key}[{part}]")
        # a quoted key may hold anything, a line break included: shown quoted, on one line
        word = part if _BARE_KEY.fullmatch(part) else repr(part)
        return replace(self, key=f"{self.key}.{word}" if self.key else word)

    def fail(self, problem: str, fix: str) -> ThresholdsError:
        return ThresholdsError(f"{self.path}: {self.key}: {problem}. Fix: {fix}")


# a value's reader: the value and where it sits -> what Thresholds holds; refuses with _At.fail
Read = Callable[[Any, _At], Any]
# a table's keys: each a table of its own, or the Thresholds field it sets and its reader
Tree = Mapping[str, "Tree | tuple[str, Read]"]


@dataclass(frozen=True)
class ExtraTable:
    """An extra's table of thresholds.toml (``hookspec.ctxgate_threshold_tables``): ``keys``, a
    tree as ``SCHEMA``'s whose leaves each set a dotted key of ``Thresholds.extras``, and
    ``template``, the commented text ``ctxgate init`` writes for it."""

    name: str
    keys: Tree
    template: str


def _kind(value: object) -> str:
    """The TOML type of a value tomllib read, as a refusal names it."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return "an array of tables"
    return next(name for kind, name in _KINDS if isinstance(value, kind))


def _shown(value: object) -> str:
    """The value as the file spells a boolean or a date, else as Python shows it, cut short."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return _REPR.repr(value)


def _wrong(value: object, at: _At, what: str, fix: str) -> ThresholdsError:
    return at.fail(f"{_shown(value)} is {_kind(value)}, not {what}", fix)


def number(lo: float, hi: float, example: float, above: bool = False) -> Read:
    """A number in [lo, hi], or (lo, hi] when ``above``; ``example``: a sensible value for the
    fix (a midpoint of the range often is not one)."""
    span = f"{'(' if above else '['}{lo:g}, {hi:g}]"

    def read(value: Any, at: _At) -> float:
        fix = f"write e.g. {at.name} = {example:g}"
        if not is_number(value):
            raise _wrong(value, at, f"a number in {span}", fix)
        if not (lo < value if above else lo <= value) or not value <= hi:
            raise at.fail(f"{_shown(value)} is not a number in {span}", fix)
        return float(value)

    return read


_points = number(0, 100, 80)


def _floor(value: Any, at: _At) -> float:
    """A floor in percent; a fraction (0.5 for 50%) would gate almost nothing, so is refused."""
    floor = _points(value, at)
    if 0 < floor < 1:
        raise at.fail(
            f"{_shown(value)} looks like a fraction, but floors are percent (0-100), so it would "
            f"pass any score of {floor:g} points or more",
            f"write {at.name} = {floor * 100:g} for {floor:.0%}",
        )
    return floor


def _length(example: str) -> Read:
    """A length in tokens: a whole number, or a string ctxgate.lengths reads ("32k")."""

    def read(value: Any, at: _At) -> int:
        fix = f'write e.g. {at.name} = "{example}"'
        if isinstance(value, float) and value.is_integer() and value >= 0:
            fix = f'write {at.name} = {int(value)}, a whole number, or e.g. "{example}"'
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise _wrong(value, at, 'a length (a whole number of tokens, or e.g. "8k")', fix)
        try:
            return parse_length(value)
        except LengthError:
            raise at.fail(f"{_shown(value)} is not a length", fix) from None

    return read


def _pattern(value: Any, at: _At) -> str:
    """A rule's length: "*", a length, or a comparison with one ("<=32k")."""
    fix = 'write "*", "8k", "<=32k" or ">4096"'
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _wrong(value, at, "a length pattern", fix)
    try:
        _length_matches(str(value), 0)
    except LengthError:
        raise at.fail(f"{_shown(str(value))} is not a length pattern", fix) from None
    return str(value)


def _task(value: Any, at: _At) -> str:
    """A rule's task: a name or a glob that matches a known task."""
    if isinstance(value, str) and any(fnmatch.fnmatchcase(t, value) for t in at.tasks):
        return value
    close = difflib.get_close_matches(value, at.tasks, n=3) if isinstance(value, str) else []
    fix = f"use a task name such as {', '.join(close or at.tasks[:3])} or a glob like 'niah_*'"
    if not isinstance(value, str):
        raise _wrong(value, at, "a task name", fix)
    raise at.fail(f"{_shown(value)} matches no task", fix)


def _rule(value: Any, at: _At) -> str:
    if value not in ("score", "upper"):
        raise at.fail(f"{_shown(value)} is not a rule", 'write rule = "score" or rule = "upper"')
    return str(value)


def _min_lengths(value: Any, at: _At) -> tuple[tuple[str, int], ...]:
    """``[relative_effective_length.min_length]``: summary name = the length it must reach."""
    if not isinstance(value, dict):
        raise _wrong(value, at, "a table", f'write [{at.key}] with lines such as nolima = "8k"')
    known, read = summary_names(), _length("1k")
    for name in value:
        if name not in known:
            fix = f"use one of {', '.join(known)}"
            raise at.at(name).fail(f"is no summary{did_you_mean(name, known)}", fix)
    return tuple((name, read(length, at.at(name))) for name, length in value.items())


def _rules(value_key: str, read_value: Read, example: int) -> Read:
    """``[[floor]]`` or ``[[tolerance]]``: a value per task glob and length pattern."""
    keys: Tree = {
        "task": ("task", _task),
        "length": ("length", _pattern),
        value_key: ("value", read_value),
    }

    def read(value: Any, at: _At) -> tuple[Rule, ...]:
        if not isinstance(value, list):
            raise _wrong(value, at, "an array of tables", f"write [[{at.key}]] entries")
        rules = []
        for i, entry in enumerate(value):
            if not isinstance(entry, dict):
                fix = f"write [[{at.key}]] entries with task, length, {value_key}"
                raise _wrong(entry, at.at(i), "a table", fix)
            fields: dict[str, Any] = {"task": "*", "length": "*"}
            _walk(entry, keys, at.at(i), fields)
            if "value" not in fields:
                fix = f"add {value_key} = <points>, e.g. {value_key} = {example}"
                raise at.at(i).at(value_key).fail("is missing", fix)
            rules.append(Rule(**fields))
        return tuple(rules)

    return read


_CONFIDENCE = number(0.5, 0.999, 0.95)
# the file: each table's keys, with the type and the range of each value
SCHEMA: Tree = {
    "defaults": {
        "floor": ("default_floor", _floor),
        "confidence": ("confidence", _CONFIDENCE),
        "rule": ("rule", _rule),
    },
    "effective_length": {"threshold": ("effective_threshold", number(0, 100, RULER_THRESHOLD))},
    "session": {"min_effective_length": ("min_effective_length", _length("32k"))},
    "regression": {
        "tolerance": ("tolerance", number(0, 100, 2)),
        "confidence": ("regression_confidence", _CONFIDENCE),
    },
    "judge": {"max_failure_rate": ("judge_max_failure_rate", number(0, 1, 0.05))},
    "relative_effective_length": {
        "share": ("relative_share", number(0, 1, RELATIVE_SHARE, above=True)),
        "base_up_to": ("relative_base_up_to", _length("1k")),
        "min_length": ("relative_min_length", _min_lengths),
    },
    "floor": ("floors", _rules("floor", _floor, 80)),
    "tolerance": ("tolerances", _rules("points", number(0, 100, 5), 5)),
}


def _walk(table: dict[str, Any], tree: Tree, at: _At, into: dict[str, Any]) -> None:
    """Reads ``table`` by ``tree`` into ``into`` (field: value), refusing the first unknown key
    or bad value in the file's order."""
    for name, value in table.items():
        node, here = tree.get(name), at.at(name)
        if node is None and not at.key and isinstance(value, (dict, list)):
            extras = ", ".join(installed()) or "none"
            raise here.fail(
                f"[{here.key}] is a table of neither ctxgate nor an installed extra (extras "
                f"installed: {extras}){did_you_mean(name, tree)}",
                "delete the table, or install the package that reads it",
            )
        if node is None:
            fix = f"use one of {', '.join(tree)} (or delete the line)"
            raise here.fail(f"unknown key{did_you_mean(name, tree)}", fix)
        if isinstance(node, tuple):
            field, read = node
            into[field] = read(value, here)
        elif isinstance(value, dict):
            _walk(value, node, here, into)
        else:
            fix = f"write [{here.key}], one pair of brackets, and its keys ({', '.join(node)})"
            raise _wrong(value, here, "a table", fix)


def extra_tables() -> list[ExtraTable]:
    """The installed extras' tables, in their order."""
    return list(flat(hook().ctxgate_threshold_tables()))


def schema() -> Tree:
    """The file's tables: the spine's settings, the extras' (whose leaves set dotted keys), then
    the summaries' table and the rules."""
    extras = [(table.name, table.keys) for table in extra_tables()]
    spine, at = list(SCHEMA.items()), list(SCHEMA).index("relative_effective_length")
    return dict([*spine[:at], *extras, *spine[at:]])


def read(data: dict[str, Any], path: str, known_tasks: Sequence[str]) -> dict[str, Any]:
    """The document's values by the Thresholds field each sets (an extra's: by its dotted key)."""
    fields: dict[str, Any] = {}
    _walk(data, schema(), _At(path, "", tuple(known_tasks)), fields)
    return fields
