"""Assemble the report from the controller's case records and the session verdict ``gate`` gave."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

from ctxgate import __version__
from ctxgate.gate.session import SessionVerdict
from ctxgate.hooks import flat, hook, installed
from ctxgate.records.case import CaseRecord, Prediction, SampleOutcome
from ctxgate.records.cost import Cost, RunCost
from ctxgate.records.schema import Report, RunError, RunInfo


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
    error: RunError | None = None,
) -> Report:
    """The verdict's fields are the report's of the same names (what it judged with included)."""
    judged = {f.name: getattr(verdict, f.name) for f in fields(verdict)}
    return Report(
        ctxgate_version=__version__,
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        error=error,
        run=run,
        cases=tuple(sorted(cases, key=lambda c: (c.suite, c.task, c.length))),
        cost=run_cost(cases, run.backend),
        **judged,
    )


def with_sections(report: Report, earlier: Report | None = None) -> Report:
    """The report with the extras' sections (``hookspec.ctxgate_report_sections``), asked of the
    report as it stands; ``earlier``'s sections of extras not installed here are kept as written."""
    here = set(installed())
    sections = list(flat(hook().ctxgate_report_sections(report=report)))
    kept = [s for s in earlier.sections if s.extra not in here] if earlier else []
    return replace(report, sections=tuple(kept + sections))


def with_ledger(
    cases: Sequence[CaseRecord], ledger: Mapping[tuple[str, int], Cost]
) -> list[CaseRecord]:
    """Each case's cost, at least what the run's ledger in the generation cache says it generated
    (``run/cache.spent_in``): a case that ended before its record could say so (an interrupt, a
    worker's death, an error mid-case) counts every generation it sent that came back."""
    out = []
    for case in cases:
        spent = ledger.get((case.task, case.length))
        if spent is not None and (case.cost is None or case.cost.generations < spent.generations):
            ran = {"generations": spent.generations, "prompt_tokens": spent.prompt_tokens}
            ran["generated_tokens"] = spent.generated_tokens
            case = replace(case, cost=replace(case.cost or Cost(), **ran))
        out.append(case)
    return out


def run_cost(cases: Sequence[CaseRecord], backend: Any) -> RunCost:
    """The cases' costs summed, per length and in all, in the device the backend names."""
    by_length: dict[int, Cost] = {}
    for c in cases:
        if c.cost is not None:
            by_length[c.length] = by_length.get(c.length, Cost()) + c.cost
    total = sum(by_length.values(), Cost())
    device, gpus = _device(backend if isinstance(backend, dict) else {})
    return RunCost(
        total,
        device=device if total.generations else None,
        gpu_seconds=round(total.engine_seconds * gpus, 3) if gpus else None,
        by_length={str(L): by_length[L] for L in sorted(by_length)},
    )


def _device(backend: dict[str, Any]) -> tuple[str | None, int]:
    """What generated, and how many GPUs it held (0: a CPU, a server, a cluster's replicas)."""
    devices = [str(d) for d in backend.get("devices") or ()]
    if gpus := sum(d.startswith("cuda") for d in devices):
        return f"{backend.get('device_name') or 'GPU'} x{gpus}", gpus
    if devices:
        return ", ".join(devices), 0
    if endpoints := backend.get("endpoints"):
        more = f" (+{len(endpoints) - 1} more)" if len(endpoints) > 1 else ""
        return f"the server at {endpoints[0]}{more}", 0
    return backend.get("backend"), 0
