"""Assemble the report document from case records gathered on the controller."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from ctxgate import __version__
from ctxgate.gate.summaries import (
    EffectiveLength,
    GroupScore,
    effective_length,
    helmet_categories,
    helmet_overall,
    helmet_recall,
    ruler_average,
    weighted_average,
)
from ctxgate.gate.thresholds import Thresholds
from ctxgate.gate.verdicts import session_gates
from ctxgate.report.schema import SCHEMA_VERSION


def prediction_rows(case: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
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


def _group(g: GroupScore) -> dict[str, Any]:
    return {
        "score": g.score,
        "partial": g.partial,
        "members": list(g.members),
        "missing": list(g.missing),
        "incomplete": g.incomplete,
        "errored": list(g.errored),
    }


def _length_summary(ruler: GroupScore, scores: Mapping[str, float], errored: set[str]) -> dict[str, Any]:
    categories = helmet_categories(scores, errored)
    out = {
        "ruler": _group(ruler),
        "helmet_recall": _group(helmet_recall(scores, errored)),
        **{f"helmet_{name}": _group(g) for name, g in categories.items() if name != "recall"},
    }
    if categories:
        out["helmet_overall"] = _group(helmet_overall(categories))
    return out


def summarize(cases: Sequence[Mapping[str, Any]], threshold: float) -> tuple[dict[str, Any], EffectiveLength | None]:
    """Scores per length from the cases that have one; a case with verdict "error" (no score: it failed, its worker
    crashed, or the run stopped first) makes every summary it belongs to incomplete."""
    scored: dict[int, dict[str, float]] = {}
    errored: dict[int, set[str]] = {}
    for c in cases:
        length = int(c["length"])
        if c.get("score") is not None and c.get("verdict") in ("pass", "fail"):
            scored.setdefault(length, {})[c["task"]] = float(c["score"])
        elif c.get("verdict") == "error":
            errored.setdefault(length, set()).add(c["task"])
    lengths = sorted(set(scored) | set(errored))
    ruler = {L: ruler_average(scored.get(L, {}), errored.get(L, set())) for L in lengths}
    by_length = {str(L): _length_summary(ruler[L], scored.get(L, {}), errored.get(L, set())) for L in lengths}
    eff = effective_length(ruler, threshold)
    ruler_scores = {L: g.score for L, g in ruler.items() if g.score is not None}
    overall = {
        "ruler_avg": round(sum(ruler_scores.values()) / len(ruler_scores), 2) if ruler_scores else None,
        "ruler_wavg_inc": weighted_average(ruler_scores, True),
        "ruler_wavg_dec": weighted_average(ruler_scores, False),
        "incomplete": any(g.incomplete for g in ruler.values()),
    }
    return {"by_length": by_length, "overall": overall}, eff


def build_report(
    cases: Sequence[Mapping[str, Any]],
    run: Mapping[str, Any],
    thresholds: Thresholds,
    complete: bool,
    error: Mapping[str, Any] | None = None,
    threshold: float | None = None,
    baseline: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The report with its session gates. ``complete``: the session finished (a case that errored, crashed or was
    left unrun makes it incomplete too). ``error``: what stopped the whole run (the model could not be loaded), or
    None. ``threshold``: the effective-length bar when not the thresholds' own (a report judged again keeps its).
    ``baseline``: the ``--baseline`` run's path and the cases it scored, for the baseline gate."""
    summary, eff = summarize(cases, thresholds.effective_threshold if threshold is None else threshold)
    report = {
        "schema_version": SCHEMA_VERSION,
        "ctxgate_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "complete": complete and not any(c.get("verdict") == "error" for c in cases),
        "session_complete": complete,  # the session itself finished (cases may still lack scores)
        "error": dict(error) if error else None,
        "run": dict(run),
        "cases": sorted((dict(c) for c in cases), key=lambda c: (c["suite"], c["task"], c["length"])),
        **summary,
        "effective_length": None
        if eff is None
        else {
            "value": eff.value,
            "max_passing": eff.max_passing,
            "threshold": eff.threshold,
            "partial": eff.partial,
            "incomplete": list(eff.incomplete),
            "per_length": {str(k): v for k, v in eff.per_length.items()},
        },
    }
    if baseline:
        report["baseline"] = dict(baseline)
    report["gates"] = session_gates(report, thresholds)
    return report
