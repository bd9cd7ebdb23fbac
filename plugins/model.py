"""The session-scoped model: loaded once per xdist worker, behind the backend interface.

A model that cannot be loaded is a property of the run, not of a case: the first case says so in one line (the
traceback only with -v), the session stops (the rest of the cases are reported as not run), and the report records
the error once.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ctxgate.backends.base import Backend
from ctxgate.backends.devices import visible_gpus
from ctxgate.backends.vllm_server import VLLMServer, engine_dtype
from ctxgate.judge.client import JudgeError
from ctxgate.judge.score import Judges, build_judges
from ctxgate.run.cache import CacheWarning, GenerationCache, StoreUnavailable, namespace_for
from ctxgate.run.case import resolve_chat
from ctxgate.tasks.base import BuildContext
from ctxgate.textcodec import ChatTemplateError, PieceEncoder

from .engine import ENGINE_KEY, EngineSettings
from .hf import HF_KEY, HFSettings
from .judging import JUDGING_KEY
from .options import SETTINGS_KEY, TEST_BACKEND, THRESHOLDS_KEY, Settings
from .sequential import SEQUENTIAL_KEY, SequentialSettings

RUN_ERROR_KEY = pytest.StashKey[str]()  # on the session: why no case can run in this process (the model, the judge)


@dataclass(frozen=True)
class LoadedModel:
    backend: Backend
    context: BuildContext
    chat_template: str  # resolved: on | off | task
    run_meta: dict[str, Any]
    cache: GenerationCache | None
    judges: Judges | None = None


def load_backend(settings: Settings, engine: EngineSettings, hf: HFSettings) -> Backend:
    assert settings.model is not None
    if settings.backend == TEST_BACKEND:
        from ctxgate.backends.scripted import ScriptedBackend

        return ScriptedBackend(settings.model)
    if settings.backend in ("openai", "vllm"):
        return _endpoint_backend(settings, engine)
    from ctxgate.backends.hf import HFBackend

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    # the cores shared out among the workers, unless the user said how many threads (OMP_NUM_THREADS) to use
    threads = None if os.environ.get("OMP_NUM_THREADS") else max(1, (os.cpu_count() or 1) // workers)
    return HFBackend(
        settings.model_dir or settings.model,
        dtype=settings.dtype,
        trust_remote_code=settings.trust_remote_code,
        allow_pickle=settings.allow_pickle,
        threads=threads,
        batch_size=hf.batch_size,
        device_map=hf.device_map,
        allow_weight_mismatch=settings.allow_weight_mismatch,
    )


def _endpoint_backend(settings: Settings, engine_settings: EngineSettings) -> Backend:
    import transformers

    from ctxgate.backends.endpoint import EndpointBackend, EndpointSettings
    from ctxgate.backends.fingerprint import checkpoint_fingerprint

    assert engine_settings.tokenizer is not None
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        engine_settings.tokenizer, trust_remote_code=settings.trust_remote_code
    )
    endpoint = EndpointSettings(
        engine_settings.base_urls,
        engine_settings.served_model,
        engine_settings.concurrency,
        engine_settings.request_timeout,
        max_retries=engine_settings.request_retries,
    )
    logs = [Path(p) for p in engine_settings.server_logs]

    def server_log() -> str:  # --backend vllm: what the server said before it went away
        return "; ".join(VLLMServer.tail_of(p) for p in logs)

    engine: dict[str, Any] = {}
    if settings.backend == "vllm":  # the suite started these servers: it knows what changes their numerics
        engine = {
            "dtype": engine_dtype(settings.dtype, bool(visible_gpus())),
            "tensor_parallel": engine_settings.tp,
            "vllm_args": list(engine_settings.vllm_args),
        }
    return EndpointBackend(
        endpoint,
        tokenizer,
        engine_settings.tokenizer,
        checkpoint_fingerprint(settings.model_dir) if settings.model_dir else None,
        diagnose=server_log if logs else None,
        name=settings.backend,
        engine=engine,
    )


def _run_meta(
    settings: Settings, backend: Backend, encoder: PieceEncoder, chat: str, sequential: SequentialSettings | None
) -> dict[str, Any]:
    import hashlib
    from importlib import metadata

    from ctxgate.backends.fingerprint import checkpoint_fingerprint
    from ctxgate.data.haystacks import load_essay

    packages = {}
    for name in ("ctxgate", "torch", "transformers", "tokenizers", "datasets", "numpy", "pytest", "pytest-xdist"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    template = "".join(encoder.chat_parts()) if chat in ("on", "task") else None
    fingerprint = (
        checkpoint_fingerprint(settings.model_dir or settings.model or "")
        if settings.backend == "hf"
        else getattr(backend, "fingerprint", None)  # what the server or script says
    )
    return {
        "model": settings.model,
        "model_fingerprint": fingerprint,
        "backend": backend.describe(),
        "model_dir": settings.model_dir,
        "ignore_remote_code": settings.ignore_remote_code,
        "weights_mismatch": getattr(backend, "weights_problem", None),  # let through by --allow-weight-mismatch
        "seed": settings.seed,
        "samples": settings.samples,
        "lengths": list(settings.lengths),
        "chat_template": chat,
        "helmet_compat": settings.helmet_compat,
        "sequential": sequential.describe() if sequential else None,
        "chat_template_sha256": hashlib.sha256(template.encode()).hexdigest() if template else None,
        "tokenizer_sha256": encoder.identity,
        "haystack": load_essay(settings.haystack).source,
        "haystack_sha256": load_essay(settings.haystack).sha256,
        "packages": packages,
        "python": sys.version.split()[0],
    }


def _run_failed(request: pytest.FixtureRequest, what: str, exc: BaseException) -> None:
    """One line per run: stop the session (nothing else can run without the model) and fail this case."""
    message = f"ctxgate: {what}: {exc}"
    if request.config.getoption("verbose") > 0:
        message += "\n" + "".join(traceback.format_exception(exc))
    request.session.stash[RUN_ERROR_KEY] = message
    request.session.shouldstop = f"ctxgate: {what}"
    pytest.fail(message, pytrace=False)


def _open_cache(settings: Settings, meta: dict[str, Any], backend: Backend) -> GenerationCache | None:
    if not settings.cache_dir:
        return None
    meta["cache"] = {"dir": settings.cache_dir, "set_aside": []}
    namespace = namespace_for(meta["model_fingerprint"]["sha256"], backend)
    if namespace is None:
        why = (
            f"--backend {settings.backend} with --model {settings.model!r}, not a local checkpoint folder: the "
            "server's weights cannot be identified (it may be restarted on other weights under the same name), "
            "so no output is cached; pass --model with the served checkpoint's folder to use the cache"
        )
        warnings.warn(why, CacheWarning, stacklevel=2)
        meta["cache"]["disabled"] = why
        return None
    try:
        cache = GenerationCache(settings.cache_dir, namespace)
    except StoreUnavailable as exc:
        warnings.warn(f"{exc}; running without a cache", CacheWarning, stacklevel=2)
        meta["cache"]["disabled"] = str(exc)
        return None
    meta["cache"]["set_aside"] = list(cache.stats.set_aside)
    return cache


@pytest.fixture(scope="session")
def ctxgate_model(request: pytest.FixtureRequest, pytestconfig: pytest.Config) -> LoadedModel:
    settings = pytestconfig.stash[SETTINGS_KEY]
    failure: BaseException | None = None  # failed outside the except blocks: no "during handling of..." chain
    try:
        backend = load_backend(settings, pytestconfig.stash[ENGINE_KEY], pytestconfig.stash[HF_KEY])
    except Exception as exc:  # noqa: BLE001 - whatever the loader raises, the run reports it in one line
        failure = exc
    if failure is not None:
        _run_failed(request, f"the model {settings.model!r} could not be loaded", failure)
    try:
        encoder = PieceEncoder(backend.tokenizer)
    except ChatTemplateError as exc:
        failure = exc
    if failure is not None:
        _run_failed(request, f"the tokenizer of {settings.model!r}", failure)
    chat = resolve_chat(settings.chat_template, encoder.has_chat_template)
    if chat == "on" and not encoder.has_chat_template:
        _run_failed(
            request,
            "--chat-template on",
            ValueError(f"{settings.model} has no chat template; use --chat-template off or auto"),
        )
    context = BuildContext(
        encoder=encoder,
        chat=chat == "on",
        seed=settings.seed,
        essay_path=settings.haystack,
        squad_source=settings.squad,
        hotpotqa_source=settings.hotpotqa,
        data_dir=settings.data_dir,
        chat_by_task=chat == "task",
    )
    # plain JSON values only: records travel to the xdist controller through execnet
    sequential = pytestconfig.stash[SEQUENTIAL_KEY]
    meta = json.loads(json.dumps(_run_meta(settings, backend, encoder, chat, sequential), default=str))
    cache = _open_cache(settings, meta, backend)
    try:
        judging = pytestconfig.stash[JUDGING_KEY]
        judges = build_judges(
            judging.judge,
            judging.nli_model,
            pytestconfig.stash[THRESHOLDS_KEY].judge_max_failure_rate,
            settings.helmet_compat,
            settings.allow_pickle,
        )
    except (JudgeError, ValueError, OSError) as exc:
        failure = exc
    if failure is not None:
        _run_failed(request, "the judge could not be set up", failure)
    if judges is not None:
        meta["judge"] = judges.describe()
    return LoadedModel(backend, context, chat, meta, cache, judges)
