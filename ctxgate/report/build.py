"""Assemble the report from the controller's case records and the session verdict ``gate`` gave."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import fields

from ctxgate import __version__
from ctxgate.gate.session import SessionVerdict
from ctxgate.records.schema import (
    BaselineRun,
    CaseRecord,
    Prediction,
    Report,
    RunError,
    RunInfo,
    SampleOutcome,
)


def prediction_rows(case: CaseRecord, samples: Sequence[SampleOutcome]) -> list[Prediction]:
    """The ``.predictions.jsonl`` lines of one case: each sample under its case."""
    return [
        Prediction(
            **{f.name: getattr(s, f.name) for f in fields(SampleOutcome)},
            task=case.task,
            length=case.length,
            metric=case.metric,
            chat_template=case.chat_template,
        )
        for s in samples
    ]


def build_report(
    cases: Sequence[CaseRecord],
    run: RunInfo,
    verdict: SessionVerdict,
    session_complete: bool,
    error: RunError | None = None,
    baseline: BaselineRun | None = None,
) -> Report:
    """The verdict's fields are the report's of the same names."""
    judged = {f.name: getattr(verdict, f.name) for f in fields(verdict)}
    return Report(
        ctxgate_version=__version__,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        session_complete=session_complete,
        error=error,
        run=run,
        cases=tuple(sorted(cases, key=lambda c: (c.suite, c.task, c.length))),
        baseline=baseline,
        **judged,
    )
