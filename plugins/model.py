"""The session-scoped model: loaded once per xdist worker, behind the backend interface."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from ctxgate.backends.base import Backend
from ctxgate.cache import GenerationCache, namespace_for
from ctxgate.judge.client import JudgeError
from ctxgate.judge.score import Judges, build_judges
from ctxgate.runner import resolve_chat
from ctxgate.tasks.base import BuildContext
from ctxgate.textcodec import PieceEncoder
from .options import SETTINGS_KEY, THRESHOLDS_KEY, Settings


@dataclass(frozen=True)
class LoadedModel:
    backend: Backend
    context: BuildContext
    chat_template: str  # resolved: on | off | task
    run_meta: dict[str, Any]
    cache: GenerationCache | None
    judges: Judges | None = None


def load_backend(settings: Settings) -> Backend:
    assert settings.model is not None
    if settings.backend == "scripted":
        from ctxgate.backends.scripted import ScriptedBackend

        return ScriptedBackend(settings.model)
    from ctxgate.backends.hf import HFBackend

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    threads = max(1, (os.cpu_count() or 1) // workers)
    return HFBackend(settings.model, dtype=settings.dtype, trust_remote_code=settings.trust_remote_code,
                     allow_pickle=settings.allow_pickle, threads=threads)


def _run_meta(settings: Settings, backend: Backend, encoder: PieceEncoder, chat: str) -> dict[str, Any]:
    import hashlib
    from importlib import metadata

    from ctxgate.fingerprint import checkpoint_fingerprint
    from ctxgate.haystacks import load_essay

    packages = {}
    for name in ("ctxgate", "torch", "transformers", "tokenizers", "datasets", "numpy", "pytest", "pytest-xdist"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    template = "".join(encoder.chat_parts()) if chat in ("on", "task") else None
    fingerprint = (checkpoint_fingerprint(settings.model) if settings.backend == "hf"
                   else {"sha256": getattr(backend, "fingerprint", "")})
    return {
        "model": settings.model,
        "model_fingerprint": fingerprint,
        "backend": backend.describe(),
        "seed": settings.seed, "samples": settings.samples, "lengths": list(settings.lengths),
        "chat_template": chat, "helmet_compat": settings.helmet_compat,
        "chat_template_sha256": hashlib.sha256(template.encode()).hexdigest() if template else None,
        "tokenizer_sha256": encoder.identity,
        "haystack_sha256": load_essay(settings.haystack).sha256,
        "packages": packages, "python": sys.version.split()[0],
    }


@pytest.fixture(scope="session")
def ctxgate_model(pytestconfig: pytest.Config) -> LoadedModel:
    settings = pytestconfig.stash[SETTINGS_KEY]
    try:
        backend = load_backend(settings)
    except (ValueError, RuntimeError) as exc:
        # A failed session fixture is cached: every case errors with this one message, also under xdist.
        pytest.fail(f"ctxgate: {exc}", pytrace=False)
    encoder = PieceEncoder(backend.tokenizer)
    chat = resolve_chat(settings.chat_template, encoder.has_chat_template)
    if chat == "on" and not encoder.has_chat_template:
        pytest.fail(f"ctxgate: --chat-template on, but {settings.model} has no chat template; use "
                    "--chat-template off or auto", pytrace=False)
    context = BuildContext(encoder=encoder, chat=chat == "on", seed=settings.seed, essay_path=settings.haystack,
                           squad_source=settings.squad, hotpotqa_source=settings.hotpotqa,
                           data_dir=settings.data_dir, chat_by_task=chat == "task")
    # plain JSON values only: records travel to the xdist controller through execnet
    meta = json.loads(json.dumps(_run_meta(settings, backend, encoder, chat), default=str))
    cache = None
    if settings.cache_dir:
        cache = GenerationCache(settings.cache_dir, namespace_for(meta["model_fingerprint"]["sha256"], backend))
        meta["cache"] = {"dir": settings.cache_dir, "set_aside": list(cache.stats.set_aside)}
    try:
        judges = build_judges(settings.judge, settings.nli_model,
                              pytestconfig.stash[THRESHOLDS_KEY].judge_max_failure_rate)
    except (JudgeError, ValueError, OSError) as exc:
        pytest.fail(f"ctxgate: {exc}", pytrace=False)
    if judges is not None:
        meta["judge"] = judges.describe()
    return LoadedModel(backend, context, chat, meta, cache, judges)
