"""Assemble the report document from case records gathered on the controller and the session verdict ``gate``
computed from them."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from ctxgate import __version__
from ctxgate.gate.session import SessionVerdict
from ctxgate.records.schema import SCHEMA_VERSION, CaseRecord


def prediction_rows(case: CaseRecord, samples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``.predictions.jsonl`` lines of one case: each sample's record with the case's task, length, metric and
    whether its prompt had the chat template (which decides how HELMET scores the output)."""
    return [
        {
            "task": case["task"],
            "length": case["length"],
            "metric": case["metric"],
            "chat_template": case.get("chat_template"),
            **s,
        }
        for s in samples
    ]


def build_report(
    cases: Sequence[CaseRecord],
    run: Mapping[str, Any],
    verdict: SessionVerdict,
    session_complete: bool,
    error: Mapping[str, Any] | None = None,
    baseline: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The report document: the run, its cases, and the session's summaries and gates as ``gate`` judged them.
    ``session_complete``: the session itself finished. ``error``: what stopped the whole run (the model could not
    be loaded), or None. ``baseline``: the ``--baseline`` run's path and the cases it scored."""
    report = {
        "schema_version": SCHEMA_VERSION,
        "ctxgate_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "complete": verdict.complete,
        "session_complete": session_complete,  # the session itself finished (cases may still lack scores)
        "error": dict(error) if error else None,
        "run": dict(run),
        "cases": sorted((dict(c) for c in cases), key=lambda c: (c["suite"], c["task"], c["length"])),
        "by_length": verdict.by_length,
        "overall": verdict.overall,
        "effective_length": verdict.effective_length,
    }
    if baseline:
        report["baseline"] = dict(baseline)
    report["gates"] = verdict.gates
    return report
