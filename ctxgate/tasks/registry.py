"""The one registry of tasks: the task modules' registrations, loaded on first use in the suite's
order."""

from __future__ import annotations

import difflib
import functools
import importlib
import pkgutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ctxgate.hooks import flat, hook
from ctxgate.refusal import CtxgateError
from ctxgate.tasks.base import TaskSpec
from ctxgate.tasks.registration import _BY_CATEGORY, _SUITES, _TASKS, register_suite

# Importing a module registers its tasks, and the import order is the order of cases and report
# rows: RULER's, HELMET's categories, HELMET's own RULER files; then any other module of the
# package, then the extras' (``hookspec.ctxgate_task_modules``).
SUITE_ORDER = (
    *("niah", "vt", "aggregation", "qa", "json_kv"),
    *("rag", "rerank", "cite", "icl", "longqa", "summ", "helmet_recall"),
)


@functools.cache
def _spine_modules() -> tuple[str, ...]:
    """The package's task modules: a fixed set, listed once (each lookup of a task loads)."""
    others = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]))
    return tuple(f"{__package__}.{module}" for module in (*SUITE_ORDER, *others))


def _load() -> None:
    for name in (*_spine_modules(), *flat(hook().ctxgate_task_modules())):
        if name not in sys.modules:
            importlib.import_module(name)


class UnknownTask(CtxgateError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def get_task(name: str) -> TaskSpec:
    _load()
    try:
        return _TASKS[name]
    except KeyError:
        close = ", ".join(difflib.get_close_matches(name, _TASKS, n=3))
        hint = f"did you mean {close}?" if close else f"known tasks: {', '.join(sorted(_TASKS))}"
        raise UnknownTask(f"unknown task {name!r}; {hint}") from None


def all_tasks(suite: str | None = None) -> list[TaskSpec]:
    _load()
    return [t for t in _TASKS.values() if suite is None or t.suite == suite]


def suites() -> list[str]:
    """Every registered suite with a task, in registration order: RULER's, HELMET's, then the
    extras' (a suite is a name its module registers, ``registration.register_suite``)."""
    _load()
    with_tasks = {t.suite for t in _TASKS.values()}
    return [name for name in _SUITES if name in with_tasks]


def task_names() -> list[str]:
    return [t.name for t in all_tasks()]


register_suite("ruler", "RULER")
register_suite("helmet", "HELMET")

# HELMET's seven categories in the paper's order, with its names; others are summarized after
HELMET_CATEGORY_LABELS = {
    "recall": "Recall",
    "rag": "RAG",
    "rerank": "Re-rank",
    "cite": "Cite",
    "longqa": "LongQA",
    "summ": "Summ",
    "icl": "ICL",
}


@dataclass(frozen=True)
class Membership:
    """Which tasks each summary averages, derived from the specs, in registration order."""

    ruler: tuple[str, ...]
    helmet: Mapping[str, tuple[str, ...]]  # category -> its members, in the paper's order
    stand_ins: Mapping[str, str]  # a released file's task -> the task it stands in for where it ran
    families: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # beyond RULER, HELMET


def membership() -> Membership:
    specs = all_tasks()
    helmet: dict[str, list[str]] = {c: [] for c in HELMET_CATEGORY_LABELS}
    # HELMET's own tasks first, then the RULER tasks it borrows (Recall: JSON KV, then RULER's)
    for t in sorted(specs, key=lambda t: t.suite != "helmet"):
        if t.helmet_group and not t.replaces:
            helmet.setdefault(t.helmet_group, []).append(t.name)
    families: dict[str, list[str]] = {}
    for t in specs:
        if t.suite not in ("ruler", "helmet") and not t.replaces:
            families.setdefault(t.suite, []).append(t.name)
    for suite in [s for s in families if s in _BY_CATEGORY]:  # after every suite's own average
        for t in specs:
            if t.suite == suite and not t.replaces:
                families.setdefault(f"{suite}_{t.category}", []).append(t.name)
    return Membership(
        tuple(t.name for t in specs if t.suite == "ruler"),
        {c: tuple(m) for c, m in helmet.items() if m},
        {t.name: t.replaces for t in specs if t.replaces},
        {suite: tuple(m) for suite, m in families.items()},
    )


def category_label(category: str) -> str:
    return HELMET_CATEGORY_LABELS.get(category, category)


def suite_label(suite: str) -> str:
    """A suite's label, or a per-category summary's: the suite's, then the category."""
    _load()
    if suite in _SUITES:
        return _SUITES[suite]
    owner = next((s for s in _BY_CATEGORY if suite.startswith(f"{s}_")), None)
    return f"{_SUITES[owner]} {suite.removeprefix(f'{owner}_')}" if owner else suite


def marker_vocabulary() -> dict[str, str]:
    """Every pytest marker a case carries (``TaskSpec.marks``), with what it selects."""
    carried: dict[str, list[str]] = {}
    for task in all_tasks():
        for mark in task.marks:
            carried.setdefault(mark, []).append(task.name)
    out = {}
    for mark, names in carried.items():
        what = f"-m '{mark}' selects, -m 'not {mark}' leaves out"
        if mark in _SUITES:
            what = f"{suite_label(mark)} tasks"
        elif mark in HELMET_CATEGORY_LABELS:
            what = f"HELMET {HELMET_CATEGORY_LABELS[mark]} category"
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        out[mark] = f"{what}: {shown}"
    return out
