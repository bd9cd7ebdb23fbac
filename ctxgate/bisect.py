"""Find the first checkpoint where a capability broke, in about log2(N) evaluations.

Checkpoints are ordered by the step number in their names (``checkpoint-1000``, ``step_2000``, ``global_step300``).
The good end is evaluated once and is the reference; a probe is *bad* by the baseline gate's rule (a selected case
dropped by more than its tolerance with the stated confidence, paired on the same samples). The bad end is taken
as given when named, and checked when ctxgate has to find it. Every generation goes through the cache, so a
re-run of the same bisect, or one that shares probes with an earlier one, generates nothing twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ctxgate.paired import PairedResult, compare
from ctxgate.runner import CaseResult

_STEP = re.compile(r"(\d+)(?!.*\d)")

# (checkpoint, the reference's results or None for the reference itself) -> results per case
Evaluate = Callable[[Path, Mapping[tuple[str, int], CaseResult] | None], Mapping[tuple[str, int], CaseResult]]


class BisectError(ValueError):
    """Unusable checkpoints or ends; the message says what to pass."""


def step_number(name: str) -> int | None:
    """The last number in a checkpoint's name: checkpoint-1000, step_2000, global_step300."""
    match = _STEP.search(name)
    return int(match.group(1)) if match else None


def step_of(path: Path) -> int:
    step = step_number(path.name)
    if step is None:
        raise BisectError(f"cannot order {path}: its name has no step number (expected e.g. checkpoint-1000)")
    return step


def order_checkpoints(paths: Sequence[str | Path]) -> list[Path]:
    """A single folder of checkpoints, or an explicit list; sorted by step number."""
    items = [Path(p) for p in paths]
    if len(items) == 1 and items[0].is_dir() and not (items[0] / "config.json").is_file():
        items = [p for p in items[0].iterdir() if p.is_dir() and (p / "config.json").is_file()]
    if len(items) < 2:
        raise BisectError(f"bisect needs at least two checkpoints, found {len(items)} in {', '.join(map(str, paths))}")
    steps = [step_of(p) for p in items]
    if len(set(steps)) != len(steps):
        raise BisectError("two checkpoints share a step number: " + ", ".join(sorted(p.name for p in items)))
    return [p for _, p in sorted(zip(steps, items))]


def resolve_end(checkpoints: Sequence[Path], name: str | None, default: int) -> int:
    if name is None:
        return default
    for i, p in enumerate(checkpoints):
        if name in (str(p), p.name) or (name.isdigit() and step_of(p) == int(name)):
            return i
    raise BisectError(f"{name!r} is none of the checkpoints: give a name such as {checkpoints[0].name} or a step")


@dataclass
class Probe:
    index: int
    path: Path
    bad: bool
    comparisons: dict[tuple[str, int], PairedResult] = field(default_factory=dict)
    from_cache: int = 0
    samples: int = 0


@dataclass
class BisectResult:
    first_bad: int
    checkpoints: list[Path]
    probes: list[Probe]
    evaluations: int

    def render(self) -> str:
        lines = []
        for p in self.probes:
            cases = "; ".join(f"{t}@{L}: {r.current:.1f} (delta {r.delta:+.1f}, upper {r.high:+.1f})"
                              for (t, L), r in sorted(p.comparisons.items()))
            lines.append(f"  [{p.index}] {p.path.name}: {'BAD ' if p.bad else 'good'}  {cases or 'reference'}"
                         f"  (cached {p.from_cache}/{p.samples})")
        lines.append(f"first bad checkpoint: {self.checkpoints[self.first_bad]} (index {self.first_bad}, "
                     f"{self.evaluations} evaluations)")
        return "\n".join(lines)


def is_bad(reference: Mapping[tuple[str, int], CaseResult], probe: Mapping[tuple[str, int], CaseResult],
           tolerance: Callable[[str, int], float], confidence: float) -> tuple[bool, dict[tuple[str, int], PairedResult]]:
    comparisons, bad = {}, False
    for key, ref in reference.items():
        mine = probe[key]
        ref_samples = {s.index: s for s in ref.samples}
        # a probe under --sequential draws the reference's first samples only: each must be the same prompt
        if ref.data_sha256 != mine.data_sha256 and any(
                s.index not in ref_samples or ref_samples[s.index].sample_sha256 != s.sample_sha256
                for s in mine.samples):
            raise BisectError(f"{key[0]}@{key[1]}: the checkpoints built different samples; they must share a "
                              "tokenizer and chat template to be bisected")
        result = compare([s.score for s in mine.samples], [ref_samples[s.index].score for s in mine.samples],
                         confidence)
        comparisons[key] = result
        test = (mine.sequential or {}).get("baseline") or {}
        regressed = {"below": True, "above": False}.get(test.get("decided"), result.regressed(tolerance(*key)))
        bad = bad or regressed
    return bad, comparisons


def _cached(results: Mapping[tuple[str, int], CaseResult]) -> tuple[int, int]:
    return sum(r.samples_from_cache for r in results.values()), sum(r.n for r in results.values())


def bisect(checkpoints: Sequence[Path], good: int, bad: int | None, evaluate: Evaluate,
           tolerance: Callable[[str, int], float], confidence: float = 0.95) -> BisectResult:
    checkpoints = list(checkpoints)
    end = len(checkpoints) - 1 if bad is None else bad
    if not 0 <= good < end < len(checkpoints):
        raise BisectError(f"the good checkpoint ({good}) must come before the bad one ({end})")
    reference = evaluate(checkpoints[good], None)
    if not reference:
        raise BisectError("the case selection matched no case: check -k and --lengths")
    probes = [Probe(good, checkpoints[good], False, {}, *_cached(reference))]
    evaluations = 1

    def probe(i: int) -> bool:
        nonlocal evaluations
        evaluations += 1
        results = evaluate(checkpoints[i], reference)
        verdict, comparisons = is_bad(reference, results, tolerance, confidence)
        probes.append(Probe(i, checkpoints[i], verdict, comparisons, *_cached(results)))
        return verdict

    if bad is None and not probe(end):
        raise BisectError(f"the last checkpoint {checkpoints[end].name} is not worse than {checkpoints[good].name} "
                          "by the gate's rule: nothing to bisect (or pass --bad, --tolerance)")
    lo, hi = good, end  # invariant: lo good, hi bad
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if probe(mid):
            hi = mid
        else:
            lo = mid
    return BisectResult(hi, checkpoints, probes, evaluations)
