"""What the HTML report shows of the samples (``.predictions.jsonl`` rows): each case's rows,
trimmed for the page; the needle depth x length grid of the NIAH tasks; the samples that flipped
against a baseline. Pure functions of the rows, so the page and its tests share them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ctxgate.api import DEPTHS, Prediction, UnknownTask, get_task

# a sample counts as right at half its metric or more (per-sample scores are in 0..1)
RIGHT = 0.5
# of a prediction or an answer on the page; the predictions file keeps them whole
PREDICTION_CHARS = 600
ANSWERS_SHOWN = 8


def case_key(task: str, length: int) -> str:
    """The id of a case on the page (``#case/niah_single_1/4096``)."""
    return f"case/{task}/{length}"


def _clip(text: str, limit: int = PREDICTION_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"


def page_row(row: Prediction) -> dict[str, object]:
    """One sample as the drill-down shows it."""
    answers = [_clip(a, 200) for a in row.answers[:ANSWERS_SHOWN]]
    more = len(row.answers) - ANSWERS_SHOWN
    return {
        "i": row.index,
        "s": row.score,
        "p": _clip(row.prediction),
        "a": answers + ([f"… {more} more"] if more > 0 else []),
        "x": row.excerpts,
        "o": row.output_tokens,
        "t": row.seconds,
        "e": row.judge_error,
        "th": None if row.thought is None else _clip(row.thought),
        "te": row.thought_end,
        "tt": row.thought_tokens,
    }


def by_case(rows: Iterable[Prediction]) -> dict[tuple[str, int], list[Prediction]]:
    cases: dict[tuple[str, int], list[Prediction]] = {}
    for row in sorted(rows, key=lambda r: r.index):
        cases.setdefault((row.task, row.length), []).append(row)
    return cases


def nearest_depth(depth: float) -> int:
    """RULER's depth (of 40) nearest ``depth`` percent (the line tasks place needles at random)."""
    return min(DEPTHS, key=lambda d: (abs(d - depth), d))


@dataclass(frozen=True)
class DepthGrid:
    """Mean score per (RULER depth, length) of the samples with a needle there, in percent."""

    task: str  # a task, or "all" for every NIAH task together
    lengths: tuple[int, ...]
    cells: Mapping[tuple[int, int], tuple[float, int]]  # (depth, length) -> (mean percent, needles)


def _is_niah(task: str) -> bool:
    try:
        return get_task(task).category == "niah"
    except UnknownTask:  # a report of a task this version does not have
        return False


def depth_grids(rows: Iterable[Prediction]) -> list[DepthGrid]:
    """A grid per task whose samples record needle depths, then one of all of RULER's NIAH
    tasks: each needle counts its sample's score at its depth."""
    sums: dict[str, dict[tuple[int, int], list[float]]] = {}
    for row in rows:
        needles = (row.excerpts or {}).get("needles")
        if row.score is None or not isinstance(needles, list):
            continue
        for needle in needles:
            depth = needle.get("depth") if isinstance(needle, dict) else None
            if not isinstance(depth, (int, float)):
                continue
            key = (nearest_depth(float(depth)), row.length)
            for task in (row.task, *(["all"] if _is_niah(row.task) else [])):
                sums.setdefault(task, {}).setdefault(key, []).append(row.score)
    grids = []
    for task in sorted(sums, key=lambda t: (t == "all", t)):
        if task == "all" and sum(map(_is_niah, sums)) == 1:
            continue  # one NIAH task: its own grid says it all
        cells = {k: (100 * sum(v) / len(v), len(v)) for k, v in sums[task].items()}
        grids.append(DepthGrid(task, tuple(sorted({L for _, L in cells})), cells))
    return grids


@dataclass(frozen=True)
class Flip:
    task: str
    length: int
    index: int
    before: Prediction  # the baseline's row
    after: Prediction

    @property
    def lost(self) -> bool:
        """Right in the baseline, wrong now."""
        return (self.before.score or 0.0) >= RIGHT > (self.after.score or 0.0)


def flips(rows: Sequence[Prediction], baseline_rows: Sequence[Prediction]) -> list[Flip]:
    """Samples right in one run and wrong in the other, paired on the same sample (its sha256)."""
    before = {(r.task, r.length, r.index): r for r in baseline_rows}
    found = []
    for row in rows:
        key = (row.task, row.length, row.index)
        old = before.get(key)
        if old is None or old.score is None or row.score is None:
            continue
        if old.sample_sha256 == row.sample_sha256 and (old.score >= RIGHT) != (row.score >= RIGHT):
            found.append(Flip(*key, old, row))
    return sorted(found, key=lambda f: (f.task, f.length, f.index))
