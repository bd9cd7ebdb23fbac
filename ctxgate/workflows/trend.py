"""A trend's points: each report's RULER average, HELMET Recall and effective length at its
checkpoint's training step (from its name, else the order given). ``ctxgate trend`` (the training
extra) draws them; ``ctxgate html --trend`` shows them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ctxgate.records.io import read_report
from ctxgate.steps import training_step

CATEGORIES = (("ruler", "RULER avg"), ("helmet_recall", "HELMET Recall"))
FIELDS = ["report", "model", "step", "length", "category", "score", "partial"]


def load_points(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    rows = []
    for order, path in enumerate(paths):
        report = read_report(path)
        model = report.run.model
        step = training_step(model).value if model else None
        same = (str(path), model, order if step is None else step)  # FIELDS' first three
        for length, groups in report.length_summaries.items():
            for key, label in CATEGORIES:
                if (group := groups.get(key)) is not None and group.score is not None:
                    point = (length, label, group.score, group.partial or group.incomplete)
                    rows.append(dict(zip(FIELDS, (*same, *point))))
        if eff := report.effective_length:
            rows.append(dict(zip(FIELDS, (*same, "", "effective length", eff.value, eff.partial))))
    return sorted(rows, key=lambda r: (r["step"], r["category"], str(r["length"])))
