"""Evaluate-this-checkpoint, composed in one place: the backend, its tokenizer and chat template, the prompt
context, the run's record, the generation cache and the judges. The pytest plugin (``plugins/model.py``) and the
command-line workflows (``ctxgate bisect``, ``watch``) both open a model through ``open_model``, so a checkpoint is
evaluated the same way whichever started it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ctxgate.backends.base import Backend
from ctxgate.backends.endpoint import EndpointSettings
from ctxgate.backends.formats import Checkpoint
from ctxgate.backends.overrides import ConfigOverrides
from ctxgate.backends.vllm_server import EngineSpec
from ctxgate.judge.client import JudgeError, JudgeSettings
from ctxgate.judge.score import Judges, build_judges
from ctxgate.records.schema import RunInfo, adapter_for
from ctxgate.run.cache import CacheWarning, GenerationCache, StoreUnavailable, namespace_for
from ctxgate.run.case import resolve_chat
from ctxgate.tasks.base import BuildContext
from ctxgate.tasks.helmet_compat import check_tokenizers
from ctxgate.textcodec import ChatTemplateError, HFTokenizer, PieceEncoder

TEST_BACKEND = "scripted"  # a JSON script instead of a model, for the project's own plumbing tests


@dataclass(frozen=True)
class Served:
    """``--backend openai``/``vllm``: where requests go, the tokenizer to check the server against, each server's
    log (vllm), and what the suite knows of the engine's numerics (vllm: dtype, tensor parallel, arguments)."""

    endpoint: EndpointSettings
    tokenizer: str
    server_logs: tuple[str, ...] = ()
    engine: Mapping[str, Any] = field(default_factory=dict)
    launch: EngineSpec | None = None  # --ray: the server each replica starts on its node, but for its GPUs
    launch_timeout_s: float = 900.0


@dataclass(frozen=True)
class ModelSpec:
    """What to evaluate and how; every field has the default pytest's options have."""

    model: str
    backend: str = "hf"  # hf | openai | vllm | scripted
    model_dir: str | None = None  # ``model`` resolved to a local folder, when it is one
    dtype: str = "auto"
    trust_remote_code: bool = False
    allow_pickle: bool = False
    allow_weight_mismatch: bool = False
    ignore_remote_code: bool = False
    overrides: ConfigOverrides = ConfigOverrides()  # context-extension settings applied to the loaded config
    checkpoint: Checkpoint | None = None  # model_dir resolved and checked (hf and vllm: always)
    batch_size: int | None = None  # hf: None is auto (1 on CPU)
    device_map: str | None = None
    served: Served | None = None  # openai / vllm
    chat_template: str = "task"
    seed: int = 42
    haystack: str | None = None
    squad: str | None = None
    hotpotqa: str | None = None
    data_dir: str | None = None
    helmet_compat: bool = False
    helmet_tokenizer: str | None = None  # the folder HELMET's length selections count in (default: the model's)
    cache_dir: str | None = None
    judge: JudgeSettings | None = None
    nli_model: str | None = None
    judge_max_failure_rate: float = 0.05
    ray: str | None = None  # a Ray cluster's address (or auto, local): the model as replicas on its nodes
    ray_resource: str = "GPU"  # the resource each replica takes one of
    ray_replicas: int | None = None  # at most this many replicas (None: one per unit of the resource)


@dataclass(frozen=True)
class LoadedModel:
    backend: Backend
    context: BuildContext
    chat_template: str  # resolved: on | off | task
    run_meta: dict[str, Any]
    cache: GenerationCache | None
    judges: Judges | None = None

    @cached_property
    def run_info(self) -> RunInfo:
        """The run's record as the report keeps it (read once: a baseline is checked against it per case)."""
        return adapter_for(RunInfo).validate_python(self.run_meta)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        if hasattr(self.backend, "close"):
            self.backend.close()


class ModelError(RuntimeError):
    """The model cannot be evaluated: ``what`` failed (loading it, its tokenizer, its chat template, the judge)."""

    def __init__(self, what: str, cause: BaseException) -> None:
        super().__init__(f"{what}: {cause}")
        self.what, self.cause = what, cause


def threads_per_worker() -> int | None:
    """The cores shared out among the xdist workers (one process: all of them), unless the user said how many
    threads to use (OMP_NUM_THREADS)."""
    if os.environ.get("OMP_NUM_THREADS"):
        return None
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // workers)


def load_backend(spec: ModelSpec) -> Backend:
    if spec.ray is not None:
        from ctxgate.run.cluster import RayPool

        return RayPool(spec)
    if spec.backend == TEST_BACKEND:
        from ctxgate.backends.scripted import ScriptedBackend

        return ScriptedBackend(spec.model)
    if spec.backend in ("openai", "vllm"):
        return _endpoint_backend(spec)
    from ctxgate.backends.hf import HFBackend

    return HFBackend(
        spec.checkpoint or spec.model_dir or spec.model,
        dtype=spec.dtype,
        trust_remote_code=spec.trust_remote_code,
        allow_pickle=spec.allow_pickle,
        threads=threads_per_worker(),
        batch_size=spec.batch_size,
        device_map=spec.device_map,
        allow_weight_mismatch=spec.allow_weight_mismatch,
        overrides=spec.overrides,
    )


def _endpoint_backend(spec: ModelSpec) -> Backend:
    import transformers

    from ctxgate.backends.endpoint import EndpointBackend
    from ctxgate.backends.overrides import applied
    from ctxgate.backends.vllm_server import VLLMServer

    assert spec.served is not None, "--backend openai/vllm needs its servers"
    served = spec.served
    tokenizer = transformers.AutoTokenizer.from_pretrained(served.tokenizer, trust_remote_code=spec.trust_remote_code)
    logs = [Path(p) for p in served.server_logs]

    def server_log() -> str:  # --backend vllm: what the server said before it went away
        return "; ".join(VLLMServer.tail_of(p) for p in logs)

    local = local_fingerprint(spec) if spec.model_dir else None
    # the window the settings give: a server you run must have been started with them (vLLM derives its max
    # model length from them); the suite's own servers were
    config_dir = str(spec.checkpoint.config_dir) if spec.checkpoint else spec.model_dir or served.tokenizer
    expected = applied(config_dir, spec.overrides)[1] if spec.overrides else None
    return EndpointBackend(
        served.endpoint,
        tokenizer,
        served.tokenizer,
        local,
        diagnose=server_log if logs else None,
        name=spec.backend,
        engine=dict(served.engine),
        expected_window=expected if spec.backend == "openai" else None,
    )


def open_model(spec: ModelSpec, run: Mapping[str, Any] | None = None) -> LoadedModel:
    """The model ready to run cases: ``run`` adds to its record (the selection: lengths, samples, --sequential).
    Raises ModelError naming the stage that failed."""
    try:
        backend = load_backend(spec)
    except Exception as exc:  # noqa: BLE001 - whatever the loader raises, the run reports it in one line
        raise ModelError(f"the model {spec.model!r} could not be loaded", exc) from exc
    try:
        encoder = PieceEncoder(backend.tokenizer)
    except ChatTemplateError as exc:
        raise ModelError(f"the tokenizer of {spec.model!r}", exc) from exc
    chat = resolve_chat(spec.chat_template, encoder.has_chat_template)
    if getattr(backend, "chat_api", False):  # every prompt is a user message (the options refuse chat off)
        chat = "on"
    if chat == "on" and not encoder.has_chat_template:
        raise ModelError(
            "--chat-template on", ValueError(f"{spec.model} has no chat template; use --chat-template off or auto")
        )
    helmet_encoder = _helmet_encoder(spec.helmet_tokenizer)
    if spec.helmet_compat:
        try:
            check_tokenizers(encoder, helmet_encoder)
        except ValueError as exc:
            raise ModelError("--helmet-compat", exc) from exc
    context = BuildContext(
        encoder=encoder,
        chat=chat == "on",
        seed=spec.seed,
        essay_path=spec.haystack,
        squad_source=spec.squad,
        hotpotqa_source=spec.hotpotqa,
        data_dir=spec.data_dir,
        chat_by_task=chat == "task",
        helmet_encoder=helmet_encoder,
        helmet_tokenizer=spec.helmet_tokenizer,
        helmet_compat=spec.helmet_compat,
    )
    # plain JSON values only: records travel to the xdist controller through execnet
    meta = json.loads(json.dumps({**run_meta(spec, backend, encoder, chat), **(run or {})}, default=str))
    cache = _open_cache(spec, meta, backend)
    try:
        judges = build_judges(
            spec.judge, spec.nli_model, spec.judge_max_failure_rate, spec.helmet_compat, spec.allow_pickle
        )
    except (JudgeError, ValueError, OSError) as exc:
        if cache is not None:
            cache.close()
        raise ModelError("the judge could not be set up", exc) from exc
    if judges is not None:
        meta["judge"] = judges.describe()
    return LoadedModel(backend, context, chat, meta, cache, judges)


def _helmet_encoder(path: str | None) -> PieceEncoder | None:
    if path is None:
        return None
    try:
        from transformers import AutoTokenizer

        return PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(path)))
    except Exception as exc:  # noqa: BLE001 - whatever transformers raises, one line names the option
        raise ModelError(f"--helmet-tokenizer {path}", exc) from exc


def run_meta(spec: ModelSpec, backend: Backend, encoder: PieceEncoder, chat: str) -> dict[str, Any]:
    from importlib import metadata

    from ctxgate.data.haystacks import load_essay

    packages = {}
    for name in ("ctxgate", "torch", "transformers", "tokenizers", "datasets", "numpy", "pytest", "pytest-xdist"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    template = "".join(encoder.chat_parts()) if chat in ("on", "task") else None
    fingerprint = (
        local_fingerprint(spec) if spec.backend == "hf" else getattr(backend, "fingerprint", None)
    )  # else: what the server or script says
    return {
        "model": spec.model,
        "model_fingerprint": fingerprint,
        "backend": backend.describe(),
        "model_dir": spec.model_dir,
        "base_model": str(spec.checkpoint.adapter.base) if spec.checkpoint and spec.checkpoint.adapter else None,
        "model_overrides": spec.overrides.describe() or None,
        "ignore_remote_code": spec.ignore_remote_code,
        "weights_mismatch": getattr(backend, "weights_problem", None),  # let through by --allow-weight-mismatch
        "seed": spec.seed,
        "chat_template": chat,
        "helmet_compat": spec.helmet_compat,
        "helmet_length_tokenizer": spec.helmet_tokenizer or "the model's",
        "chat_template_sha256": hashlib.sha256(template.encode()).hexdigest() if template else None,
        "tokenizer_sha256": encoder.identity,
        "haystack": load_essay(spec.haystack).source,
        "haystack_sha256": load_essay(spec.haystack).sha256,
        "packages": packages,
        "python": sys.version.split()[0],
    }


def local_fingerprint(spec: ModelSpec) -> dict[str, Any]:
    """The model as it is loaded from local files (the resolved checkpoint's fingerprint), with the config
    overrides."""
    from ctxgate.backends.fingerprint import checkpoint_fingerprint, with_overrides

    found = spec.checkpoint.fingerprint() if spec.checkpoint else checkpoint_fingerprint(spec.model_dir or spec.model)
    return with_overrides(found, spec.overrides)


def _open_cache(spec: ModelSpec, meta: dict[str, Any], backend: Backend) -> GenerationCache | None:
    if not spec.cache_dir:
        return None
    meta["cache"] = {"dir": spec.cache_dir, "set_aside": []}
    namespace = namespace_for(meta["model_fingerprint"]["sha256"], backend)
    if namespace is None:
        why = (
            f"--backend {spec.backend} with --model {spec.model!r}, not a local checkpoint folder: the "
            "server's weights cannot be identified (it may be restarted on other weights under the same name), "
            "so no output is cached; pass --model with the served checkpoint's folder to use the cache"
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
    meta["cache"]["set_aside"] = list(cache.stats.set_aside)
    return cache
