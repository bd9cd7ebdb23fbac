"""``--reference MODEL``: the run against a paper's published numbers for that model (RULER's Table
3 and its appendix, HELMET's Figure 6), or with ``auto`` the model matched by name; the
``published`` and ``reproduce`` verbs."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ctxgate.api import Get, Option, OptionGroup, ReportSection, Slot, hookimpl, hookspec

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.abc import Traversable

    from ctxgate.api import Plan, Report

NAME = "published"
REFERENCE = Option(
    "--reference",
    "compare with the papers' published numbers for MODEL (an id such as "
    "meta-llama/Llama-3.1-8B-Instruct or a paper's row label; `ctxgate published` lists them); "
    "auto (default): when --model is one of them",
    default="auto",
    metavar="MODEL|auto|off",
)


@dataclass(frozen=True)
class ReferenceSettings:
    model: str | None  # the papers' id, or None: no comparison
    how: str  # how it was chosen, for the header and the report


_HUB_CACHE = re.compile(r"models--([^/]+?)--([^/]+)")


def candidates(model: str | None) -> list[tuple[str, str]]:
    """Names a checkpoint goes by, with where each was read."""
    if not model:
        return []
    found = [(model, "--model")]
    if hub := _HUB_CACHE.search(model):
        found.append((f"{hub.group(1)}/{hub.group(2)}", "the hub cache folder's name"))
    config = Path(model) / "config.json"
    try:
        named = json.loads(config.read_text("utf-8")).get("_name_or_path")
    except (OSError, ValueError, AttributeError):
        named = None
    if isinstance(named, str) and named:
        found.append((named, f"{config}'s _name_or_path"))
    return found


def _settings(wanted: str, model: str | None) -> ReferenceSettings:
    from .scores import lookup, resolve

    if wanted.lower() == "off" or model is None:
        return ReferenceSettings(None, "off")
    if wanted.lower() != "auto":
        return ReferenceSettings(
            resolve(wanted, "--reference ", ", or pass --reference off"), "--reference"
        )
    for name, where in candidates(model):  # a name several models go by: the user says which
        found = lookup(
            name, f"--reference auto: {where} ", " with --reference, or pass --reference off"
        )
        if found is not None:
            return ReferenceSettings(found, f"matched by name: {where}")
    return ReferenceSettings(None, "no published model matched")


def _section(plan: Plan) -> ReferenceSettings | None:
    ref = plan.extras.get(NAME)
    return ref if isinstance(ref, ReferenceSettings) and ref.model is not None else None


@hookspec
def ctxgate_published_files() -> Sequence[Traversable]:  # type: ignore[empty-body]
    """Files of published numbers another package adds to ``--reference``, ``ctxgate published``
    and ``ctxgate reproduce``, each in ``published.toml``'s form: ``[source.KEY]`` tables and the
    ``[[score]]`` rows that cite them. Answered with ``hookimpl(optionalhook=True)``, so that the
    package also installs where this extra is absent."""


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [OptionGroup("ctxgate-reference", "ctxgate published scores", (REFERENCE,))]


@hookimpl
def ctxgate_verbs() -> list[ModuleType]:
    from . import reproduce, verb

    return [verb, reproduce]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, ReferenceSettings] | None:
    wanted = get(REFERENCE.dest)
    if wanted is None and not plan.model.model:
        return None  # a verb without the option, or the project's own tests
    return NAME, _settings(str(REFERENCE.read(wanted)).strip(), plan.model.model or None)


@hookimpl
def ctxgate_slots() -> tuple[Slot, ...]:
    from .records import SLOTS

    return SLOTS


@hookimpl
def ctxgate_plan_lines(plan: Plan) -> list[str]:
    ref = _section(plan)
    if ref is None:
        return []
    return [
        f"ctxgate reference: the papers' published numbers for {ref.model} ({ref.how}; "
        "--reference off: none)"
    ]


@hookimpl
def ctxgate_report_record(report: Report, plan: Plan) -> dict[str, object]:
    """The report's ``reference`` slot."""
    from .compare import compare
    from .records import REFERENCE, Reference
    from .scores import rows_for

    ref = _section(plan)
    if ref is None or ref.model is None:
        return {}
    return {REFERENCE: Reference(ref.model, ref.how, tuple(compare(report, rows_for(ref.model))))}


@hookimpl
def ctxgate_report_sections(report: Report) -> list[ReportSection]:
    from .lines import section
    from .records import REFERENCE, Reference

    found = report.extras.get(REFERENCE)
    return [section(found)] if isinstance(found, Reference) and found.rows else []
