"""``--log-to wandb|tensorboard|mlflow``: the run's scores in the team's experiment tracker, at the
checkpoint's training step, logged by the controller once the report is written. A tracker that
fails is one note at the end: it never changes the gate's verdict or loses the report. And
``ctxgate metrics``: a report as OpenMetrics text, for the trackers that scrape one."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ctxgate.hookspec import hookimpl
from ctxgate.run.options import Get, Option, OptionGroup, whole

from .sinks import Target, parse_target

if TYPE_CHECKING:
    from ctxgate.gate.plan import Plan
    from ctxgate.records.schema import Report

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


@hookimpl
def ctxgate_report_done(report: Report, path: Path | None, plan: Plan) -> list[str]:
    from ctxgate.records.io import report_text
    from ctxgate.steps import training_step

    from .sinks import case_table, log, metrics

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
                where = log(target, step.value, values, case_table(report), report_file, name)
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
    if isinstance(exc, ImportError):
        return f"pip install 'ctxgate[{target.kind}]'"
    return {
        "wandb": "check WANDB_API_KEY and the network, or WANDB_MODE=offline and `wandb sync` "
        "later",
        "mlflow": "check the tracking URI and that its server runs",
        "tensorboard": "check that the log folder is writable",
    }[target.kind]
