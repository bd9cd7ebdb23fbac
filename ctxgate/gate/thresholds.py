"""``thresholds.toml``: score floors per task and length, and session gates such as the minimum
effective length. Its tables and keys are documented in docs/gates.md and in the repository's
thresholds.toml. Errors name the file, the key and the fix, and are raised before any model loads.
"""

from __future__ import annotations

import difflib
import fnmatch
import inspect
import operator
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.gate.summaries import BASE_UP_TO, RELATIVE_SHARE, RULER_THRESHOLD, summary_names
from ctxgate.lengths import LengthError, parse_length
from ctxgate.records.refusal import CtxgateError
from ctxgate.tasks.registry import all_tasks

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_COMPARE = re.compile(r"^\s*(<=|>=|<|>|==)?\s*(\S+)\s*$")
_OPERATORS = {
    "<=": operator.le,
    ">=": operator.ge,
    "<": operator.lt,
    ">": operator.gt,
    "==": operator.eq,
}
# each table's allowed keys, in the order they are checked
_SECTIONS = {
    "defaults": ("floor", "confidence", "rule"),
    "effective_length": ("threshold",),
    "session": ("min_effective_length",),
    "regression": ("tolerance", "confidence"),
    "judge": ("max_failure_rate",),
    "relative_effective_length": ("share", "base_up_to", "min_length"),
}
# Thresholds' numeric fields: their key, default, range and the example a fix shows, in the order
# they are checked
_NUMBERS = {
    "confidence": ("defaults.confidence", 0.95, 0.5, 0.999, 0.95),
    "effective_threshold": ("effective_length.threshold", RULER_THRESHOLD, 0, 100, RULER_THRESHOLD),
    "tolerance": ("regression.tolerance", 2.0, 0, 100, 2),
    "regression_confidence": ("regression.confidence", 0.95, 0.5, 0.999, 0.95),
    "judge_max_failure_rate": ("judge.max_failure_rate", 0.05, 0, 1, 0.05),
    "relative_share": ("relative_effective_length.share", RELATIVE_SHARE, 0.01, 1, RELATIVE_SHARE),
}

THRESHOLDS_FILE = "thresholds.toml"
INI_OPTION = "ctxgate_thresholds"  # the pytest ini option that names the project's file
NO_THRESHOLDS = "(none)"  # the path of the defaults, as a report records it


class ThresholdsError(CtxgateError, ValueError):
    """Malformed or missing thresholds; the message names the file and the fix."""


@dataclass(frozen=True)
class PytestConfig:
    """pytest's config file (None: none) and its ini option ``ctxgate_thresholds``."""

    inifile: Path | None = None
    named: str = ""  # "" when the option is not set


def pytest_config(folder: Path) -> PytestConfig:
    """The config file pytest started in ``folder`` would read, by pytest's own discovery, so a
    verb reads the ini option the suite reads."""
    from _pytest.config import UsageError
    from _pytest.config.findpaths import determine_setup
    from _pytest.outcomes import Failed

    options: dict[str, Any] = {
        "inifile": None,
        "args": [],
        "rootdir_cmd_arg": None,
        "invocation_dir": folder,
    }
    if "override_ini" in inspect.signature(determine_setup).parameters:  # pytest >= 9 asks for it
        options["override_ini"] = None
    try:
        _, inifile, values, *_ = determine_setup(**options)
    # Failed: a file pytest no longer reads, e.g. setup.cfg's [pytest]
    except (UsageError, Failed) as exc:
        raise ThresholdsError(
            f"{exc}: fix the file (pytest reads it too), or pass --thresholds PATH"
        ) from None
    named = values.get(INI_OPTION, "")
    return PytestConfig(inifile, str(getattr(named, "value", named) or ""))  # pytest >= 9 wraps


def checked_file(path: str | Path, given_as: str = "--thresholds") -> Path:
    """A thresholds file named by hand, refused unless it is a file: a missing one or a folder
    would otherwise gate with no floors at all."""
    p = Path(path)
    if p.is_dir():
        inside = p / THRESHOLDS_FILE
        fix = f"pass a thresholds file, or write {inside} with `ctxgate init {p}`"
        if inside.is_file():
            fix = f"pass the thresholds file, e.g. --thresholds {inside}"
        raise ThresholdsError(f"{given_as} {p} is a folder: {fix}")
    if not p.is_file():
        near = p.parent / THRESHOLDS_FILE
        fix = f", e.g. --thresholds {near}" if near.is_file() else " (`ctxgate init` writes one)"
        raise ThresholdsError(
            f"{given_as} {p} does not exist: pass --thresholds PATH to an existing thresholds "
            f"file{fix}"
        )
    return p


def find_thresholds(
    given: str | None, started_in: Path, config: PytestConfig | None = None
) -> tuple[Path | None, str]:
    """The thresholds file and how it was found, the one rule the suite and every verb follow:
    --thresholds; else the file the ini option names (a project that names one expects floors);
    else the nearest thresholds.toml up to the project's top: the config file's folder, else the
    nearest folder with ``.git`` (pytest's rootdir moves with path-like arguments)."""
    if given:
        return checked_file(given), "--thresholds"
    config = config or pytest_config(started_in.resolve())
    inifile = config.inifile
    # relative to the ini file (given by -o with no ini file: to where pytest started)
    if config.named:
        path = (inifile.parent if inifile else started_in) / config.named
        where = f"-o {INI_OPTION}={config.named}"
        if inifile:
            where = f"{inifile}: {INI_OPTION} = {config.named!r}"
        if path.is_dir():
            raise ThresholdsError(
                f"{where} is a folder: name the thresholds file, e.g. {INI_OPTION} = "
                f"{Path(config.named) / THRESHOLDS_FILE}"
            )
        if not path.is_file():
            raise ThresholdsError(
                f"{where}, but {path} does not exist: restore the file, or pass --thresholds PATH"
            )
        return path, f"{INI_OPTION} in {inifile.name}" if inifile else f"-o {INI_OPTION}"
    top = inifile.parent.resolve() if inifile is not None else None
    start = started_in.resolve()
    for up, folder in enumerate((start, *start.parents)):
        if (folder / THRESHOLDS_FILE).is_file():
            return folder / THRESHOLDS_FILE, f"found {up} up" if up else "found"
        if folder == top or (folder / ".git").exists():
            break
    return None, f"none in {start}" + (f" or its parents up to {folder}" if up else "")


@dataclass(frozen=True)
class Rule:
    task: str
    length: str
    value: float  # a floor or a tolerance, in percent / points

    def matches(self, task: str, length: int) -> bool:
        return fnmatch.fnmatchcase(task, self.task) and _length_matches(self.length, length)


@dataclass(frozen=True)
class Thresholds:
    path: str
    default_floor: float = 0.0
    confidence: float = 0.95
    rule: str = "score"
    effective_threshold: float = RULER_THRESHOLD
    min_effective_length: int = 0
    floors: tuple[Rule, ...] = ()
    tolerance: float = 2.0
    regression_confidence: float = 0.95
    tolerances: tuple[Rule, ...] = ()
    # share of a case's samples whose verdict failed, above which it fails
    judge_max_failure_rate: float = 0.05
    relative_share: float = RELATIVE_SHARE
    relative_base_up_to: int = BASE_UP_TO
    # (summary, length): the session fails below it
    relative_min_length: tuple[tuple[str, int], ...] = ()

    def floor_for(self, task: str, length: int) -> float:
        return _last_match(self.floors, task, length, self.default_floor)

    def tolerance_for(self, task: str, length: int) -> float:
        return _last_match(self.tolerances, task, length, self.tolerance)


def _last_match(rules: Sequence[Rule], task: str, length: int, default: float) -> float:
    return next((rule.value for rule in reversed(rules) if rule.matches(task, length)), default)


def _length_matches(spec: str, length: int) -> bool:
    """Raises LengthError on a spec that is not a length pattern (checked at load)."""
    if spec.strip() == "*":
        return True
    m = _COMPARE.match(spec)
    if not m:
        raise LengthError(spec)
    return bool(_OPERATORS[m.group(1) or "=="](length, parse_length(m.group(2))))


def _fail(path: str, key: str, problem: str, fix: str) -> ThresholdsError:
    return ThresholdsError(f"{path}: {key}: {problem}. Fix: {fix}")


def _number(path: str, key: str, value: Any, lo: float, hi: float, example: float) -> float:
    """``example``: a sensible value for the fix (a midpoint of the range often is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        fix = f"write e.g. {key.split('.')[-1]} = {example:g}"
        raise _fail(path, key, f"{value!r} is not a number in [{lo:g}, {hi:g}]", fix)
    return float(value)


def _floor(path: str, key: str, value: Any) -> float:
    """A floor in percent; a fraction (0.5 for 50%) would gate almost nothing, so is refused."""
    floor = _number(path, key, value, 0, 100, 80)
    if 0 < floor < 1:
        raise _fail(
            path,
            key,
            f"{value!r} looks like a fraction, but floors are percent (0-100), so it would pass "
            f"any score of {floor:g} points or more",
            f"write {key.split('.')[-1]} = {floor * 100:g} for {floor:.0%}",
        )
    return floor


def _check_keys(path: str, section: str, table: dict[str, object], allowed: Sequence[str]) -> None:
    for key in table:
        if key not in allowed:
            fix = f"use one of {', '.join(allowed)} (or delete the line)"
            raise _fail(path, f"{section}.{key}" if section else key, "unknown key", fix)


def parse_thresholds(text: str, path: str, known_tasks: Sequence[str]) -> Thresholds:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ThresholdsError(
            f"{path}: not valid TOML ({exc}). Fix the syntax at the position shown"
        ) from None
    if not data:
        raise ThresholdsError(
            f"{path}: is empty (no [defaults], no [[floor]]): an empty file would gate nothing. "
            "Fix: write the floors (see thresholds.toml in the ctxgate repository), or delete "
            "the file to run without floors"
        )
    _check_keys(path, "", data, ("floor", "tolerance", *_SECTIONS))
    for section, allowed in _SECTIONS.items():
        _check_keys(path, section, data.get(section, {}), allowed)

    def get(key: str, default: Any) -> Any:
        section, name = key.split(".")
        return data.get(section, {}).get(name, default)

    rule = get("defaults.rule", "score")
    if rule not in ("score", "upper"):
        fix = 'write rule = "score" or rule = "upper"'
        raise _fail(path, "defaults.rule", f"{rule!r} is not a rule", fix)
    min_eff = get("session.min_effective_length", 0)
    try:
        min_eff_tokens = 0 if min_eff in (0, "0") else parse_length(min_eff)
    except LengthError:
        problem, fix = f"{min_eff!r} is not a length", 'write e.g. min_effective_length = "32k"'
        raise _fail(path, "session.min_effective_length", problem, fix) from None
    floors = _rules(path, data.get("floor", []), "floor", "floor", known_tasks)
    floors = _above_chance(path, floors, known_tasks)
    tolerances = _rules(path, data.get("tolerance", []), "tolerance", "points", known_tasks)
    default_floor = _floor(path, "defaults.floor", get("defaults.floor", 0.0))
    numbers = {
        name: _number(path, key, get(key, default), lo, hi, example)
        for name, (key, default, lo, hi, example) in _NUMBERS.items()
    }
    base_up_to = "relative_effective_length.base_up_to"
    return Thresholds(
        path=path,
        default_floor=default_floor,
        rule=rule,
        min_effective_length=min_eff_tokens,
        floors=floors,
        tolerances=tolerances,
        relative_base_up_to=_length(path, base_up_to, get(base_up_to, "1k")),
        relative_min_length=_min_lengths(path, get("relative_effective_length.min_length", {})),
        **numbers,
    )


def _length(path: str, key: str, value: Any) -> int:
    try:
        return parse_length(value)
    except LengthError:
        fix = f'write e.g. {key.split(".")[-1]} = "1k"'
        raise _fail(path, key, f"{value!r} is not a length", fix) from None


def _min_lengths(path: str, table: Any) -> tuple[tuple[str, int], ...]:
    """``[relative_effective_length.min_length]``: summary name = the length it must reach."""
    key = "relative_effective_length.min_length"
    if not isinstance(table, dict):
        raise _fail(path, key, "is not a table", f'write [{key}] with lines such as nolima = "8k"')
    known = summary_names()
    for name in table:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            fix = f"use one of {', '.join(close or known)}"
            raise _fail(path, f"{key}.{name}", "is no summary", fix)
    return tuple((name, _length(path, f"{key}.{name}", value)) for name, value in table.items())


def _rules(
    path: str, entries: Any, table: str, value_key: str, known_tasks: Sequence[str]
) -> tuple[Rule, ...]:
    if not isinstance(entries, list):
        raise _fail(path, table, "is not an array of tables", f"write [[{table}]] entries")
    rules = []
    for i, entry in enumerate(entries):
        where = f"{table}[{i}]"
        if not isinstance(entry, dict):
            fix = f"write [[{table}]] entries with task, length, {value_key}"
            raise _fail(path, where, "is not a table", fix)
        _check_keys(path, where, entry, ("task", "length", value_key))
        task = entry.get("task", "*")
        if not isinstance(task, str) or not any(fnmatch.fnmatchcase(t, task) for t in known_tasks):
            close = difflib.get_close_matches(str(task), known_tasks, n=3)
            names = ", ".join(close or known_tasks[:3])
            fix = f"use a task name such as {names} or a glob like 'niah_*'"
            raise _fail(path, f"{where}.task", f"{task!r} matches no task", fix)
        length = str(entry.get("length", "*"))
        try:
            _length_matches(length, 0)
        except LengthError:
            fix = 'write "*", "8k", "<=32k" or ">4096"'
            raise _fail(
                path, f"{where}.length", f"{length!r} is not a length pattern", fix
            ) from None
        key = f"{where}.{value_key}"
        example = 80 if value_key == "floor" else 5
        if value_key not in entry:
            fix = f"add {value_key} = <points>, e.g. {value_key} = {example}"
            raise _fail(path, key, "is missing", fix)
        if value_key == "floor":
            rules.append(Rule(task, length, _floor(path, key, entry[value_key])))
        else:
            rules.append(Rule(task, length, _number(path, key, entry[value_key], 0, 100, example)))
    return tuple(rules)


def _above_chance(
    path: str, rules: tuple[Rule, ...], known_tasks: Sequence[str]
) -> tuple[Rule, ...]:
    """A floor that a random answer reaches (``TaskSpec.chance``) gates nothing, so is refused.
    A task a later rule of length "*" matches is that rule's, so it is left out."""
    chance = {t.name: t.chance for t in all_tasks()}
    for i, rule in enumerate(rules):
        later = [r.task for r in rules[i + 1 :] if r.length.strip() == "*"]
        matched = [
            t
            for t in known_tasks
            if fnmatch.fnmatchcase(t, rule.task)
            and not any(fnmatch.fnmatchcase(t, g) for g in later)
        ]
        reached = [t for t in matched if 0 < rule.value <= chance.get(t, 0.0)]
        if not reached:
            continue
        reached.sort(key=lambda t: -chance[t])
        worst, at = reached[0], f"{chance[reached[0]]:.3g}"
        more = len(reached) - 1
        also = f", and that of {more} more task(s) it matches" if more else ""
        own = f'narrow task {rule.task!r}, or give {worst} a rule of its own, length "*", after it'
        fix = "drop the rule" if rule.task == worst else f"leave {worst} out: {own}"
        raise _fail(
            path,
            f"floor[{i}].floor",
            f"{rule.value:g} (task {rule.task!r}, length {rule.length!r}) is at or below the "
            f"chance score of {worst}, {at}{also}: a random answer reaches it, so it gates "
            "nothing there",
            f"raise the floor above {at}, or {fix} (docs/tasks.md lists each task's chance score)",
        )
    return rules


def load_thresholds(path: str | Path, known_tasks: Sequence[str]) -> Thresholds:
    p = checked_file(path)
    try:
        text = p.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise ThresholdsError(
            f"{p}: not UTF-8 text (byte offset {exc.start}). Fix: save the file as UTF-8"
        ) from None
    except OSError as exc:
        raise ThresholdsError(
            f"{p}: cannot be read ({exc.strerror or exc}). Fix: check its permissions"
        ) from None
    return parse_thresholds(text, str(p), known_tasks)


def load_or_default(path: str | Path | None, known_tasks: Sequence[str]) -> Thresholds:
    """The thresholds file when one is named, else the defaults (no floors, 2-point tolerance)."""
    return load_thresholds(path, known_tasks) if path else Thresholds(path=NO_THRESHOLDS)


def thresholds_here(
    given: str | None, known_tasks: Sequence[str], started_in: Path | None = None
) -> Thresholds:
    """What a command-line verb gates with, found as the suite started there finds it."""
    found = find_thresholds(given, (started_in or Path.cwd()).resolve())[0]
    return load_or_default(found, known_tasks)
