"""``thresholds.toml``: score floors per task and length, and session gates such as the minimum
effective length (docs/gates.md, the repository's thresholds.toml): found as pytest and every verb
find it, and read by ``thresholds_schema``. Errors name the file, the key, the value and the fix,
and are raised before any model loads."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxgate.gate.summaries import BASE_UP_TO, RELATIVE_SHARE, RULER_THRESHOLD
from ctxgate.gate.thresholds_schema import Rule, ThresholdsError, read
from ctxgate.lengths import format_length
from ctxgate.refusal import byte_order_mark
from ctxgate.tasks.build import fits_at_all
from ctxgate.tasks.chance import chance_at
from ctxgate.tasks.registry import all_tasks

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

THRESHOLDS_FILE = "thresholds.toml"
INI_OPTION = "ctxgate_thresholds"  # the pytest ini option that names the project's file
NO_THRESHOLDS = "(none)"  # the path of the defaults, as a report records it


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
    # the extras' tables' values, by their dotted keys (``hookspec.ctxgate_threshold_tables``)
    extras: Mapping[str, Any] = field(default_factory=dict)

    def value(self, name: str) -> Any:
        """A field's value, or an extra's by its dotted key."""
        return self.extras[name] if "." in name else getattr(self, name)

    def floor_rule(self, task: str, length: int) -> int:
        """The [[floor]] rule that sets a case's floor (the last that matches), -1: the default."""
        rules = self.floors
        return next((i for i in reversed(range(len(rules))) if rules[i].matches(task, length)), -1)

    def floor_for(self, task: str, length: int) -> float:
        rule = self.floor_rule(task, length)
        return self.default_floor if rule < 0 else self.floors[rule].value

    def tolerance_for(self, task: str, length: int) -> float:
        return _last_match(self.tolerances, task, length, self.tolerance)


def _last_match(rules: Sequence[Rule], task: str, length: int, default: float) -> float:
    return next((rule.value for rule in reversed(rules) if rule.matches(task, length)), default)


def parse_thresholds(text: str, path: str, known_tasks: Sequence[str]) -> Thresholds:
    if said := byte_order_mark(text, path, "TOML"):
        raise ThresholdsError(said)
    try:
        data = tomllib.loads(text)
    # ValueError: tomllib's own, and an integer too long for Python to read
    except ValueError as exc:
        raise ThresholdsError(
            f"{path}: not valid TOML ({exc}). Fix the syntax at the position shown"
        ) from None
    except RecursionError:
        raise ThresholdsError(
            f"{path}: arrays or tables nested too deeply to read. Fix: a thresholds file nests "
            "a table in a table at most"
        ) from None
    if not data:
        raise ThresholdsError(
            f"{path}: is empty (no [defaults], no [[floor]]): an empty file would gate nothing. "
            "Fix: write the floors (see thresholds.toml in the ctxgate repository), or delete "
            "the file to run without floors"
        )
    fields = read(data, path, known_tasks)
    extras = {name: fields.pop(name) for name in list(fields) if "." in name}
    return Thresholds(path=path, **fields, extras=extras)


def refuse_floors_at_chance(thresholds: Thresholds, lengths: Sequence[int]) -> None:
    """A floor above 0 at or below a case's chance (the top of its interval) gates nothing there, a
    random answer reaching it, so the file is refused for the first such rule, at its worst case."""
    reached: dict[int, list[tuple[float, str, int]]] = {}  # rule (-1: the default) -> cases
    for spec in all_tasks():
        for length in (L for L in lengths if fits_at_all(spec, L)):
            floor, high = thresholds.floor_for(spec.name, length), chance_at(spec, length).high
            if 0 < floor <= high:
                rule = thresholds.floor_rule(spec.name, length)
                reached.setdefault(rule, []).append((high, spec.name, length))
    if not reached:
        return
    rule = min(reached, key=lambda i: (i < 0, i))
    high, task, length = max(reached[rule], key=lambda case: (case[0], -case[2]))
    more = len(reached[rule]) - 1
    where = "defaults.floor" if rule < 0 else f"floor[{rule}].floor"
    floor, at = thresholds.floor_for(task, length), format_length(length)
    # the task's own rule: at this length where it is the only one reached
    only = [L for _, t, L in reached[rule] if t == task] == [length]
    own = f'task = "{task}"' + (f', length = "{at.lower()}"' if only else "")
    raise ThresholdsError(
        f"{thresholds.path}: {where}: {floor:g} gates {task} at {at}, whose chance score there "
        f"reaches {high:.3g}{f', and {more} more case(s)' if more else ''}: a random answer "
        f"passes it, so it gates nothing. Fix: raise the floor above {high:.3g}, or give {task} a "
        f"[[floor]] of its own after it ({own}, floor = 0); docs/tasks.md#chance-scores gives "
        "each task's chance by length"
    )


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
