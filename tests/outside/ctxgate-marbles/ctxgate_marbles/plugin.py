"""The marbles package's answers to ctxgate's hooks: its task module and metric, its option
(``--marble-color``, read by the builder from its section of the plan, recorded in the run's
record, and required of a ``--baseline`` run alike), its report section, and a tracker that
``--log-to marbles=FILE`` appends the run's values to, as a JSON line (where ctxgate's trackers
extra is installed: it declares ``ctxgate_tracker_kinds``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.api import (
    Get,
    Metric,
    Option,
    OptionGroup,
    Plan,
    Report,
    ReportSection,
    Slot,
    hookimpl,
)

from .settings import COLORS, NAME, MarbleSettings
from .tasks import COUNT_MATCH

COLOR = Option(
    "--marble-color",
    "the color count_marbles asks about (default %(default)s)",
    default=COLORS[0],
    choices=COLORS,
)


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [OptionGroup("ctxgate-marbles", "marbles: count one color", (COLOR,), evaluates=True)]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, MarbleSettings]:
    return NAME, MarbleSettings(COLOR.read(get(COLOR.dest)))


@hookimpl
def ctxgate_task_modules() -> list[str]:
    return [f"{__package__}.tasks"]


@hookimpl
def ctxgate_metrics() -> list[Metric]:
    return [COUNT_MATCH]


@hookimpl
def ctxgate_slots() -> list[Slot]:
    return [Slot(NAME, "run", MarbleSettings, baseline="--marble-color")]


@hookimpl
def ctxgate_run_record(plan: Plan) -> dict[str, object]:
    return {NAME: plan.extras.get(NAME)}


@hookimpl
def ctxgate_report_sections(report: Report) -> list[ReportSection]:
    cases = [c for c in report.cases if c.suite == NAME and c.score is not None]
    settings = report.run.extras.get(NAME)
    if not cases or not isinstance(settings, MarbleSettings):
        return []
    mean = sum(c.score or 0.0 for c in cases) / len(cases)
    line = f"Marbles: {settings.color} marbles counted in {len(cases)} case(s), mean {mean:.1f}"
    rows = (("length", "score"), *((str(c.length), f"{c.score:.1f}") for c in cases))
    named = {"marbles.color": settings.color, "marbles.mean": f"{mean:.2f}"}
    return [ReportSection(NAME, "Marbles", (line,), rows, named)]


@dataclass(frozen=True)
class JsonLines:
    """A tracker of the team's own: each run's values as one JSON line of a file."""

    name: str = NAME
    fix: str = "check that the file's folder exists and is writable"

    def log(self, target: Any, logged: Any) -> str:
        path = Path(target.where or "ctxgate-metrics.jsonl")
        line = {"step": logged.step, "run": logged.name, **logged.values}
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(line, sort_keys=True) + "\n")
        return f"{path} (marbles' tracker)"


@hookimpl(optionalhook=True)  # ctxgate's trackers extra declares it: asked where it is installed
def ctxgate_tracker_kinds() -> list[JsonLines]:
    return [JsonLines()]
