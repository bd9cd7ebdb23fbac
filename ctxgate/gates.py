"""A case's verdict from its record: the judge failure gate and the score floor, as pure functions shared by the
pytest plugin (while the suite runs) and ``ctxgate judge`` (when stored outputs are judged later)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxgate.lengths import format_length
from ctxgate.thresholds import Thresholds


def judge_failure(record: Mapping[str, Any]) -> str | None:
    """Too many failed verdicts fail a judged case whatever its score: its mean would rest on too few samples."""
    judge = record.get("judge") or {}
    if judge.get("status") not in ("judged", "failed"):
        return None
    if judge["status"] == "failed" or judge["failure_rate"] > judge["max_failure_rate"]:
        first = judge["failed_samples"][0] if judge["failed_samples"] else {}
        return (f"{judge['failed']} of {judge['failed'] + record['n']} verdicts failed (rate "
                f"{judge['failure_rate']:.0%} > max {judge['max_failure_rate']:.0%}); first: sample "
                f"{first.get('index')}: {first.get('error')}. Check the judge server, or raise [judge] "
                "max_failure_rate in thresholds.toml")
    return None


def floor_failure(record: Mapping[str, Any], thresholds: Thresholds) -> str | None:
    """Below the floor (with rule "upper": the whole interval below it)."""
    floor = record["floor"]
    low, high = record["ci"]
    judged = high if thresholds.rule == "upper" else record["score"]
    if judged >= floor:
        return None
    length = record["length"]
    return (f"{record['task']} at {length} ({format_length(length)}): score {record['score']:.1f} < floor "
            f"{floor:.1f} (n={record['n']}, {int(thresholds.confidence * 100)}% CI {low:.1f}-{high:.1f}, rule "
            f"{thresholds.rule!r}, floors from {thresholds.path})")


def passed(record: Mapping[str, Any]) -> str:
    return f"score {record['score']:.1f} >= floor {record['floor']:.1f}"


def floors_gate(cases: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    failed = [c for c in cases if c["verdict"] == "fail"]
    ran = [c for c in cases if c["verdict"] in ("pass", "fail")]
    return {"name": "floors", "verdict": "fail" if failed else "pass",
            "message": f"{len(failed)} of {len(ran)} cases below their floor"}
