"""Run one case (task x length): build its samples, generate, score. Pure orchestration, no pytest
here."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

from ctxgate.backends.base import Backend, Generation, GenerationParams, Request, stream
from ctxgate.backends.forcing import forcing
from ctxgate.judge.client import priced
from ctxgate.judge.score import Judges, compact_input, judge_all, judge_one, missing_judge
from ctxgate.metrics import score_prediction
from ctxgate.metrics.registry import resolve
from ctxgate.records.schema import (
    CaseRecord,
    Cost,
    FailedVerdict,
    JudgeRecord,
    SampleOutcome,
    SequentialRecord,
    ThinkingRecord,
)
from ctxgate.run.cache import GenerationCache
from ctxgate.run.progress import Progress, case_label
from ctxgate.stats.intervals import interval
from ctxgate.tasks.base import BuildContext, Sample, TaskSpec
from ctxgate.tasks.build import build_sample, fits_at_all, task_context


def resolve_chat(setting: str, has_template: bool) -> str:
    """``--chat-template`` as applied to a model: on, off, or task (each task's policy). auto and
    task fall back to off for a model without a template; an explicit on stays on (and fails when
    the prompt is built)."""
    if setting in ("auto", "task"):
        return ("on" if setting == "auto" else "task") if has_template else "off"
    return setting


class CaseTest(Protocol):
    """A sequential test of a case's samples, fed in index order: ``verdict`` once certain, on the
    first ``used`` of them."""

    @property
    def used(self) -> int: ...

    @property
    def verdict(self) -> str | None: ...

    def feed(self, done: Mapping[int, SampleOutcome]) -> None: ...

    def record(self, budget: int) -> SequentialRecord: ...


@dataclass(frozen=True)
class EarlyStop:
    """How a case stops once its verdict is certain (``hookspec.ctxgate_case_stop``): ``test()``
    makes a fresh test of its samples; ``unjudged``: its record where there is nothing to test (a
    judged case without its judge runs its full count), ``used`` and ``budget`` filled in."""

    test: Callable[[], CaseTest]
    unjudged: SequentialRecord


@dataclass(frozen=True)
class Runner:
    """How the session runs its cases, for an extra that draws several together
    (``hookspec.ctxgate_cases_ahead``): each opened, then scored once drawn, on ``backend``."""

    open: Callable[[str, int], Drawing]
    finish: Callable[[Drawing], CaseResult]
    backend: Backend
    progress: Callable[[Progress], None] | None = None


@dataclass(frozen=True)
class CaseResult:
    """What a run of the case measured: the fields of its ``CaseRecord`` (described there)."""

    task: str
    suite: str
    category: str
    length: int
    metric: str
    score: float | None  # percent; None while a judged case waits for its judge
    n: int
    ci: tuple[float, float]
    seconds: float
    build_seconds: float
    input_tokens_mean: float
    input_tokens_max: int
    fill_min: float | None
    output_tokens: int
    data_sha256: str
    samples: tuple[SampleOutcome, ...]
    samples_from_cache: int = 0
    parts: dict[str, float] = field(default_factory=dict)
    judge: JudgeRecord | None = None
    throughput: dict[str, float] | None = None
    chat_template: bool | None = None
    sample_cap: dict[str, int] | None = None
    sequential: SequentialRecord | None = None
    built_from: str | None = None
    cost: Cost | None = None
    thinking: ThinkingRecord | None = None

    def onto(self, record: CaseRecord) -> CaseRecord:
        """The record with what this run of the case measured (every field but the samples)."""
        measured = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "samples"}
        return replace(record, **measured)


# tokens of context before a needle (twice as many from it on), and of the prompt's end
EXCERPT_TOKENS = 40


def excerpts(sample: Sample, decode: Callable[[Sequence[int]], str]) -> dict[str, object]:
    """What the predictions file keeps of a prompt instead of the prompt (up to a million tokens):
    the text around each needle, with the needle and its depth, and the prompt's end."""
    ids, meta = sample.input_ids, sample.meta
    offsets = list(meta.get("needle_offsets") or ())
    depths = list(meta.get("depths") or ()) or [None] * len(offsets)
    return {
        "needles": [
            {
                "needle": needle,
                "depth": depth,
                "text": decode(ids[max(0, at - EXCERPT_TOKENS) : at + 2 * EXCERPT_TOKENS]),
            }
            for needle, at, depth in zip(meta.get("needles") or (), offsets, depths, strict=False)
        ],
        "end": decode(ids[-EXCERPT_TOKENS:]),
    }


def iter_samples(
    spec: TaskSpec, ctx: BuildContext, length: int, n: int, seed: int
) -> Iterator[Sample]:
    """One at a time: a case holds one prompt (up to 128K tokens) in memory, not n, and starts
    generating at once. A sample short of material ends the case (``MaterialExhausted``)."""
    for i in range(n):
        yield build_sample(spec, ctx, length, i, seed)


def samples_to_run(spec: TaskSpec, ctx: BuildContext, length: int, requested: int) -> int:
    """``requested``, or the task's pool when its data holds fewer distinct samples (no repeats)."""
    # a length the task cannot take at all is refused by build_sample before its pool is read
    pool = (
        spec.pool_size(task_context(spec, ctx), length)
        if spec.pool_size and fits_at_all(spec, length)
        else None
    )
    return requested if pool is None else min(requested, pool)


def build_samples(
    spec: TaskSpec, ctx: BuildContext, length: int, n: int, seed: int
) -> list[Sample]:
    return list(iter_samples(spec, ctx, length, n, seed))


def data_hash(sample_digests: Sequence[str]) -> str:
    return hashlib.sha256("".join(sample_digests).encode("ascii")).hexdigest()


class Drawing:
    """One case's samples: built one at a time, served from the cache or the backend, scored."""

    def __init__(
        self,
        spec: TaskSpec,
        ctx: BuildContext,
        length: int,
        n: int,
        seed: int,
        cache: GenerationCache | None,
        helmet_compat: bool,
        judges: Judges | None,
        stop: EarlyStop | None,
        requested: int | None = None,
    ) -> None:
        """``requested``: the samples asked for, of which the task's pool allowed ``n``."""
        self.spec, self.ctx, self.length, self.n, self.seed = spec, ctx, length, n, seed
        self.cache, self.judges, self.stop = cache, judges, stop
        self.thinking = ctx.thinking
        self.params = GenerationParams(
            spec.tokens_to_generate,
            keep_special=self.thinking.special,
            thinking_budget=self.thinking.budget if self.thinking.thinks else None,
            by_engine=self.thinking.budget_by == "engine",
        )
        self.chat = task_context(spec, ctx).chat
        self.metric = resolve(spec.metric.name, helmet_compat)
        self.judged = spec.metric.judged
        # --sequential on a judged case: each output is judged as it arrives, so its test sees
        # scores and the case can stop once certain; without its judge it runs its full count
        self.judge_now = (
            stop is not None and self.judged and missing_judge(spec.metric.name, judges) is None
        )
        self.test = stop.test() if stop and (self.judge_now or not self.judged) else None
        self.done: dict[int, SampleOutcome] = {}
        # sent: the sample, its digest, its cache key, when it was sent
        self.waiting: dict[int, tuple[Sample, str, str, float]] = {}
        self.from_cache = 0
        self.build_seconds = self.judge_seconds = 0.0
        self.generations = self.prompt_tokens = self.generated_tokens = self.thinking_tokens = 0
        # seconds spent drawing this case (``drive``): with rounds, its own turns only
        self.requested, self.driven = requested or n, 0.0
        self.ways: set[str] = set()  # how the prompts were built, where a task has two ways
        self.samples = iter_samples(spec, ctx, length, n, seed)
        self.built = 0
        # rounds (``run_together``): build no sample at or past ``limit``; ``held_open``: go on past
        # the case's own verdict, which a summary's test still needs samples beyond
        self.limit, self.held_open = n, False
        # stopped with a summary's test, having none of its own: the rounds it used, its record
        self.cut: tuple[int, SequentialRecord] | None = None
        # drawn on past its own verdict for the average's test: scored on every sample drawn (its
        # verdict holds at any stop, and its mean is the less biased)
        self.drawn_past = False

    def sequential(self, used: int) -> SequentialRecord | None:
        if self.test is not None:
            record = self.test.record(self.n)
            return replace(record, used=used) if self.drawn_past else record
        if self.cut is not None:
            return replace(self.cut[1], used=used, budget=self.n)
        if self.stop is not None and self.judged:
            return replace(self.stop.unjudged, used=used, budget=self.n)
        return None

    def cost(self, planned: int, generating: float) -> Cost:
        """Against the fixed plan of ``planned`` samples: those a stopped test never ran."""
        saved = max(planned - len(self.done), 0)
        mean_prompt = sum(o.input_tokens for o in self.done.values()) / max(len(self.done), 1)
        return Cost(
            self.generations,
            self.prompt_tokens,
            self.generated_tokens,
            round(generating, 3) if self.generations else 0.0,
            saved,
            round(saved * mean_prompt),
            self.thinking_tokens,
        )

    def decided(self) -> bool:
        return self.test is not None and self.test.verdict is not None

    def finished(self) -> bool:
        """Nothing more to build: its verdict is certain (and no summary holds it), or all built."""
        return (self.decided() and not self.held_open) or self.built >= self.n

    def requests(self) -> Iterator[Request]:
        """Those the cache has are done at once, the rest go to the backend."""
        while not self.finished() and self.built < self.limit:
            started = time.perf_counter()
            s = next(self.samples, None)
            self.build_seconds += time.perf_counter() - started
            if s is None:
                self.built = self.n
                return
            self.built += 1
            self.ways.update(
                str(s.meta[k])
                for k in ("passages", "source", "demos")
                if isinstance(s.meta.get(k), str)
            )
            digest = s.digest()  # hashing 128K ids is not free: once per sample
            key = self.cache.key(digest, self.params) if self.cache else ""
            gen = self.cache.get(key) if self.cache else None
            if gen is not None:
                self.from_cache += 1
                self._finish(s, digest, gen)
                continue
            self.waiting[s.index] = (s, digest, key, time.perf_counter())
            yield Request(s.input_ids, self.spec.name, self.length, s.index)

    def held(self) -> int:
        """Generations the sequential test cannot use until an earlier sample's comes back."""
        if self.test is None or self.held_open:  # drawn for the average: each is used
            return 0
        return sum(i >= self.test.used for i in self.done)

    def receive(self, request: Request, gen: Generation) -> None:
        s, digest, key, sent_at = self.waiting.pop(request.index)
        if self.cache:
            self.cache.put(key, gen)  # at once: a kill loses only the samples in flight
        self.generations += 1
        self.prompt_tokens += len(s.input_ids)
        self.generated_tokens += gen.output_tokens
        self._finish(s, digest, gen, round(time.perf_counter() - sent_at, 3))
        self.thinking_tokens += self.done[s.index].thought_tokens

    def _finish(
        self, s: Sample, digest: str, gen: Generation, seconds: float | None = None
    ) -> None:
        shown = excerpts(s, self.ctx.encoder.decode)
        self.done[s.index] = replace(self._outcome(s, digest, gen), excerpts=shown, seconds=seconds)
        if self.test is not None:
            self.test.feed(self.done)

    def _outcome(self, s: Sample, digest: str, gen: Generation) -> SampleOutcome:
        answer, thought = self._answer(gen)
        o = SampleOutcome(
            s.index,
            None,
            answer,
            answer,
            s.answers,
            len(s.input_ids),
            gen.output_tokens,
            gen.finish_reason,
            digest,
            **thought,
        )
        if not self.judged:
            score, looked_at = score_prediction(
                self.metric, answer, s.answers, self.spec.scoring_prefix, self.chat
            )
            return replace(o, score=score, scored_text=looked_at)
        judge_input = compact_input(self.spec.metric.name, answer, s.meta["judge_input"])
        o = replace(o, judge_input=judge_input)
        if not self.judge_now:
            return o
        assert self.judges is not None
        started = time.perf_counter()
        v = judge_one(self.metric, o.prediction, o.judge_input or {}, self.judges)
        self.judge_seconds += time.perf_counter() - started
        return replace(o, score=v.score, parts=v.parts, judge_error=v.error)

    def _answer(self, gen: Generation) -> tuple[str, dict[str, Any]]:
        """The answer to score, and the thought's fields of the outcome (none without one). A
        thought a server's reasoning parser split off is joined back at the closing marker and
        split as every output is, so that each engine reports the same answer and count."""
        fmt, text = self.thinking, gen.text
        if gen.thought is not None and fmt.closed:  # the prompt closed it: what follows is answer
            text = gen.thought + gen.text
        elif gen.thought is not None and fmt.end is not None:
            closed = bool(gen.text) or gen.finish_reason != "length"
            opening = fmt.start if fmt.start and not fmt.opened else ""
            text = opening + gen.thought + (fmt.end if closed else "") + gen.text
        thought, answer, ended, at = fmt.split(text)
        if gen.thought is not None and fmt.end is None:  # a parser's markers this run cannot see
            thought, ended, at = gen.thought, "model", len(gen.thought)
            text = gen.thought
        if thought is None:
            return answer, {}
        tokens = len(self.ctx.encoder.raw.encode(text[:at]))
        ended = "forced" if gen.forced else ended
        return answer, {"thought": thought, "thought_tokens": tokens, "thought_end": ended}


def open_case(
    spec: TaskSpec,
    ctx: BuildContext,
    length: int,
    n: int | None,
    seed: int,
    cache: GenerationCache | None = None,
    helmet_compat: bool = False,
    judges: Judges | None = None,
    stop: EarlyStop | None = None,
) -> Drawing:
    """A case ready to draw its samples (``n`` None: the task's own count, capped by its pool)."""
    requested = n or spec.default_samples
    n = samples_to_run(spec, ctx, length, requested)
    return Drawing(spec, ctx, length, n, seed, cache, helmet_compat, judges, stop, requested)


def drive(
    draw: Drawing, backend: Backend, progress: Callable[[Progress], None] | None = None
) -> None:
    """Draw the case's samples up to its ``limit``, or until its verdict is certain."""
    name = case_label(draw.spec.name, draw.length)
    if progress is not None and not draw.built:  # a 128K sample can take minutes: say so at once
        progress(Progress(name, 0, draw.n, 0, 0, 0.0))
    withdraw = getattr(backend, "withdraw", None)
    started = time.perf_counter() - draw.driven
    for request, gen in stream(
        forcing(backend, draw.thinking), draw.requests(), draw.params, draw.held
    ):
        draw.receive(request, gen)
        if withdraw is not None and draw.decided() and not draw.held_open:
            withdraw(draw.spec.name, draw.length)  # what is still queued never runs, on any replica
            withdraw = None
        if progress is not None:
            elapsed = time.perf_counter() - started - draw.build_seconds
            done, cached, tokens = len(draw.done), draw.from_cache, draw.generated_tokens
            progress(Progress(name, done, draw.n, cached, tokens, elapsed))
    draw.driven = time.perf_counter() - started


def run_case(
    spec: TaskSpec,
    ctx: BuildContext,
    backend: Backend,
    length: int,
    n: int | None,
    seed: int,
    confidence: float = 0.95,
    cache: GenerationCache | None = None,
    helmet_compat: bool = False,
    judges: Judges | None = None,
    progress: Callable[[Progress], None] | None = None,
    stop: EarlyStop | None = None,
) -> CaseResult:
    """Each generation is cached as soon as it exists, so an interrupted case resumes where it
    stopped; ``progress`` hears where the case stands after each. ``stop`` (--sequential): how the
    case's test stops it; samples are fed to the test in index order (the fixed-n run's),
    none is built once the verdict is certain, and the score uses the samples the test used. ``n``
    None: the task's own count. A judged task without the judge it needs comes back with score None
    and its judge inputs stored, for ``ctxgate judge`` later."""
    draw = open_case(spec, ctx, length, n, seed, cache, helmet_compat, judges, stop)
    drive(draw, backend, progress)
    return case_result(draw, confidence, judges)


def case_result(draw: Drawing, confidence: float, judges: Judges | None) -> CaseResult:
    """The case as its drawing left it, scored."""
    spec, length, n = draw.spec, draw.length, draw.n
    started = time.perf_counter()
    # judging is not generation: it is left out of the throughput
    generating = max(draw.driven - draw.build_seconds - draw.judge_seconds, 1e-6)
    # a decided case is scored on the samples its test used, whatever else was in flight: the same
    # samples, score and verdict however many requests the backend had out at once
    used = draw.test.used if draw.test is not None and draw.decided() else None
    used = draw.cut[0] if draw.cut is not None else None if draw.drawn_past else used
    outcomes = tuple(draw.done[i] for i in sorted(draw.done) if used is None or i < used)
    sizes = [o.input_tokens for o in outcomes]
    if draw.judged:
        scores = judge_samples(
            draw.metric, outcomes, judges, confidence, draw.judge_now, draw.judge_seconds
        )
    else:
        scores = scored(outcomes, confidence)
    return CaseResult(
        task=spec.name,
        suite=spec.suite,
        category=spec.category,
        length=length,
        metric=draw.metric,
        seconds=round(draw.driven + time.perf_counter() - started, 3),
        build_seconds=round(draw.build_seconds, 3),
        input_tokens_mean=round(sum(sizes) / len(sizes), 1),
        input_tokens_max=max(sizes),
        fill_min=round(min((x + spec.tokens_to_generate) / length for x in sizes), 4)
        if length
        else None,
        output_tokens=sum(o.output_tokens for o in outcomes),
        data_sha256=data_hash([o.sample_sha256 for o in outcomes]),
        samples_from_cache=draw.from_cache,
        throughput={
            "prompt_tokens_per_s": round(draw.prompt_tokens / generating, 1),
            "generated_tokens_per_s": round(draw.generated_tokens / generating, 1),
        }
        if draw.prompt_tokens
        else None,
        chat_template=draw.chat,
        sample_cap={"requested": draw.requested, "pool": n} if n < draw.requested else None,
        sequential=draw.sequential(len(outcomes)),
        built_from=",".join(sorted(draw.ways)) or None,
        cost=draw.cost(n, generating),
        thinking=thinking_record(outcomes, spec.tokens_to_generate, draw.thinking.budget),
        **vars(scores),
    )


def thinking_record(
    outcomes: Sequence[SampleOutcome], answer_budget: int, budget: int | None
) -> ThinkingRecord | None:
    """The thought over a case's samples: its tokens, and what each budget cut."""
    thought = [o for o in outcomes if o.thought_end is not None]
    if not thought:
        return None
    tokens = [o.thought_tokens for o in thought]
    cut_thought = [
        o.thought_end == "forced" or (o.thought_end == "never" and o.finish_reason == "length")
        for o in thought
    ]
    cut_answer = [o.finish_reason == "length" and o.thought_end != "never" for o in thought]
    return ThinkingRecord(
        samples=len(thought),
        tokens_mean=round(sum(tokens) / len(tokens), 1),
        tokens_max=max(tokens),
        thought_cut=sum(cut_thought),
        answer_cut=sum(cut_answer),
        never_ended=sum(o.thought_end == "never" for o in thought),
        cut=sum(a or b for a, b in zip(cut_thought, cut_answer)),
        answer_budget=answer_budget,
        budget=budget,
    )


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
    names = sorted({k for o in ok for k in o.parts})
    parts = {k: round(100 * sum(o.parts[k] for o in ok) / len(ok), 2) for k in names} if ok else {}
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
    return scored(samples, confidence, parts, judge)


def judge_case(result: CaseResult, judges: Judges | None, confidence: float) -> CaseResult:
    """A stored case judged (``ctxgate judge``): its samples, score and judge record replaced."""
    return replace(result, **vars(judge_samples(result.metric, result.samples, judges, confidence)))
