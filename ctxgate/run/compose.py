"""Evaluate-this-checkpoint, composed in one place: backend, tokenizer, chat template, prompt
context, run record, generation cache, judges. The pytest plugin and the workflows (bisect, watch)
both open a model through ``open_model``, so a checkpoint is evaluated the same way by either."""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ctxgate.backends.base import Backend
from ctxgate.hooks import hook
from ctxgate.judge.client import JudgeError
from ctxgate.judge.score import Judges, build_judges
from ctxgate.records.refusal import CtxgateError, Unreachable
from ctxgate.records.schema import RunInfo, adapter_for
from ctxgate.run.cache import CacheWarning, GenerationCache, StoreUnavailable, namespace_for
from ctxgate.run.case import Reading, Session
from ctxgate.run.loading import ModelSpec, Served, load_backend, local_fingerprint, model_changes
from ctxgate.run.samples import resolve_chat
from ctxgate.tasks.base import BuildContext
from ctxgate.tasks.helmet_compat import check_tokenizers
from ctxgate.tokens.chat import ChatTemplateError
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.tokenizers import HFTokenizer


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
        return adapter_for(RunInfo).validate_python(self.run_meta)

    def close(self) -> None:
        if self.cache is not None:
            self.cache.close()
        if hasattr(self.backend, "close"):
            self.backend.close()


class ModelError(CtxgateError, RuntimeError):
    """The model cannot be evaluated: ``what`` failed (loading, tokenizer, chat template, judge).
    ``checkpoint``: the checkpoint's own files are at fault (bisect and watch skip it), not what
    else the run needs (a cluster, a server, the judge), which a later try may find."""

    def __init__(self, what: str, cause: BaseException, checkpoint: bool = True) -> None:
        super().__init__(f"{what}: {cause}")
        self.what, self.cause = what, cause
        self.checkpoint = checkpoint and not _elsewhere(cause)


def _elsewhere(cause: BaseException) -> bool:
    """What else the run needs failed (a cluster, a library, the device's memory), not the
    checkpoint's files: a later try, or a smaller batch, may succeed."""
    memory = type(cause).__name__ == "OutOfMemoryError"  # torch's, without importing torch
    return memory or isinstance(cause, (Unreachable, ImportError, MemoryError))


def open_model(
    spec: ModelSpec,
    served: Served | None = None,
    run: Mapping[str, Any] | None = None,
    replicas: int | None = None,
) -> LoadedModel:
    """The model ready to run cases, sending to ``served`` (--backend openai/vllm), on at most
    ``replicas`` copies of it where an extra opens the backend (``ctxgate_open_backend``: a
    cluster's, each loading it through load_backend as this process would); ``run`` adds to its
    record. Raises ModelError naming the stage that failed."""
    try:
        opened = hook().ctxgate_open_backend(spec=spec, served=served, replicas=replicas)
        backend: Backend = load_backend(spec, served) if opened is None else opened
    except Exception as exc:  # noqa: BLE001 - reported in one line, whatever it is
        # a server's failure is the server's: this process opened no file of the checkpoint
        raise ModelError(
            f"the model {spec.model!r} could not be loaded", exc, served is None
        ) from exc
    # before the prompts' encoder: a reading may set the template's arguments (a model's switch)
    reading = hook().ctxgate_reading(spec=spec, backend=backend) or Reading()
    context, chat = _prompts(spec, backend)
    # plain JSON values only: records travel to the xdist controller through execnet
    meta = run_meta(spec, backend, context.encoder, chat) | reading.record()
    meta = json.loads(json.dumps(meta | dict(run or {}), default=str))
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
    return LoadedModel(Session(backend, context, cache, judges, reading), chat, meta)


def _prompts(spec: ModelSpec, backend: Backend) -> tuple[BuildContext, str]:
    """The prompts' context, and the chat setting as it applies to this model."""
    try:
        encoder = PieceEncoder(backend.tokenizer)
    except ChatTemplateError as exc:
        raise ModelError(f"the tokenizer of {spec.model!r}", exc) from exc
    chat = resolve_chat(spec.chat_template, encoder.has_chat_template)
    if getattr(backend, "chat_api", False):  # every prompt is a user message (no chat off)
        chat = "on"
    if chat == "on" and not encoder.has_chat_template:
        raise ModelError(
            "--chat-template on",
            ValueError(f"{spec.model} has no chat template; use --chat-template off or auto"),
        )
    context = prompt_context(spec, encoder, chat)
    if spec.helmet_compat:
        try:
            check_tokenizers(encoder, context.helmet_encoder)
        except ValueError as exc:
            raise ModelError("--helmet-compat", exc) from exc
    return context, chat


def prompt_context(spec: ModelSpec, encoder: PieceEncoder, chat: str) -> BuildContext:
    return BuildContext(
        encoder=encoder,
        chat=chat == "on",
        seed=spec.seed,
        essay_path=spec.haystack,
        squad_source=spec.squad,
        hotpotqa_source=spec.hotpotqa,
        data_dir=spec.data_dir,
        chat_by_task=chat == "task",
        helmet_encoder=_helmet_encoder(spec.helmet_tokenizer),
        helmet_tokenizer=spec.helmet_tokenizer,
        helmet_compat=spec.helmet_compat,
    )


def _helmet_encoder(path: str | None) -> PieceEncoder | None:
    if path is None:
        return None
    try:
        from transformers import AutoTokenizer

        return PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(path)))
    except Exception as exc:  # noqa: BLE001 - one line names the option
        raise ModelError(f"--helmet-tokenizer {path}", exc) from exc


def run_meta(spec: ModelSpec, backend: Backend, encoder: PieceEncoder, chat: str) -> dict[str, Any]:
    from importlib import metadata

    from ctxgate.data.haystacks import load_essay

    packages = {}
    for name in "ctxgate torch transformers tokenizers datasets numpy pytest pytest-xdist".split():
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    template = "".join(encoder.chat_parts()) if chat in ("on", "task") else None
    # hf: the local files; else what the server or script says
    fingerprint = (
        local_fingerprint(spec) if spec.backend == "hf" else getattr(backend, "fingerprint", None)
    )
    essay = load_essay(spec.haystack)
    part = spec.checkpoint.part if spec.checkpoint else None
    return {
        "model": spec.model,
        "model_fingerprint": fingerprint,
        "backend": backend.describe(),
        "model_dir": str(spec.checkpoint.folder) if spec.checkpoint else None,
        # the base a checkpoint's part applies to, if any
        "base_model": str(part.base) if part and part.base else None,
        "model_overrides": model_changes(spec) or None,  # the extras' changes, as asked
        "ignore_remote_code": spec.ignore_remote_code,
        # let through by --allow-weight-mismatch
        "weights_mismatch": getattr(backend, "weights_problem", None),
        "seed": spec.seed,
        "chat_template": chat,
        "helmet_compat": spec.helmet_compat,
        "helmet_length_tokenizer": spec.helmet_tokenizer or "the model's",
        "chat_template_sha256": hashlib.sha256(template.encode()).hexdigest() if template else None,
        "tokenizer_sha256": encoder.identity,
        "haystack": essay.source,
        "haystack_sha256": essay.sha256,
        "packages": packages,
        "python": sys.version.split()[0],
    }


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
