"""Baseline runs: load a report with its per-sample predictions and compare cases with it, paired.
Two runs are comparable only when they built the same prompts (same data, chat template and
tokenizer); anything else is an error that names what differs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxgate.gate.session import stopped_early
from ctxgate.gate.thresholds import Thresholds
from ctxgate.records.case import Comparison, StopRecord
from ctxgate.records.io import ReportFileError, predictions_path, read_predictions, read_report
from ctxgate.records.schema import RunInfo
from ctxgate.refusal import CtxgateError
from ctxgate.run.case import CaseResult
from ctxgate.stats.paired import PairedResult, compare


@dataclass(frozen=True)
class RunKey:
    """A setting of the run's record a baseline must share: its key, the words a refusal names it
    with, and how an older report's value reads in this version's terms."""

    key: str
    words: str
    as_now: Callable[[Any], Any] = lambda value: value


def _thinking_now(value: Any) -> Any:
    """A report from before ``budget_by`` was recorded forced its thinking budget, as every
    engine then did; one from before ``answer_prefix`` kept the prefix in the prompt."""
    if not isinstance(value, dict):
        return value
    if "budget_by" not in value:
        value = value | {"budget_by": "forcing" if value.get("budget") is not None else None}
    return {"answer_prefix": None} | value


# run-level fields that must match (an extra's run slot says so itself: ``Slot.baseline``)
_RUN_KEYS = (
    RunKey("chat_template", "chat-template setting"),
    RunKey("chat_template_sha256", "chat template"),
    RunKey("tokenizer_sha256", "tokenizer"),
    RunKey("haystack_sha256", "essay haystack"),
    RunKey("seed", "data seed"),
    RunKey(
        "thinking",
        "thinking setting (--thinking, --thinking-budget, the thought's markers, where the answer "
        "prefix goes)",
        _thinking_now,
    ),
)


class BaselineError(CtxgateError, ValueError):
    """The baseline cannot be used; the message names what differs and what to do."""


@dataclass(frozen=True)
class BaselineCase:
    task: str
    length: int
    data_sha256: str | None
    scores: Mapping[int, float]  # sample index -> score in [0, 1]
    digests: Mapping[int, str] = field(default_factory=dict)  # sample index -> the sample's sha256


@dataclass(frozen=True)
class Baseline:
    path: str
    run: RunInfo
    cases: Mapping[tuple[str, int], BaselineCase]
    complete: bool = True
    unscored: Mapping[tuple[str, int], str] = field(default_factory=dict)  # selected, no score: why
    skipped: Mapping[tuple[str, int], str] = field(default_factory=dict)  # selected, skipped: why
    # cases a --sequential baseline stopped early: (samples it scored, its sample count). Their
    # means are biased by the stopping, and a later run can pair no more samples than they have
    stopped_early: Mapping[tuple[str, int], tuple[int, int]] = field(default_factory=dict)

    def sequential_note(self) -> str | None:
        """What a --sequential baseline leaves a comparison without, or None."""
        if not self.stopped_early:
            return None
        (task, length), (used, budget) = next(iter(sorted(self.stopped_early.items())))
        return (
            f"--baseline {self.path} was a --sequential run that stopped {len(self.stopped_early)} "
            f"case(s) early (e.g. {task}-{length} after {used} of {budget} samples): those cases "
            "are compared on the samples it scored only, whose mean the stopping biased; for a "
            "full paired test re-run the baseline without --sequential"
        )

    def incompleteness(self) -> str | None:
        """Why this report cannot stand for its whole selection, or None when it can."""
        if self.complete and not self.unscored:
            return None
        named = ", ".join(f"{t}-{L} ({why})" for (t, L), why in sorted(self.unscored.items())[:5])
        return f"{self.path} is incomplete" + (
            f": no score for {named}" if named else " (its run was interrupted)"
        )

    def check_run(self, run: RunInfo) -> None:
        differ = [
            f"{k.words} ({getattr(self.run, k.key)!r} in the baseline, {getattr(run, k.key)!r} now)"
            for k in _RUN_KEYS
            if k.as_now(getattr(self.run, k.key)) != getattr(run, k.key)
        ]
        if differ:
            named = "; ".join(differ)
            raise BaselineError(
                f"cannot compare with baseline {self.path}: the prompts differ in {named}. Re-run "
                "the baseline with the same settings, or drop --baseline"
            )

    def compare_case(
        self,
        task: str,
        length: int,
        data_sha256: str | None,
        scores: Mapping[int, float],
        confidence: float,
        digests: Mapping[int, str] | None = None,
    ) -> PairedResult | None:
        """Paired on the samples both runs have: the same data hash, or each sample's own hash."""
        base = self.cases.get((task, length))
        if base is None:
            return None
        same_prefix = bool(digests and base.digests) and all(
            base.digests.get(i) == d for i, d in (digests or {}).items()
        )
        if base.data_sha256 != data_sha256 and not same_prefix:
            raise BaselineError(
                f"{task} at {length}: the samples differ from baseline {self.path} (data hash "
                f"{str(base.data_sha256)[:12]} vs {str(data_sha256)[:12]}): same --seed, "
                "--samples, --haystack and QA data are needed for a paired comparison"
            )
        common = sorted(set(base.scores) & set(scores))
        return compare([scores[i] for i in common], [base.scores[i] for i in common], confidence)


def load_baseline(path: str | Path) -> Baseline:
    p = Path(path)
    try:
        report = read_report(p)
        rows = read_predictions(predictions_path(p, report))
        per_case: dict[tuple[str, int], dict[int, float]] = {}
        digests: dict[tuple[str, int], dict[int, str]] = {}
        for r in rows:
            if r.score is not None:
                per_case.setdefault((r.task, r.length), {})[r.index] = r.score
            digests.setdefault((r.task, r.length), {})[r.index] = r.sample_sha256
        cases, unscored, skipped, early = {}, {}, {}, {}
        for c in report.cases:
            key = (c.task, c.length)
            if stopped_early(c) and c.stop:
                early[key] = (c.stop.used, c.stop.budget)
            if key in per_case:
                digest = digests.get(key, {})
                cases[key] = BaselineCase(c.task, c.length, c.data_sha256, per_case[key], digest)
            elif c.verdict == "error":
                unscored[key] = c.error_kind or "error"
            elif c.verdict == "skip":
                skipped[key] = f"skipped: {c.skip_kind or 'skip'}"
    except (ReportFileError, KeyError, TypeError, ValueError) as exc:
        raise BaselineError(
            f"cannot read the report {p} with its predictions ({exc}); pass a report written by "
            "ctxgate --report, with its .predictions.jsonl beside it"
        ) from None
    return Baseline(str(p), report.run, cases, report.complete, unscored, skipped, early)


def regression_verdict(result: PairedResult, tolerance: float, stop: StopRecord | None) -> bool:
    """Did the case drop by more than ``tolerance``? Under --sequential, its paired test's
    claim when it made one."""
    claim = stop.baseline.decided if stop and stop.baseline else None
    return claim == "below" if claim is not None else result.regressed(tolerance)


def describe(result: PairedResult, tolerance: float) -> str:
    return (
        f"{result.current:.1f} vs baseline {result.baseline:.1f}: delta {result.delta:+.1f} points "
        f"(interval {result.low:+.1f} to {result.high:+.1f}, {result.method}, n={result.n}), "
        f"tolerance {tolerance:.1f}"
    )


def comparison_entry(
    result: PairedResult,
    tolerance: float,
    confidence: float,
    regressed: bool,
    message: str,
    baseline_stopped_early: bool = False,
) -> Comparison:
    """A case's paired comparison as the report records it."""
    paired = (result.baseline, result.delta, (result.low, result.high), result.method, result.n)
    return Comparison(*paired, tolerance, confidence, regressed, message, baseline_stopped_early)


def comparison(
    baseline: Baseline, result: CaseResult, run: RunInfo, thresholds: Thresholds
) -> Comparison | None:
    """The case against the baseline's, paired; None where the baseline has no score for it.
    BaselineError: the two runs built other prompts."""
    scores = {o.index: o.score for o in result.samples if o.score is not None}
    hashes = {o.index: o.sample_sha256 for o in result.samples}
    confidence = thresholds.regression_confidence
    baseline.check_run(run)
    paired = baseline.compare_case(
        result.task, result.length, result.data_sha256, scores, confidence, hashes
    )
    if paired is None:
        return None
    tolerance = thresholds.tolerance_for(result.task, result.length)
    seq = result.stop
    regressed = regression_verdict(paired, tolerance, seq)
    message = describe(paired, tolerance)
    if seq and (test := seq.baseline) and test.decided:
        drop = "it dropped by more than" if regressed else "it did not drop by more than"
        message += (
            f"; --sequential: certain {drop} the tolerance at error rate {seq.alpha} (paired "
            f"interval {test.interval[0]:+.1f} to {test.interval[1]:+.1f})"
        )
    stopped_early = (result.task, result.length) in baseline.stopped_early
    return comparison_entry(paired, tolerance, confidence, regressed, message, stopped_early)
