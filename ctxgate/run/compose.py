"""Evaluate-this-checkpoint, composed in one place: the backend, what the run resolves of the
model, the generation cache and the judges. The pytest plugin and the workflows (bisect, watch)
both open a model through ``load_model``, so a checkpoint is evaluated the same way by either."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from ctxgate.backends.base import Backend
from ctxgate.judge.client import JudgeError
from ctxgate.judge.score import Judges, build_judges
from ctxgate.records.schema import RunInfo, adapter_for
from ctxgate.records.slots import typed
from ctxgate.run.cache import CacheWarning, GenerationCache, StoreUnavailable, namespace_for
from ctxgate.run.case import Session
from ctxgate.run.facts import ModelFacts, resolve_model
from ctxgate.run.loading import ModelError, ModelSpec, Served, open_backend
from ctxgate.tasks.base import BuildContext


@dataclass(frozen=True)
class LoadedModel:
    session: Session  # what each case runs with
    chat_template: str  # resolved: on | off | task
    run_meta: dict[str, Any]

    @property
    def backend(self) -> Backend:
        return self.session.backend

    @property
    def context(self) -> BuildContext:
        return self.session.context

    @property
    def cache(self) -> GenerationCache | None:
        return self.session.cache

    @property
    def judges(self) -> Judges | None:
        return self.session.judges

    @cached_property
    def run_info(self) -> RunInfo:
        """The run's record as the report keeps it (read once: a baseline is checked per case)."""
        run = adapter_for(RunInfo).validate_python(self.run_meta)
        return replace(run, extras=typed(run.extras, "run", "the run"))

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        _close(self.backend)


def load_model(
    spec: ModelSpec,
    served: Served | None = None,
    run: Mapping[str, Any] | None = None,
    replicas: int | None = None,
) -> LoadedModel:
    """The plan's model ready to run cases, in three steps: its backend opened as ``spec`` says
    (``run/loading.open_backend``, sending to ``served``, on at most ``replicas`` copies), what the
    run resolves of it (``run/facts.py``; ``run`` adds to the record), and the session built from
    the two. Raises ModelError naming the stage that failed; nothing opened is left open."""
    backend = open_backend(spec, served, replicas)
    try:
        return open_model(spec, backend, resolve_model(spec, backend, run))
    except BaseException:
        _close(backend)
        raise


def open_model(spec: ModelSpec, backend: Backend, facts: ModelFacts) -> LoadedModel:
    """The session every case runs with, as the plan's model section and the facts resolved of it
    say: the generation cache (under the fingerprint in their record) and the judges."""
    meta = dict(facts.record)
    cache = _open_cache(spec, meta, backend)
    try:
        judges = build_judges(
            spec.judge,
            spec.nli_model,
            spec.judge_max_failure_rate,
            spec.helmet_compat,
            spec.allow_pickle,
        )
    except (JudgeError, ValueError, OSError) as exc:
        if cache is not None:
            cache.close()
        raise ModelError("the judge could not be set up", exc, checkpoint=False) from exc
    if judges is not None:
        meta["judge"] = judges.describe()
    session = Session(backend, facts.context, cache, judges, facts.reading)
    return LoadedModel(session, facts.chat, meta)


def _close(backend: Backend) -> None:
    if hasattr(backend, "close"):
        backend.close()


def _open_cache(spec: ModelSpec, meta: dict[str, Any], backend: Backend) -> GenerationCache | None:
    if not spec.cache_dir:
        return None
    meta["cache"] = {"dir": spec.cache_dir, "set_aside": []}
    namespace = namespace_for(meta["model_fingerprint"]["sha256"], backend)
    if namespace is None:
        why = (
            f"--backend {spec.backend} with --model {spec.model!r}, not a local checkpoint folder: "
            "the server's weights cannot be identified (it may be restarted on other weights under "
            "the same name), so no output is cached; pass --model with the served checkpoint's "
            "folder to use the cache"
        )
        warnings.warn(why, CacheWarning, stacklevel=3)
        meta["cache"]["disabled"] = why
        return None
    try:
        cache = GenerationCache(spec.cache_dir, namespace)
    except StoreUnavailable as exc:
        warnings.warn(f"{exc}; running without a cache", CacheWarning, stacklevel=3)
        meta["cache"]["disabled"] = str(exc)
        return None
    meta["cache"]["set_aside"] = list(cache.set_aside)
    return cache
