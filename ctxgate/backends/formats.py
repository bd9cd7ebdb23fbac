"""The checkpoint ``--model`` names, resolved once from the folder's own files before anything
loads: a Hugging Face folder, a PEFT adapter (``adapters.py``), or a torch distributed or DeepSpeed
ZeRO checkpoint (``sharded.py``). ``locate`` alone decides the kind; everything after it takes the
``Checkpoint`` it returns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ctxgate.backends.adapters import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    Adapter,
    adapter_fingerprint,
    find_adapter,
    is_adapter,
    merged_model,
)
from ctxgate.backends.checkpoint import (
    CheckpointError,
    check_checkpoint,
    check_json_files,
    check_tokenizer,
)
from ctxgate.backends.sharded import (
    DistributedCheckpoint,
    check_readable,
    check_shards,
    dcp_shards,
    distributed_fingerprint,
    find_distributed,
    sharded_model,
    zero_shards,
)
from ctxgate.records.refusal import CtxgateError

Kind = Literal["hf", "adapter", "sharded"]


class WrongFlag(CtxgateError, ValueError):
    """A flag that does not fit the checkpoint, or one it needs (a usage error, not a broken
    checkpoint)."""


@dataclass(frozen=True)
class Checkpoint:
    folder: Path  # what --model names
    config_dir: Path  # whose config.json builds the model (what config overrides change)
    tokenizer_dir: Path
    adapter: Adapter | None = None
    sharded: DistributedCheckpoint | None = None

    @property
    def kind(self) -> Kind:
        return "adapter" if self.adapter else "sharded" if self.sharded else "hf"

    @property
    def weights_dir(self) -> Path:
        """What ``from_pretrained`` reads (an adapter's base; a sharded checkpoint has none)."""
        return self.adapter.base if self.adapter else self.folder

    def fingerprint(self) -> dict[str, object]:
        from ctxgate.backends.fingerprint import checkpoint_fingerprint

        if self.adapter:
            return adapter_fingerprint(self.adapter, checkpoint_fingerprint(str(self.adapter.base)))
        if self.sharded:
            return distributed_fingerprint(self.sharded)
        return checkpoint_fingerprint(str(self.folder))

    def describe(self) -> dict[str, object]:
        if self.adapter:
            return {"adapter": {**self.adapter.describe(), "applied": "merged"}}
        if self.sharded:
            return {"checkpoint": self.sharded.describe()}
        return {}

    @property
    def served_as(self) -> str | None:
        """What an engine that loads only Hugging Face folders is given instead of the folder."""
        if self.adapter:
            return "the PEFT adapter merged into its base, as a Hugging Face folder"
        if self.sharded:
            return "the sharded checkpoint, as a Hugging Face folder"
        return None

    def as_model(self) -> Any:
        """The whole model in memory (fp32), for writing it out as a Hugging Face folder."""
        if self.adapter:
            return merged_model(self.adapter)
        if self.sharded:
            return sharded_model(self.sharded)
        raise TypeError(f"{self.folder} is a Hugging Face folder already: load it as it is")


def kind_of(folder: Path) -> Kind | None:
    """The kind of checkpoint ``folder``'s files make, None for none (not yet, or not at all)."""
    if dcp_shards(folder) is not None or (
        zero_shards(folder) is not None and not has_hf_weights(folder)
    ):
        return "sharded"
    if is_adapter(folder):
        return "adapter"
    return "hf" if (folder / "config.json").is_file() else None


def locate(
    folder: Path,
    *,
    base_model: str | None = None,
    config_from: str | None = None,
    trust_remote_code: bool = False,
    ignore_remote_code: bool = False,
    allow_pickle: bool = False,
) -> Checkpoint:
    """The checkpoint in ``folder``, every piece checked. CheckpointError: a piece is missing or
    broken; WrongFlag: ``--base-model`` or ``--config-from`` given for another kind."""
    kind = kind_of(folder)
    if base_model and kind != "adapter":
        raise WrongFlag(
            f"--base-model is for a PEFT adapter folder, and {folder} has no adapter_config.json: "
            "drop --base-model"
        )
    if kind == "adapter" and not base_model and has_hf_weights(folder):
        raise WrongFlag(
            f"{folder} holds a PEFT adapter ({ADAPTER_CONFIG}) and a whole model's weights: PEFT "
            "reads it as the adapter on the base its config names, transformers as the adapter on "
            "the weights beside it. Pass --base-model with the base to apply it to (the folder "
            "itself for the weights beside it)"
        )
    if config_from and kind != "sharded":
        raise WrongFlag(
            f"--config-from is for a sharded checkpoint, and {folder} has none (no .metadata, no "
            "pytorch_model_fsdp_0/, no DeepSpeed global_step*/ without Hugging Face weights): "
            "drop --config-from"
        )
    if kind == "sharded":
        sharded = find_distributed(folder, config_from)
        check_readable(sharded, allow_pickle)
        check_shards(sharded)
        check_tokenizer(sharded.tokenizer_dir)
        return Checkpoint(folder, sharded.config_dir, sharded.tokenizer_dir, sharded=sharded)
    if kind is None and folder.is_dir():
        inside = sorted(p.name for p in folder.iterdir() if p.is_dir() and kind_of(p) is not None)
        if inside:
            raise CheckpointError(
                f"{folder} is a training run, not a checkpoint: it holds checkpoints "
                f"({', '.join(inside[:3])}, ...); pass one of them (ctxgate watch and ctxgate "
                "bisect take a whole run: docs/training.md)"
            )
    adapter = find_adapter(folder, base_model, allow_pickle) if kind == "adapter" else None
    if adapter:  # its own files: the JSON beside it, and the tokenizer when it was saved there
        check_json_files(folder)
        check_tokenizer(adapter.tokenizer_dir)
    weights = adapter.base if adapter else folder  # an adapter's base is a Hugging Face folder
    check_checkpoint(
        weights,
        trust_remote_code=trust_remote_code,
        ignore_remote_code=ignore_remote_code,
        allow_pickle=allow_pickle,
    )
    return Checkpoint(folder, weights, adapter.tokenizer_dir if adapter else folder, adapter)


def written(folder: Path) -> bool:
    """Whether ``folder`` holds a checkpoint with its weights (what a watcher waits for)."""
    kind = kind_of(folder)
    if kind == "adapter":
        return any(folder.glob("adapter_model.*"))
    return kind == "sharded" or kind == "hf" and has_hf_weights(folder)


def has_hf_weights(folder: Path) -> bool:
    """Weights ``from_pretrained`` reads (Trainer saves them beside a ZeRO-1/2 checkpoint); an
    adapter's own are not."""
    found = [*folder.glob("*.safetensors"), *folder.glob("pytorch_model*.bin")]
    return any(p.name not in ADAPTER_WEIGHTS for p in found)
