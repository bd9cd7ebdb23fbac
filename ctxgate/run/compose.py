"""Evaluate-this-checkpoint, composed in one place: backend, tokenizer, chat template, prompt
context, run record, generation cache, judges. The pytest plugin and the workflows (bisect, watch)
both open a model through ``open_model``, so a checkpoint is evaluated the same way by either."""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from ctxgate.backends.base import Backend, BackendDown
from ctxgate.backends.forcing import has_own_budget
from ctxgate.judge.client import JudgeError
from ctxgate.judge.score import Judges, build_judges
from ctxgate.records.refusal import CtxgateError, Unreachable
from ctxgate.records.schema import RunInfo, adapter_for
from ctxgate.run.cache import CacheWarning, GenerationCache, StoreUnavailable, namespace_for
from ctxgate.run.case import resolve_chat
from ctxgate.run.loading import ModelSpec, Served, load_backend, local_fingerprint
from ctxgate.tasks.base import BuildContext
from ctxgate.tasks.helmet_compat import check_tokenizers
from ctxgate.tokens.chat import ChatTemplateError
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.thinking import Thinking, ThinkingError, ThoughtFormat, prepare
from ctxgate.tokens.tokenizers import HFTokenizer


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
    ``replicas`` of a cluster's (--ray, each loading it through load_backend as this process
    would); ``run`` adds to its record. Raises ModelError naming the stage that failed."""
    try:
        if spec.ray is not None:
            from ctxgate.run.cluster import RayPool

            backend: Backend = RayPool(spec, served, replicas)
        else:
            backend = load_backend(spec, served)
    except Exception as exc:  # noqa: BLE001 - reported in one line, whatever it is
        # a server's failure is the server's: this process opened no file of the checkpoint
        raise ModelError(
            f"the model {spec.model!r} could not be loaded", exc, served is None
        ) from exc
    try:
        thinking = prepare(
            Thinking(spec.thinking, spec.thinking_budget, spec.think_end),
            backend.tokenizer,
            spec.model,
        )
    except ThinkingError as exc:
        raise ModelError("the thinking options", exc) from exc
    try:
        thinking = budget_holder(spec, backend, thinking)
    except (CtxgateError, BackendDown) as exc:  # the server's, not the checkpoint's
        raise ModelError("the thinking budget", exc, checkpoint=False) from exc
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
    context = replace(prompt_context(spec, encoder, chat), thinking=thinking)
    if spec.helmet_compat:
        try:
            check_tokenizers(encoder, context.helmet_encoder)
        except ValueError as exc:
            raise ModelError("--helmet-compat", exc) from exc
    # plain JSON values only: records travel to the xdist controller through execnet
    described = thinking.describe() if thinking.thinks else None  # a model that writes no thought
    meta = run_meta(spec, backend, encoder, chat) | {"thinking": described}
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
    return LoadedModel(backend, context, chat, meta, cache, judges)


def budget_holder(spec: ModelSpec, backend: Backend, thinking: ThoughtFormat) -> ThoughtFormat:
    """Who holds each thought to --thinking-budget: the engine, where it has a budget of its own
    and --budget-forcing is not given, else budget forcing, which a chat API cannot take."""
    if thinking.budget is None or not thinking.thinks or thinking.mode == "off":
        return thinking
    engine = not spec.budget_forcing and has_own_budget(backend)
    if not engine and getattr(backend, "chat_api", False):
        raise ThinkingError(
            "--thinking-budget with --endpoint-api chat: the server has no thinking budget of its "
            "own (vLLM's thinking_token_budget, which it takes with a --reasoning-parser that "
            "names the thought's markers, or with --reasoning-config's reasoning_start_str and "
            "reasoning_end_str), and budget forcing continues the prompt's ids, which a chat API "
            "cannot take: give the server those markers, or use --endpoint-api completions"
        )
    return replace(thinking, budget_by="engine" if engine else "forcing")


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
        "model_overrides": spec.overrides.describe() or None,
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
