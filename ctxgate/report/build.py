"""Assemble the report from case records gathered on the controller and the session verdict ``gate`` computed from
them."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from ctxgate import __version__
from ctxgate.gate.session import SessionVerdict
from ctxgate.records.schema import BaselineRun, CaseRecord, Report, RunError, RunInfo


def prediction_rows(case: CaseRecord, samples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``.predictions.jsonl`` lines of one case: each sample's record with the case's task, length, metric and
    whether its prompt had the chat template (which decides how HELMET scores the output)."""
    head = {"task": case.task, "length": case.length, "metric": case.metric, "chat_template": case.chat_template}
    return [{**head, **s} for s in samples]


def build_report(
    cases: Sequence[CaseRecord],
    run: RunInfo,
    verdict: SessionVerdict,
    session_complete: bool,
    error: RunError | None = None,
    baseline: BaselineRun | None = None,
) -> Report:
    """The report: the run, its cases, and the session's summaries and gates as ``gate`` judged them.
    ``session_complete``: the session itself finished. ``error``: what stopped the whole run (the model could not
    be loaded), or None. ``baseline``: the ``--baseline`` run's path and the cases it scored."""
    return Report(
        ctxgate_version=__version__,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        complete=verdict.complete,
        session_complete=session_complete,
        error=error,
        run=run,
        cases=tuple(sorted(cases, key=lambda c: (c.suite, c.task, c.length))),
        by_length=verdict.by_length,
        overall=verdict.overall,
        effective_length=verdict.effective_length,
        baseline=baseline,
        gates=verdict.gates,
    )
