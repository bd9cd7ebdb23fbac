"""Run one case (task x length): build its samples, generate, score. Pure orchestration, no pytest here."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from ctxgate.backends.base import Backend, GenerationParams, Request
from ctxgate.cache import GenerationCache
from ctxgate.metrics import score_prediction
from ctxgate.metrics.registry import resolve
from ctxgate.seeding import sample_rng
from ctxgate.stats import interval
from ctxgate.tasks.base import BuildContext, Sample, TaskSpec


def resolve_chat(setting: str, has_template: bool) -> str:
    """``--chat-template`` as applied to a model: on, off, or task (each task's policy). auto and task fall back to
    off for a model without a template; an explicit on stays on (and fails when the prompt is built)."""
    if setting in ("auto", "task"):
        return ("on" if setting == "auto" else "task") if has_template else "off"
    return setting


def task_context(spec: TaskSpec, ctx: BuildContext) -> BuildContext:
    """With ``--chat-template task``, the task's own policy decides whether its prompt uses the template."""
    if not ctx.chat_by_task or ctx.chat == spec.chat_template:
        return ctx
    return replace(ctx, chat=spec.chat_template)


@dataclass(frozen=True)
class SampleOutcome:
    index: int
    score: float
    prediction: str
    scored_text: str
    answers: tuple[str, ...]
    input_tokens: int
    output_tokens: int
    finish_reason: str
    sample_sha256: str


@dataclass(frozen=True)
class CaseResult:
    task: str
    suite: str
    category: str
    length: int
    metric: str
    score: float  # percent
    n: int
    ci: tuple[float, float]
    seconds: float
    build_seconds: float
    input_tokens_mean: float
    input_tokens_max: int
    fill_min: float  # smallest (input + generation budget) / length over the samples
    output_tokens: int
    data_sha256: str
    samples: tuple[SampleOutcome, ...]
    samples_from_cache: int = 0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def build_samples(spec: TaskSpec, ctx: BuildContext, length: int, n: int, seed: int) -> list[Sample]:
    ctx = task_context(spec, ctx)
    if ctx.seed != seed:  # one seed for the whole sample: its rng and the task's seeded choices (order, demos)
        ctx = replace(ctx, seed=seed)
    return [spec.build(ctx, length, i, sample_rng(spec.name, length, i, seed)) for i in range(n)]


def data_hash(sample_digests: Sequence[str]) -> str:
    h = hashlib.sha256()
    for digest in sample_digests:
        h.update(digest.encode("ascii"))
    return h.hexdigest()


def score_sample(spec: TaskSpec, sample: Sample, prediction: str, helmet_compat: bool = False) -> tuple[float, str]:
    return score_prediction(resolve(spec.metric, helmet_compat), prediction, sample.answers, spec.scoring_prefix)


def run_case(spec: TaskSpec, ctx: BuildContext, backend: Backend, length: int, n: int | None, seed: int,
             confidence: float = 0.95, cache: GenerationCache | None = None,
             helmet_compat: bool = False) -> CaseResult:
    """Each generation goes to the cache as soon as it exists, so an interrupted case resumes where it stopped.
    ``n`` None: the task's own sample count."""
    n = n or spec.default_samples
    t0 = time.perf_counter()
    samples = build_samples(spec, ctx, length, n, seed)
    built = time.perf_counter()
    params = GenerationParams(max_new_tokens=spec.tokens_to_generate)
    outcomes = []
    from_cache = 0
    for s in samples:
        digest = s.digest()  # hashing 128K ids is not free: once per sample
        key = cache.key(digest, params) if cache else ""
        gen = cache.get(key) if cache else None
        if gen is None:
            (gen,) = backend.generate([Request(s.input_ids, spec.name, length, s.index, s.answers)], params)
            if cache:
                cache.put(key, gen)
        else:
            from_cache += 1
        score, scored = score_sample(spec, s, gen.text, helmet_compat)
        outcomes.append(SampleOutcome(s.index, score, gen.text, scored, s.answers, len(s.input_ids),
                                      gen.output_tokens, gen.finish_reason, digest))
    scores = [o.score for o in outcomes]
    sizes = [o.input_tokens for o in outcomes]
    return CaseResult(
        task=spec.name, suite=spec.suite, category=spec.category, length=length,
        metric=resolve(spec.metric, helmet_compat),
        score=round(100 * sum(scores) / len(scores), 2), n=len(scores), ci=interval(scores, confidence),
        seconds=round(time.perf_counter() - t0, 3), build_seconds=round(built - t0, 3),
        input_tokens_mean=round(sum(sizes) / len(sizes), 1), input_tokens_max=max(sizes),
        fill_min=round(min((x + spec.tokens_to_generate) / length for x in sizes), 4),
        output_tokens=sum(o.output_tokens for o in outcomes),
        data_sha256=data_hash([o.sample_sha256 for o in outcomes]),
        samples=tuple(outcomes), samples_from_cache=from_cache,
    )
