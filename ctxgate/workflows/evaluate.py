"""Evaluate one checkpoint on a case selection outside pytest (bisect, watchers): same engine, same cache."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ctxgate.backends.fingerprint import checkpoint_fingerprint
from ctxgate.run.cache import CacheWarning, GenerationCache, StoreUnavailable, namespace_for
from ctxgate.run.case import CaseResult, resolve_chat, run_case
from ctxgate.sources.errors import DataUnavailable
from ctxgate.stats.sequential import Questions, StopRule
from ctxgate.tasks import BuildContext, all_tasks, get_task
from ctxgate.tasks.base import TaskTooShort


@dataclass(frozen=True)
class EvalSettings:
    lengths: tuple[int, ...]
    samples: int | None = None  # None: each task's own count
    seed: int = 42
    chat_template: str = "task"
    dtype: str = "auto"
    cache_dir: str | None = ".ctxgate-cache"
    haystack: str | None = None
    squad: str | None = None
    hotpotqa: str | None = None
    data_dir: str | None = None
    helmet_compat: bool = False
    sequential_alpha: float | None = None  # --sequential: probes stop once their regression verdict is certain
    sequential_min: int = 10


def select_cases(expression: str | None, lengths: Sequence[int]) -> list[tuple[str, int]]:
    """Cases whose id (``task-length``, as in pytest) matches a ``-k`` expression: words, and/or/not, parens."""
    ids = [(t.name, L) for t in all_tasks() for L in lengths]
    if not expression:
        return ids
    from _pytest.mark.expression import Expression  # pytest's own -k grammar, so both read the same way

    compiled = Expression.compile(expression)
    selected = []
    for task, length in ids:
        name = f"{task}-{length}"
        if compiled.evaluate(_matcher(name)):
            selected.append((task, length))
    return selected


def _stop(
    settings: EvalSettings,
    reference: CaseResult | None,
    tolerance: Callable[[str, int], float] | None,
    task: str,
    length: int,
) -> tuple[StopRule, Questions] | None:
    if settings.sequential_alpha is None or reference is None or tolerance is None:
        return None
    base = {o.index: o.score for o in reference.samples if o.score is not None}
    rule = StopRule(settings.sequential_alpha, settings.sequential_min, max_samples=None)
    return rule, Questions(baseline=base, tolerance=tolerance(task, length) / 100)


def evaluate_checkpoint(
    path: str | Path,
    cases: Sequence[tuple[str, int]],
    settings: EvalSettings,
    reference: Mapping[tuple[str, int], CaseResult] | None = None,
    tolerance: Callable[[str, int], float] | None = None,
) -> dict[tuple[str, int], CaseResult]:
    """``reference`` and ``tolerance`` (bisect probes under --sequential): each case asks "did it drop against
    the reference by more than the tolerance?" and stops once that is certain. A case that produces no score
    (beyond the model's window, data missing or unreadable, too short to build) is left out of the result: the
    caller decides what its absence means (for bisect, a regression when the reference scored it)."""
    from ctxgate.backends.hf import HFBackend
    from ctxgate.textcodec import PieceEncoder

    backend = HFBackend(str(path), dtype=settings.dtype)
    encoder = PieceEncoder(backend.tokenizer)
    chat = resolve_chat(settings.chat_template, encoder.has_chat_template)
    ctx = BuildContext(
        encoder=encoder,
        chat=chat == "on",
        seed=settings.seed,
        essay_path=settings.haystack,
        squad_source=settings.squad,
        hotpotqa_source=settings.hotpotqa,
        data_dir=settings.data_dir,
        chat_by_task=chat == "task",
    )
    cache = None
    if settings.cache_dir:
        try:
            namespace = namespace_for(checkpoint_fingerprint(str(path))["sha256"], backend)
            assert namespace is not None  # a local checkpoint always has one
            cache = GenerationCache(settings.cache_dir, namespace)
        except StoreUnavailable as exc:
            warnings.warn(f"{exc}; evaluating without a cache", CacheWarning, stacklevel=2)
    results: dict[tuple[str, int], CaseResult] = {}
    try:
        for t, L in cases:
            if backend.max_positions is not None and L > backend.max_positions:
                continue  # beyond the window: no score (a regression where the reference had one)
            try:
                results[(t, L)] = run_case(
                    get_task(t),
                    ctx,
                    backend,
                    L,
                    settings.samples,
                    settings.seed,
                    cache=cache,
                    helmet_compat=settings.helmet_compat,
                    stop=_stop(settings, (reference or {}).get((t, L)), tolerance, t, L),
                )
            except (TaskTooShort, DataUnavailable):
                continue  # no score: the same for every checkpoint unless the reference has one
        return results
    finally:
        if cache:
            cache.close()


def _matcher(name: str) -> Callable[..., bool]:
    """pytest's -k matching: a word matches a case id that contains it, case-insensitively."""

    def matches(word: str, /, **_: object) -> bool:
        return word.lower() in name.lower()

    return matches
