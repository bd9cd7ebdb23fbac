"""What a tracker is given: the report's numbers under flat names, and the training step they belong to.

Names are ``ctxgate/<what>/<length>`` so a tracker groups them per length (``ctxgate/ruler_avg/128K``,
``ctxgate/helmet_recall/32K``, ``ctxgate/case/niah_single_1/8K``); a score without a value (a case that could not
run, a partial category) is left out rather than logged as 0, which would draw a false drop on the curve.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.lengths import format_length

# checkpoint-1200 (Trainer), step-1200 / step_1200, global_step1200 (DeepSpeed), iter_0001200 (Megatron)
STEP_NAME = re.compile(r"(?:checkpoint|global_step|step|iter)[-_]?(\d+)$")


@dataclass(frozen=True)
class Step:
    value: int | None
    source: str  # how it was found: --step, trainer_state.json, the folder's name, or none
    tokens_seen: int | None = None


def training_step(model_dir: str | None, given: int | None) -> Step:
    """``--step``, else Trainer's ``trainer_state.json`` (``global_step``, and ``num_input_tokens_seen`` when the
    run counted them), else a step in the checkpoint folder's name."""
    tokens = None
    folder = Path(model_dir) if model_dir else None
    if folder is not None and (folder / "trainer_state.json").is_file():
        try:
            state = json.loads((folder / "trainer_state.json").read_text("utf-8"))
        except (OSError, ValueError):
            state = {}
        tokens = state.get("num_input_tokens_seen") if isinstance(state, dict) else None
        tokens = int(tokens) if isinstance(tokens, (int, float)) and tokens > 0 else None
        if given is None and isinstance(state, dict) and isinstance(state.get("global_step"), int):
            return Step(state["global_step"], "trainer_state.json", tokens)
    if given is not None:
        return Step(given, "--step", tokens)
    if folder is not None and (m := STEP_NAME.search(folder.resolve().name)):
        return Step(int(m.group(1)), f"the folder's name ({folder.name})", tokens)
    return Step(None, "none", tokens)


def metrics(report: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for case in report.get("cases", []):
        if case.get("score") is not None:
            at = format_length(int(case["length"]))
            out[f"ctxgate/case/{case['task']}/{at}"] = float(case["score"])
            out[f"ctxgate/case_n/{case['task']}/{at}"] = float(case.get("n") or 0)
    for length, groups in (report.get("by_length") or {}).items():
        at = format_length(int(length))
        for group, summary in groups.items():
            if isinstance(summary, dict) and summary.get("score") is not None:
                name = "ruler_avg" if group == "ruler" else group
                out[f"ctxgate/{name}/{at}"] = float(summary["score"])
    effective = (report.get("effective_length") or {}).get("value")
    if effective is not None:
        out["ctxgate/effective_length"] = float(effective)
    for gate in report.get("gates") or []:
        out[f"ctxgate/gate/{gate['name']}"] = 1.0 if gate.get("verdict") == "pass" else 0.0
    return out


def case_table(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """The per-case table: columns and rows, for a tracker's table view."""
    columns = ["task", "length", "score", "n", "floor", "verdict", "fill_min", "message"]
    rows = [[c.get(k) for k in columns] for c in report.get("cases", [])]
    return columns, rows
