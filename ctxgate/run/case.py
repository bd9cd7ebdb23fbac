"""Run one case (task x length): build its samples, generate, score. Pure orchestration, no pytest
here."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

from ctxgate.backends.base import Backend, Generation, GenerationParams, Request, stream
from ctxgate.judge.score import Judges, compact_input, judge_one, missing_judge
from ctxgate.metrics import score_prediction
from ctxgate.metrics.registry import get_metric, resolve
from ctxgate.records.case import CaseRecord, JudgeRecord, SampleOutcome, StopRecord
from ctxgate.records.cost import Cost
from ctxgate.run.cache import GenerationCache, Spent
from ctxgate.run.progress import Progress, case_label
from ctxgate.run.reading import Reading
from ctxgate.run.samples import data_hash, excerpts, iter_samples, samples_to_run
from ctxgate.run.scoring import judge_samples, part_means, scored
from ctxgate.tasks.base import BuildContext, Sample, TaskSpec
from ctxgate.tasks.build import task_context


class CaseTest(Protocol):
    """A sequential test of a case's samples, fed in index order: ``verdict`` once certain, on the
    first ``used`` of them."""

    @property
    def used(self) -> int: ...

    @property
    def verdict(self) -> str | None: ...

    def feed(self, done: Mapping[int, SampleOutcome]) -> None: ...

    def record(self, budget: int) -> StopRecord: ...


@dataclass(frozen=True)
class EarlyStop:
    """How a case stops once its verdict is certain (``hookspec.ctxgate_case_stop``): ``test()``
    makes a fresh test of its samples; ``unjudged``: its record where there is nothing to test (a
    judged case without its judge runs its full count), ``used`` and ``budget`` filled in."""

    test: Callable[[], CaseTest]
    unjudged: StopRecord


class Ahead(Protocol):
    """What runs the selected cases ahead of their items (``hookspec.ctxgate_cases_ahead``): a
    case ``in`` it is taken from it (``take``: its result, or the exception its run raised)."""

    def __contains__(self, key: object) -> bool: ...

    def take(self, key: tuple[str, int]) -> CaseResult: ...


@dataclass(frozen=True)
class Session:
    """What every case of a run shares: the backend, the prompts' context (its seed, its HELMET
    compatibility), the generation cache, the judges, how an output is read, each score's
    interval's confidence and who hears a case's progress."""

    backend: Backend
    context: BuildContext
    cache: GenerationCache | None = None
    judges: Judges | None = None
    reading: Reading = field(default_factory=Reading)
    confidence: float = 0.95
    progress: Callable[[Progress], None] | None = None
    # the run's id: each generation the cache keeps is its ledger's, whatever ends the run
    run: str | None = None


@dataclass(frozen=True)
class Runner:
    """How the session runs its cases, for an extra that draws several together
    (``hookspec.ctxgate_cases_ahead``): each opened, then scored once drawn."""

    open: Callable[[str, int], Drawing]
    finish: Callable[[Drawing], CaseResult]


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
    stop: StopRecord | None = None
    built_from: str | None = None
    cost: Cost | None = None
    # the record's fields a reading adds (``Reading.fields``)
    extras: dict[str, Any] = field(default_factory=dict)

    def onto(self, record: CaseRecord) -> CaseRecord:
        """The record with what this run of the case measured (every field but the samples)."""
        skip = ("samples", "extras")
        measured = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        return replace(record, **measured, **self.extras)


class Drawing:
    """One case's samples: built one at a time, served from the cache or the backend, scored."""

    def __init__(
        self,
        spec: TaskSpec,
        session: Session,
        length: int,
        n: int,
        stop: EarlyStop | None = None,
        requested: int | None = None,
    ) -> None:
        """``requested``: the samples asked for, of which the task's pool allowed ``n``."""
        ctx = session.context
        self.spec, self.session, self.length, self.n, self.stop = spec, session, length, n, stop
        self.params = session.reading.params(GenerationParams(spec.tokens_to_generate))
        self.chat = task_context(spec, ctx).chat
        self.metric = resolve(spec.metric.name, ctx.helmet_compat)
        self.judged = spec.metric.judged
        # --sequential on a judged case: each output is judged as it arrives, so its test sees
        # scores and the case can stop once certain; without its judge it runs its full count
        has_judge = missing_judge(spec.metric.name, session.judges) is None
        self.judge_now = stop is not None and self.judged and has_judge
        self.test = stop.test() if stop and (self.judge_now or not self.judged) else None
        self.done: dict[int, SampleOutcome] = {}
        # sent: the sample, its digest, its cache key, when it was sent
        self.waiting: dict[int, tuple[Sample, str, str, float]] = {}
        self.from_cache = self.built = 0
        self.build_seconds = self.judge_seconds = 0.0
        self.generations = self.prompt_tokens = self.generated_tokens = self.thought_tokens = 0
        self.reported_tokens = self.overruns = 0  # a server's counts believed, its overruns cut
        # of the prompt tokens, those the engine served from its prefix cache, and the generations
        # whose engine said how many that was
        self.cached_prompt_tokens = self.cache_reported = 0
        # seconds spent drawing this case (``drive``): with rounds, its own turns only
        self.requested, self.driven = requested or n, 0.0
        self.ways: set[str] = set()  # how the prompts were built, where a task has two ways
        self.samples = iter_samples(spec, ctx, length, n, ctx.seed)
        # rounds (``run_together``): build no sample at or past ``limit``; ``held_open``: go on past
        # the case's own verdict, which a summary's test still needs samples beyond
        self.limit, self.held_open = n, False
        # stopped with a summary's test, having none of its own: the rounds it used, its record
        self.cut: tuple[int, StopRecord] | None = None
        # drawn on past its own verdict for the average's test: scored on every sample drawn (its
        # verdict holds at any stop, and its mean is the less biased)
        self.drawn_past = False

    def stop_record(self, used: int) -> StopRecord | None:
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
        saved, done = max(planned - len(self.done), 0), self.done.values()
        # a saved sample would have been prefilled as those generated were (twice, when forced)
        per = sum(o.input_tokens for o in done) / max(len(done), 1)
        per = self.prompt_tokens / self.generations if self.generations else per
        seconds = round(generating, 3) if self.generations else 0.0
        ran = (self.generations, self.prompt_tokens, self.generated_tokens, seconds)
        counts = (self.thought_tokens, self.reported_tokens, self.overruns)
        cache = (self.cached_prompt_tokens, self.cache_reported)
        return Cost(*ran, self.from_cache, saved, round(saved * per), *counts, *cache)

    def decided(self) -> bool:
        return self.test is not None and self.test.verdict is not None

    def finished(self) -> bool:
        """Nothing more to build: its verdict is certain (and no summary holds it), or all built."""
        return (self.decided() and not self.held_open) or self.built >= self.n

    def requests(self) -> Iterator[Request]:
        """Those the cache has are done at once, the rest go to the backend."""
        cache = self.session.cache
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
            key = cache.key(digest, self.params) if cache else ""
            gen = cache.get(key) if cache else None
            if gen is not None:
                self.from_cache += 1
                self._finish(s, digest, gen)
                continue
            self.waiting[s.index] = (s, digest, key, time.perf_counter())
            yield Request(s.input_ids, self.spec.name, self.length, s.index, s.after_thought)

    def held(self) -> int:
        """Generations the sequential test cannot use until an earlier sample's comes back."""
        if self.test is None or self.held_open:  # drawn for the average: each is used
            return 0
        return sum(i >= self.test.used for i in self.done)

    def receive(self, request: Request, gen: Generation) -> None:
        s, digest, key, sent_at = self.waiting.pop(request.index)
        if self.session.cache:  # at once: a kill loses only the samples in flight
            run = self.session.run
            spent = Spent(self.spec.name, self.length, gen.prefilled(request), run) if run else None
            self.session.cache.put(key, gen, spent)
        self.generations += 1
        self.prompt_tokens += gen.prefilled(request)
        self.generated_tokens += gen.output_tokens
        self.reported_tokens += gen.output_tokens if gen.reported is not None else 0
        self.overruns += gen.overrun > 0
        if gen.cached is not None:  # a chat server may count a few template tokens more than sent
            self.cached_prompt_tokens += min(gen.cached, gen.prefilled(request))
            self.cache_reported += 1
        self._finish(s, digest, gen, round(time.perf_counter() - sent_at, 3))
        self.thought_tokens += self.done[s.index].thought_tokens

    def _finish(
        self, s: Sample, digest: str, gen: Generation, seconds: float | None = None
    ) -> None:
        shown = excerpts(s, self.session.context.encoder.decode)
        self.done[s.index] = replace(self._outcome(s, digest, gen), excerpts=shown, seconds=seconds)
        if self.test is not None:
            self.test.feed(self.done)

    def _outcome(self, s: Sample, digest: str, gen: Generation) -> SampleOutcome:
        answer, read = self.session.reading.read(gen)
        head = (s.index, None, answer, answer, s.answers, len(s.input_ids), gen.output_tokens)
        o = SampleOutcome(*head, gen.finish_reason, digest, **read)
        if not self.judged:
            score, looked_at = score_prediction(
                self.metric, answer, s.answers, self.spec.scoring_prefix, self.chat
            )
            parts = get_metric(self.metric).parts
            shares = parts(answer, s.answers) if parts else {}
            return replace(o, score=score, scored_text=looked_at, parts=shares)
        judge_input = compact_input(self.spec.metric.name, answer, s.meta["judge_input"])
        o = replace(o, judge_input=judge_input)
        judges = self.session.judges
        if not self.judge_now or judges is None:
            return o
        started = time.perf_counter()
        v = judge_one(self.metric, o.prediction, o.judge_input or {}, judges)
        self.judge_seconds += time.perf_counter() - started
        return replace(o, score=v.score, parts=v.parts, judge_error=v.error)


def open_case(
    spec: TaskSpec, session: Session, length: int, n: int | None, stop: EarlyStop | None = None
) -> Drawing:
    """A case ready to draw its samples (``n`` None: the task's own count, capped by its pool)."""
    requested = n or spec.default_samples
    n = samples_to_run(spec, session.context, length, requested)
    return Drawing(spec, session, length, n, stop, requested)


def drive(draw: Drawing) -> None:
    """Draw the case's samples up to its ``limit``, or until its verdict is certain; the session's
    ``progress`` hears where it stands after each."""
    name, progress = case_label(draw.spec.name, draw.length), draw.session.progress
    if progress is not None and not draw.built:  # a 128K sample can take minutes: say so at once
        progress(Progress(name, 0, draw.n, 0, 0, 0.0))
    backend = draw.session.backend
    withdraw = getattr(backend, "withdraw", None)
    started = time.perf_counter() - draw.driven
    held = draw.session.reading.hold(backend)
    for request, gen in stream(held, draw.requests(), draw.params, draw.held):
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
    spec: TaskSpec, session: Session, length: int, n: int | None, stop: EarlyStop | None = None
) -> CaseResult:
    """Each generation is cached as soon as it exists, so an interrupted case resumes where it
    stopped. ``stop`` (--sequential): how the case's test stops it; samples are fed to the test in
    index order (the fixed-n run's), none is built once the verdict is certain, and the score uses
    the samples the test used. ``n`` None: the task's own count. A judged task without the judge it
    needs comes back with score None and its judge inputs stored, for ``ctxgate judge`` later."""
    draw = open_case(spec, session, length, n, stop)
    drive(draw)
    return case_result(draw)


def case_result(draw: Drawing) -> CaseResult:
    """The case as its drawing left it, scored."""
    spec, length, n, session = draw.spec, draw.length, draw.n, draw.session
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
            draw.metric,
            outcomes,
            session.judges,
            session.confidence,
            draw.judge_now,
            draw.judge_seconds,
        )
    else:
        scores = scored(outcomes, session.confidence, part_means(outcomes))
    fill = min((x + spec.held_in_length) / length for x in sizes) if length else None
    rates = {"prompt_tokens_per_s": draw.prompt_tokens}
    rates |= {"generated_tokens_per_s": draw.generated_tokens}
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
        fill_min=None if fill is None else round(fill, 4),
        output_tokens=sum(o.output_tokens for o in outcomes),
        data_sha256=data_hash([o.sample_sha256 for o in outcomes]),
        samples_from_cache=draw.from_cache,
        throughput={k: round(v / generating, 1) for k, v in rates.items()}
        if draw.prompt_tokens
        else None,
        chat_template=draw.chat,
        sample_cap={"requested": draw.requested, "pool": n} if n < draw.requested else None,
        stop=draw.stop_record(len(outcomes)),
        built_from=",".join(sorted(draw.ways)) or None,
        cost=draw.cost(n, generating),
        extras=session.reading.fields(outcomes, spec.tokens_to_generate),
        **vars(scores),
    )


def judge_case(result: CaseResult, judges: Judges | None, confidence: float) -> CaseResult:
    """A stored case judged (``ctxgate judge``): its samples, score and judge record replaced."""
    return replace(result, **vars(judge_samples(result.metric, result.samples, judges, confidence)))
