"""The three trackers, each through its own library, each imported only when asked for, beside
those another package adds (``ctxgate_tracker_kinds``), and what they are given (``Logged``): the
report's numbers as ``ctxgate/<what>/<length>``. W&B logs against ``train/global_step``: an
earlier checkpoint's evaluation may arrive after later steps."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ctxgate.api import CtxgateError, Report, flat, format_length, hook

Table = tuple[list[str], list[list[Any]]]  # the per-case table: columns, rows
Values = dict[str, float]


@dataclass(frozen=True)
class Target:
    kind: str  # wandb | tensorboard | mlflow, or a kind another package adds
    where: str | None  # W&B project, TensorBoard folder, MLflow URI; None: the library's default
    run: str | None = None  # a run to resume (W&B, MLflow)

    def describe(self) -> str:
        return self.kind + (f"={self.where}" if self.where else "")


@dataclass(frozen=True)
class Logged:
    """What every tracker is given of a run: its training step, its values by name, the per-case
    table, the report file and the run's name in the tracker."""

    step: int | None
    values: Values
    table: Table
    report_file: Path
    name: str


class TrackerKind(Protocol):
    """A tracker ``--log-to NAME[=WHERE]`` logs to: ``log`` returns where the run went, for the
    terminal; ``fix`` is what to check when it fails."""

    @property
    def name(self) -> str: ...

    @property
    def fix(self) -> str: ...

    def log(self, target: Target, logged: Logged) -> str: ...


@dataclass(frozen=True)
class Library:
    """One of the three trackers ctxgate logs to through its own library."""

    name: str
    log_to: Callable[[Target, Logged], str]
    fix: str

    def log(self, target: Target, logged: Logged) -> str:
        return self.log_to(target, logged)


def kinds() -> dict[str, TrackerKind]:
    """The trackers, by name: ctxgate's three, then those the installed packages add."""
    found: list[TrackerKind] = [*LIBRARIES, *flat(hook().ctxgate_tracker_kinds())]
    return {kind.name: kind for kind in found}


class TrackerError(CtxgateError, ValueError):
    """A --log-to value that cannot be used; the message names it and the fix."""


def metrics(report: Report) -> Values:
    """A score without a value is left out: a 0 would draw a false drop on the curve. A partial
    summary (a member missing) is marked beside it, ``ctxgate/partial/<its key>`` 1: a subset's
    mean is never logged as the benchmark's alone."""
    out: dict[str, float] = {}

    def put(key: str, value: float, partial: bool = False) -> None:
        out[f"ctxgate/{key}"] = value
        if partial:
            out[f"ctxgate/partial/{key}"] = 1.0

    for case in report.cases:
        if case.score is not None:
            at = format_length(case.length)
            out[f"ctxgate/case/{case.task}/{at}"] = float(case.score)
            out[f"ctxgate/case_n/{case.task}/{at}"] = float(case.n)
    for length, groups in report.length_summaries.items():
        at = format_length(length)
        for group, summary in groups.items():
            if summary.score is not None:
                name = "ruler_avg" if group == "ruler" else group
                put(f"{name}/{at}", float(summary.score), summary.partial)
    if (eff := report.effective_length) is not None:
        put("effective_length", float(eff.value), eff.partial)
    for name, relative in report.relative_effective_length.items():
        if not relative.why:  # none: its base is not above chance
            put(f"relative_effective_length/{name}", float(relative.value), relative.partial)
    for name, long in report.long_score.items():
        if long.value is not None:
            put(f"long_score/{name}", long.value, long.partial)
    for gate in report.gates:
        out[f"ctxgate/gate/{gate.name}"] = 1.0 if gate.verdict == "pass" else 0.0
    return out


def case_table(report: Report) -> Table:
    columns = ["task", "length", "score", "n", "floor", "verdict", "fill_min", "message"]
    return columns, [[getattr(c, k) for k in columns] for c in report.cases]


def parse_target(text: str, run: str | None) -> Target:
    kind, _, where = text.partition("=")
    kind = kind.strip().lower()
    if kind not in (known := kinds()):
        raise TrackerError(
            f"--log-to {text!r}: {kind!r} is not a tracker ctxgate or an installed package logs "
            f"to; use one of {', '.join(known)}, e.g. --log-to tensorboard=runs/exp42"
        )
    env = {"wandb": "WANDB_RUN_ID", "mlflow": "MLFLOW_RUN_ID"}.get(kind)
    return Target(kind, where.strip() or None, run or (os.environ.get(env) if env else None))


def log(target: Target, logged: Logged) -> str:
    """Log to one tracker; returns where it went, for the terminal."""
    return kinds()[target.kind].log(target, logged)


def _wandb(target: Target, logged: Logged) -> str:
    import wandb

    step, values, table, name = logged.step, logged.values, logged.table, logged.name

    run = wandb.init(
        project=target.where or os.environ.get("WANDB_PROJECT") or "ctxgate",
        id=target.run,
        resume="allow" if target.run else None,
        name=None if target.run else name,
        job_type="ctxgate",
        reinit="create_new",
    )
    at_step = {"train/global_step": step or 0}
    try:
        run.define_metric("train/global_step")
        run.define_metric("ctxgate/*", step_metric="train/global_step")
        columns, rows = table
        cases = wandb.Table(columns=list[Any](columns), data=rows)
        # the same values as a table: readable in the offline run's files
        summary = wandb.Table(
            columns=["metric", "value"], data=[[k, v] for k, v in sorted(values.items())]
        )
        run.log({**values, "ctxgate/cases": cases, "ctxgate/summary": summary, **at_step})
        artifact = wandb.Artifact(f"ctxgate-report-{run.id}", type="ctxgate-report")
        artifact.add_file(str(logged.report_file), name="report.json")
        run.log_artifact(artifact)
        return f"W&B run {run.id} ({run.dir})"
    finally:
        run.finish()


def _tensorboard(target: Target, logged: Logged) -> str:
    from torch.utils.tensorboard import SummaryWriter

    step, values, table = logged.step, logged.values, logged.table

    folder = target.where or "runs/ctxgate"
    with SummaryWriter(log_dir=folder) as writer:
        for key, value in values.items():
            writer.add_scalar(key, value, global_step=step)
        columns, rows = table
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join("" if v is None else str(v) for v in r) + " |" for r in rows]
        writer.add_text("ctxgate/cases", "\n".join(lines), global_step=step)
        report = logged.report_file.read_text("utf-8")[:200_000]
        writer.add_text("ctxgate/report", report, global_step=step)
    return f"TensorBoard {folder}"


def _mlflow(target: Target, logged: Logged) -> str:
    import mlflow

    step, values, table, name = logged.step, logged.values, logged.table, logged.name

    client_uri = target.where or os.environ.get("MLFLOW_TRACKING_URI")
    if client_uri:
        if "://" not in client_uri or client_uri.startswith("file:"):
            # a file store named on purpose (MLflow 3 refuses one unless allowed)
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        mlflow.set_tracking_uri(client_uri)
    with mlflow.start_run(run_id=target.run, run_name=None if target.run else name) as run:
        mlflow.log_metrics(values, step=step or 0)  # "/" in a name groups metrics in MLflow's UI
        columns, rows = table
        mlflow.log_table(
            {c: [r[i] for r in rows] for i, c in enumerate(columns)},
            artifact_file="ctxgate/cases.json",
        )
        mlflow.log_artifact(str(logged.report_file), artifact_path="ctxgate")
        return f"MLflow run {run.info.run_id} ({mlflow.get_tracking_uri()})"


LIBRARIES: Sequence[TrackerKind] = (
    Library(
        "wandb",
        _wandb,
        "check WANDB_API_KEY and the network, or WANDB_MODE=offline and `wandb sync` later",
    ),
    Library("tensorboard", _tensorboard, "check that the log folder is writable"),
    Library("mlflow", _mlflow, "check the tracking URI and that its server runs"),
)
