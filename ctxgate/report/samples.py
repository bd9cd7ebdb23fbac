"""What the HTML report shows of the samples (``.predictions.jsonl`` rows): each case's rows, trimmed for the page;
the needle depth x length grid of the NIAH tasks; the samples that flipped against a baseline.

Pure functions of the rows, so the page and its tests share them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ctxgate.tasks.niah import DEPTHS

RIGHT = 0.5  # a sample counts as right at half its metric or more (the metrics' per-sample scores are in 0..1)
PREDICTION_CHARS = 600  # of a prediction or an answer on the page; the predictions file keeps them whole
ANSWERS_SHOWN = 8


def case_key(task: str, length: int) -> str:
    """The id of a case on the page (``#case/niah_single_1/4096``)."""
    return f"case/{task}/{length}"


def _clip(text: Any, limit: int = PREDICTION_CHARS) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def page_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """One sample as the drill-down shows it."""
    answers = [_clip(a, 200) for a in list(row.get("answers") or ())[:ANSWERS_SHOWN]]
    more = len(row.get("answers") or ()) - ANSWERS_SHOWN
    return {
        "i": row.get("index"),
        "s": row.get("score"),
        "p": _clip(row.get("prediction")),
        "a": answers + ([f"… {more} more"] if more > 0 else []),
        "x": row.get("excerpts"),
        "o": row.get("output_tokens"),
        "t": row.get("seconds"),
        "e": row.get("judge_error"),
    }


def by_case(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], list[Mapping[str, Any]]]:
    cases: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
    for row in rows:
        cases.setdefault((str(row["task"]), int(row["length"])), []).append(row)
    for found in cases.values():
        found.sort(key=lambda r: int(r.get("index", 0)))
    return cases


def nearest_depth(depth: float) -> int:
    """RULER's depth (of its 40) closest to ``depth`` percent: the line tasks place needles at random lines."""
    return min(DEPTHS, key=lambda d: (abs(d - depth), d))


@dataclass(frozen=True)
class DepthGrid:
    """Mean sample score per (RULER depth, length) of the samples with a needle there, in percent."""

    task: str  # a task, or "all" for every NIAH task together
    lengths: tuple[int, ...]
    cells: Mapping[tuple[int, int], tuple[float, int]]  # (depth, length) -> (mean percent, needles)


def depth_grids(rows: Iterable[Mapping[str, Any]]) -> list[DepthGrid]:
    """A grid per task whose samples record needle depths, then one of all of them: each needle of a sample
    counts its sample's score at its depth."""
    sums: dict[str, dict[tuple[int, int], list[float]]] = {}
    for row in rows:
        needles = (row.get("excerpts") or {}).get("needles") or ()
        if row.get("score") is None:
            continue
        for needle in needles:
            if needle.get("depth") is None:
                continue
            key = (nearest_depth(float(needle["depth"])), int(row["length"]))
            for task in (str(row["task"]), "all"):
                sums.setdefault(task, {}).setdefault(key, []).append(float(row["score"]))
    grids = []
    for task in sorted(sums, key=lambda t: (t == "all", t)):
        if task == "all" and len(sums) == 2:
            continue  # one task: its own grid says it all
        cells = {k: (100 * sum(v) / len(v), len(v)) for k, v in sums[task].items()}
        grids.append(DepthGrid(task, tuple(sorted({L for _, L in cells})), cells))
    return grids


@dataclass(frozen=True)
class Flip:
    task: str
    length: int
    index: int
    before: Mapping[str, Any]  # the baseline's row
    after: Mapping[str, Any]

    @property
    def lost(self) -> bool:
        """Right in the baseline, wrong now."""
        return float(self.before["score"]) >= RIGHT > float(self.after["score"])


def flips(rows: Sequence[Mapping[str, Any]], baseline_rows: Sequence[Mapping[str, Any]]) -> list[Flip]:
    """Samples right in one run and wrong in the other, paired on the same sample (its sha256)."""
    before = {(str(r["task"]), int(r["length"]), int(r["index"])): r for r in baseline_rows}
    found = []
    for row in rows:
        key = (str(row["task"]), int(row["length"]), int(row["index"]))
        old = before.get(key)
        if old is None or row.get("score") is None or old.get("score") is None:
            continue
        if old.get("sample_sha256") != row.get("sample_sha256"):
            continue
        if (float(old["score"]) >= RIGHT) != (float(row["score"]) >= RIGHT):
            found.append(Flip(*key, old, row))
    return sorted(found, key=lambda f: (f.task, f.length, f.index))
