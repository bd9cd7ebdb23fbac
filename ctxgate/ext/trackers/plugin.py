"""``--log-to wandb|tensorboard|mlflow``: the run's scores in the team's experiment tracker, at the
checkpoint's training step, logged by the controller once the report is written; another package
adds a tracker of its own by answering ``ctxgate_tracker_kinds``, which this extra declares. A
tracker that fails is one note at the end: it never changes the gate's verdict or loses the
report. And ``ctxgate metrics``: a report as OpenMetrics text, for the trackers that scrape one."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ctxgate.api import Get, Option, OptionGroup, hookimpl, hookspec, whole

from .sinks import Target, parse_target

if TYPE_CHECKING:
    from ctxgate.api import Plan, Report

    from .sinks import TrackerKind

NAME = "trackers"
LOG_TO = Option(
    "--log-to",
    "log scores at the training step: wandb[=PROJECT], tensorboard[=LOG_DIR], "
    "mlflow[=TRACKING_URI] (repeatable; the tracker's extra: pip install 'ctxgate[wandb]' etc.)",
    action="append",
    metavar="TRACKER[=WHERE]",
)
TRACKER_RUN = Option(
    "--tracker-run",
    "a W&B / MLflow run id to log into (default: $WANDB_RUN_ID / $MLFLOW_RUN_ID, else a new run)",
)
STEP = Option(
    "--step",
    "the training step of --model (default: trainer_state.json's global_step, else the folder's "
    "name)",
    parse=whole(0),
    example="500",
)


@dataclass(frozen=True)
class TrackerSettings:
    targets: tuple[Target, ...] = ()
    step: int | None = None  # --step


@hookimpl
def ctxgate_verbs() -> list[ModuleType]:
    from . import openmetrics

    return [openmetrics]


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    options = (LOG_TO, TRACKER_RUN, STEP)
    return [OptionGroup("ctxgate-trackers", "ctxgate experiment trackers", options)]


@hookimpl
def ctxgate_plan_section(get: Get, plan: Plan) -> tuple[str, TrackerSettings] | None:
    run = TRACKER_RUN.read(get(TRACKER_RUN.dest))
    targets = tuple(parse_target(t, run) for t in LOG_TO.read(get(LOG_TO.dest)) or ())
    if not targets:
        return None
    return NAME, TrackerSettings(targets, STEP.read(get(STEP.dest)))


@hookspec
def ctxgate_tracker_kinds() -> Sequence[TrackerKind]:  # type: ignore[empty-body]
    """Trackers another package adds to ``--log-to``: each with its ``name`` (what ``--log-to
    NAME[=WHERE]`` says), ``log(target, logged)`` (``sinks.Target``, ``sinks.Logged``; returns
    where the run went) and ``fix`` (what to check when it fails). Answered with
    ``hookimpl(optionalhook=True)``, so that the package also installs where this extra is
    absent."""


@hookimpl
def ctxgate_report_done(report: Report, path: Path | None, plan: Plan) -> list[str]:
    from ctxgate.api import report_text, training_step

    from .sinks import Logged, case_table, log, metrics

    settings = plan.extras.get(NAME)
    if not isinstance(settings, TrackerSettings):
        return []
    spec = plan.model
    step = training_step(spec.checkpoint.folder if spec.checkpoint else None, settings.step)
    values = metrics(report)
    if step.tokens_seen is not None:
        values["ctxgate/tokens_seen"] = float(step.tokens_seen)
    name = f"ctxgate {Path(spec.model).name}"
    at = "no step (pass --step N)"
    if step.value is not None:
        at = f"step {step.value} ({step.source})"
    notes = []
    with tempfile.TemporaryDirectory() as tmp:
        report_file = path
        if report_file is None or not report_file.is_file():
            report_file = Path(tmp) / "report.json"
            report_file.write_text(report_text(report))
        for target in settings.targets:
            try:
                logged = Logged(step.value, values, case_table(report), report_file, name)
                where = log(target, logged)
            except Exception as exc:  # noqa: BLE001 - a tracker never fails the gate or loses it
                text = " ".join(str(exc).split())[:300] or type(exc).__name__
                notes.append(
                    f"--log-to {target.describe()} failed ({type(exc).__name__}: {text}); the "
                    f"report is unaffected. Fix: {_fix(target, exc)}"
                )
            else:
                notes.append(f"logged {len(values)} values to {where} at {at}")
    return notes


def _fix(target: Target, exc: Exception) -> str:
    from .sinks import LIBRARIES, kinds

    if isinstance(exc, ImportError) and target.kind in {k.name for k in LIBRARIES}:
        return f"pip install 'ctxgate[{target.kind}]'"
    return kinds()[target.kind].fix
