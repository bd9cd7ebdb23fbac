"""``--log-to wandb|tensorboard|mlflow``: the run's scores in the team's experiment tracker, at the
checkpoint's training step, logged by the controller after the report is built. A tracker that
fails is one note at the end: it never changes the gate's verdict or loses the report."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from ctxgate.records.io import report_text
from ctxgate.run.options import LOG_TO, STEP, TRACKER_RUN, TRACKERS
from ctxgate.trackers.sinks import Target, parse_target

from .options import PLAN_KEY, refusals_are_usage_errors
from .reporting import COLLECTOR_KEY


@dataclass(frozen=True)
class TrackerSettings:
    targets: tuple[Target, ...] = ()
    step: int | None = None  # --step


TRACKERS_KEY = pytest.StashKey[TrackerSettings]()


def pytest_addoption(parser: pytest.Parser) -> None:
    for option in TRACKERS:
        option.add_to(parser.getgroup("ctxgate-trackers", "ctxgate experiment trackers"))


@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    run = TRACKER_RUN.read(config.getoption(TRACKER_RUN.dest))
    targets = tuple(parse_target(t, run) for t in LOG_TO.read(config.getoption(LOG_TO.dest)) or ())
    config.stash[TRACKERS_KEY] = TrackerSettings(targets, STEP.read(config.getoption(STEP.dest)))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """After the reporting plugin built the report, on the controller only."""
    config = session.config
    settings = config.stash.get(TRACKERS_KEY, None)
    collector = config.stash.get(COLLECTOR_KEY, None)
    if not settings or not settings.targets or collector is None or collector.report is None:
        return
    from ctxgate.steps import training_step
    from ctxgate.trackers.sinks import case_table, log, metrics

    spec = config.stash[PLAN_KEY].model
    report = collector.report
    step = training_step(spec.checkpoint.folder if spec.checkpoint else None, settings.step)
    values = metrics(report)
    if step.tokens_seen is not None:
        values["ctxgate/tokens_seen"] = float(step.tokens_seen)
    name = f"ctxgate {Path(spec.model).name}"
    at = "no step (pass --step N)"
    if step.value is not None:
        at = f"step {step.value} ({step.source})"
    with tempfile.TemporaryDirectory() as tmp:
        report_file = collector.report_path
        if report_file is None or not report_file.is_file():
            report_file = Path(tmp) / "report.json"
            report_file.write_text(report_text(report))
        for target in settings.targets:
            try:
                where = log(target, step.value, values, case_table(report), report_file, name)
            except Exception as exc:  # noqa: BLE001 - a tracker never fails the gate or loses it
                text = " ".join(str(exc).split())[:300] or type(exc).__name__
                collector.notes.append(
                    f"--log-to {target.describe()} failed ({type(exc).__name__}: {text}); the "
                    f"report is unaffected. Fix: {_fix(target, exc)}"
                )
            else:
                collector.notes.append(f"logged {len(values)} values to {where} at {at}")


def _fix(target: Target, exc: Exception) -> str:
    if isinstance(exc, ImportError):
        return f"pip install 'ctxgate[{target.kind}]'"
    return {
        "wandb": "check WANDB_API_KEY and the network, or WANDB_MODE=offline and `wandb sync` "
        "later",
        "mlflow": "check the tracking URI and that its server runs",
        "tensorboard": "check that the log folder is writable",
    }[target.kind]
