"""Assemble the report document from case records gathered on the controller."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from ctxgate import __version__
from ctxgate.aggregate import (EffectiveLength, GroupScore, effective_length, helmet_categories, helmet_overall,
                               helmet_recall, ruler_average, weighted_average)

SCHEMA_VERSION = 1


def prediction_rows(case: Mapping[str, Any], samples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``.predictions.jsonl`` lines of one case: each sample's record with the case's task, length, metric."""
    return [{"task": case["task"], "length": case["length"], "metric": case["metric"], **s} for s in samples]


def _group(g: GroupScore) -> dict[str, Any]:
    return {"score": g.score, "partial": g.partial, "members": list(g.members), "missing": list(g.missing)}


def _length_summary(ruler: GroupScore, scores: Mapping[str, float]) -> dict[str, Any]:
    categories = helmet_categories(scores)
    out = {"ruler": _group(ruler), "helmet_recall": _group(helmet_recall(scores)),
           **{f"helmet_{name}": _group(g) for name, g in categories.items() if name != "recall"}}
    if categories:
        out["helmet_overall"] = _group(helmet_overall(categories))
    return out


def summarize(cases: Sequence[Mapping[str, Any]], threshold: float) -> tuple[dict[str, Any], EffectiveLength | None]:
    scored: dict[int, dict[str, float]] = {}
    for c in cases:
        if c.get("score") is not None and c.get("verdict") in ("pass", "fail"):
            scored.setdefault(int(c["length"]), {})[c["task"]] = float(c["score"])
    ruler = {L: ruler_average(s) for L, s in scored.items()}
    by_length = {str(L): _length_summary(ruler[L], s) for L, s in sorted(scored.items())}
    eff = effective_length(ruler, threshold)
    ruler_scores = {L: g.score for L, g in ruler.items() if g.score is not None}
    overall = {"ruler_avg": round(sum(ruler_scores.values()) / len(ruler_scores), 2) if ruler_scores else None,
               "ruler_wavg_inc": weighted_average(ruler_scores, True),
               "ruler_wavg_dec": weighted_average(ruler_scores, False)}
    return {"by_length": by_length, "overall": overall}, eff


def build_report(cases: Sequence[Mapping[str, Any]], run: Mapping[str, Any], threshold: float,
                 gates: Sequence[Mapping[str, Any]], complete: bool) -> dict[str, Any]:
    summary, eff = summarize(cases, threshold)
    return {
        "schema_version": SCHEMA_VERSION,
        "ctxgate_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "complete": complete,
        "run": dict(run),
        "cases": sorted((dict(c) for c in cases), key=lambda c: (c["suite"], c["task"], c["length"])),
        **summary,
        "effective_length": None if eff is None else {
            "value": eff.value, "max_passing": eff.max_passing, "threshold": eff.threshold, "partial": eff.partial,
            "per_length": {str(k): v for k, v in eff.per_length.items()}},
        "gates": list(gates),
    }
