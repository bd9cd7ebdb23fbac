"""What a run resolves of its model once the backend is open, in one place and once per process:
the prompts' encoder and context, the chat setting as it applies to the model, how its output is
read (an extra's thought format), its fingerprint, and the run's record built from them.
``run/compose.open_model`` then instantiates what these say and decides nothing."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ctxgate.backends.base import Backend, takes_messages
from ctxgate.hooks import hook
from ctxgate.run.loading import ModelError, ModelSpec, local_fingerprint, model_changes
from ctxgate.run.reading import Reading, Readings
from ctxgate.run.samples import build_samples
from ctxgate.tasks.base import BuildContext, Sample
from ctxgate.tasks.helmet_compat import check_tokenizers
from ctxgate.tasks.registry import get_task
from ctxgate.tokens.chat import ChatTemplateError
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.tokenizers import HFTokenizer


@dataclass(frozen=True)
class ModelFacts:
    """``chat``: --chat-template as it applies to the model (on | off | task); ``record``: the run's
    record with the model's fingerprint, plain JSON values (records travel to the xdist controller
    through execnet)."""

    context: BuildContext
    chat: str
    reading: Reading
    record: dict[str, Any]


def resolve_chat(setting: str, has_template: bool) -> str:
    """``--chat-template`` as applied to a model: on, off, or task (each task's policy). auto and
    task fall back to off for a model without a template; an explicit on stays on (and fails when
    the prompt is built)."""
    if setting in ("auto", "task"):
        return ("on" if setting == "auto" else "task") if has_template else "off"
    return setting


def resolve_model(
    spec: ModelSpec, backend: Backend, run: Mapping[str, Any] | None = None
) -> ModelFacts:
    """The facts of ``spec``'s model as ``backend`` serves it; ``run`` adds to the record. Raises
    ModelError naming the stage that failed."""
    # before the prompts' encoder: a reading may set the template's arguments (a model's switch)
    reading = read_by(spec, backend)
    chat_api = takes_messages(backend)
    context, chat = prompts(spec, backend.tokenizer, chat_api, reading.holds_prefix)
    record = _record(spec, backend, context.encoder, chat) | reading.record() | dict(run or {})
    return ModelFacts(context, chat, reading, json.loads(json.dumps(record, default=str)))


def read_by(spec: ModelSpec, backend: Backend) -> Reading:
    """How the model's output is read: each extra's reading in turn, or as it came."""
    found = [r for r in hook().ctxgate_reading(spec=spec, backend=backend) if r is not None]
    return found[0] if len(found) == 1 else Readings(found) if found else Reading()


def prompts(
    spec: ModelSpec, tokenizer: Any, chat_api: bool = False, hold_prefix: bool = False
) -> tuple[BuildContext, str]:
    """The prompts' context for a model with ``tokenizer``, and the chat setting as it applies to
    it; ``chat_api``: a server that takes messages, so every prompt is a user message;
    ``hold_prefix``: a chat prompt's answer prefix follows the model's thought."""
    try:
        encoder = PieceEncoder(tokenizer)
    except ChatTemplateError as exc:
        raise ModelError(f"the tokenizer of {spec.model!r}", exc) from exc
    chat = "on" if chat_api else resolve_chat(spec.chat_template, encoder.has_chat_template)
    if chat == "on" and not encoder.has_chat_template:
        raise ModelError(
            "--chat-template on",
            ValueError(f"{spec.model} has no chat template; use --chat-template off or auto"),
        )
    context = BuildContext(
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
        hold_prefix=hold_prefix,
        extras=spec.extras,
    )
    if spec.helmet_compat:
        try:
            check_tokenizers(encoder, context.helmet_encoder)
        except ValueError as exc:
            raise ModelError("--helmet-compat", exc) from exc
    return context, chat


def task_samples(
    task: str, model: str, length: int, n: int = 1, seed: int = 42, chat_template: str = "task"
) -> list[Sample]:
    """The exact samples a run builds of ``task`` at ``length`` for a model with ``model``'s
    tokenizer (a checkpoint folder), as a run with these options would: each ``text`` the prompt,
    ``input_ids`` its ids, ``answers`` the references. What to call to read the prompts."""
    from transformers import AutoTokenizer

    spec = ModelSpec(model, seed=seed, chat_template=chat_template)
    context, _ = prompts(spec, HFTokenizer(AutoTokenizer.from_pretrained(model)))
    return build_samples(get_task(task), context, length, n, seed)


def _helmet_encoder(path: str | None) -> PieceEncoder | None:
    if path is None:
        return None
    try:
        from transformers import AutoTokenizer

        return PieceEncoder(HFTokenizer(AutoTokenizer.from_pretrained(path)))
    except Exception as exc:  # noqa: BLE001 - one line names the option
        raise ModelError(f"--helmet-tokenizer {path}", exc) from exc


def _record(spec: ModelSpec, backend: Backend, encoder: PieceEncoder, chat: str) -> dict[str, Any]:
    from importlib import metadata

    from ctxgate.data.haystacks import load_essay

    packages = {}
    for name in "ctxgate torch transformers tokenizers datasets numpy pytest pytest-xdist".split():
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    template = "".join(encoder.chat_parts()) if chat in ("on", "task") else None
    fingerprint = (  # hf: the local files; else what the server or script says
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
