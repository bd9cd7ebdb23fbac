"""A case's score from its samples' outcomes: the mean and its interval, and for a judged task its
judges' verdicts, counted where they failed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from ctxgate.judge.client import priced
from ctxgate.judge.score import Judges, judge_all, missing_judge
from ctxgate.records.case import FailedVerdict, JudgeRecord, SampleOutcome
from ctxgate.stats.intervals import interval


@dataclass(frozen=True)
class Scored:
    """The ``CaseResult`` fields scoring fills: the score is over the samples that have one."""

    samples: tuple[SampleOutcome, ...]
    score: float | None  # percent
    n: int
    ci: tuple[float, float]
    parts: dict[str, float] = field(default_factory=dict)
    judge: JudgeRecord | None = None


def scored(
    samples: tuple[SampleOutcome, ...],
    confidence: float,
    parts: dict[str, float] | None = None,
    judge: JudgeRecord | None = None,
) -> Scored:
    scores = [o.score for o in samples if o.score is not None]
    if not scores:
        return Scored(samples, None, 0, (0.0, 0.0), parts or {}, judge)
    mean = round(100 * sum(scores) / len(scores), 2)
    return Scored(samples, mean, len(scores), interval(scores, confidence), parts or {}, judge)


def part_means(samples: tuple[SampleOutcome, ...]) -> dict[str, float]:
    """Each component's mean over the samples scored, percent."""
    ok = [o for o in samples if o.score is not None]
    names = sorted({k for o in ok for k in o.parts})
    return {k: round(100 * sum(o.parts.get(k, 0.0) for o in ok) / len(ok), 2) for k in names}


def judge_samples(
    metric: str,
    samples: tuple[SampleOutcome, ...],
    judges: Judges | None,
    confidence: float,
    judged_already: bool = False,
    earlier_seconds: float = 0.0,
) -> Scored:
    """Score a judged case's stored outputs. Failed verdicts are counted and listed, their samples
    left out of the mean; whether that fails the case is the gate's call
    (``judge.max_failure_rate``). ``judged_already``: the samples carry the verdicts they got as
    they were generated (--sequential, taking ``earlier_seconds``); only the rest are judged now."""
    reason = missing_judge(metric, judges)
    if reason is not None:
        return Scored(samples, None, 0, (0.0, 0.0), judge=JudgeRecord("pending", reason))
    assert judges is not None
    t0 = time.perf_counter()
    todo = [
        i
        for i, o in enumerate(samples)
        if not (judged_already and (o.score is not None or o.judge_error))
    ]
    verdicts = judge_all(
        metric, [(samples[i].prediction, samples[i].judge_input or {}) for i in todo], judges
    )
    judged = list(samples)
    for i, v in zip(todo, verdicts):
        judged[i] = replace(judged[i], score=v.score, parts=v.parts, judge_error=v.error)
    samples = tuple(judged)
    failed = tuple(FailedVerdict(o.index, o.judge_error) for o in samples if o.judge_error)
    ok = [o for o in samples if o.score is not None]
    client = judges.client
    usage = client.take_usage() if client else None
    price = client.settings.price() if client else None
    judge = JudgeRecord(
        "judged" if ok else "failed",
        failed=len(failed),
        failure_rate=round(len(failed) / len(samples), 4),
        max_failure_rate=judges.max_failure_rate,
        failed_samples=failed,
        usage=priced(usage, price) if usage else None,
        seconds=round(time.perf_counter() - t0 + earlier_seconds, 3),
        llm=client.settings.describe() if client else None,
        entailment=judges.entailment(),
    )
    return scored(samples, confidence, part_means(samples), judge)
