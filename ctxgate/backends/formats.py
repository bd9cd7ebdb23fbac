"""Which kind of checkpoint ``--model`` names, from the folder's own files, checked before anything loads: a
Hugging Face folder, a PEFT adapter (``adapters.py``), a torch distributed checkpoint or a DeepSpeed ZeRO one
(``sharded.py``). The pytest plugin and the workflows resolve ``--model`` through ``locate`` alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ctxgate.backends.adapters import find_adapter, is_adapter
from ctxgate.backends.checkpoint import check_checkpoint, check_tokenizer
from ctxgate.backends.sharded import check_readable, check_shards, dcp_shards, find_distributed, zero_shards


class WrongFlag(ValueError):
    """A flag that does not fit the checkpoint (a usage error, not a broken checkpoint)."""


@dataclass(frozen=True)
class Located:
    folder: Path  # what --model names
    config_dir: Path  # the folder whose config.json builds the model (what config overrides change)
    base_model: Path | None = None  # a PEFT adapter's base
    config_from: Path | None = None  # a sharded (torch distributed or DeepSpeed) checkpoint's config folder


def locate(
    folder: Path,
    *,
    base_model: str | None = None,
    config_from: str | None = None,
    trust_remote_code: bool = False,
    ignore_remote_code: bool = False,
    allow_pickle: bool = False,
) -> Located:
    """The checkpoint in ``folder`` and what builds it. CheckpointError: a piece is missing or broken (named with
    the fix); WrongFlag: ``--base-model``/``--config-from`` given for another kind of checkpoint."""
    sharded = dcp_shards(folder) is not None or (zero_shards(folder) is not None and not has_hf_weights(folder))
    if base_model and not is_adapter(folder):
        raise WrongFlag(
            f"--base-model is for a PEFT adapter folder, and {folder} has no adapter_config.json: drop --base-model"
        )
    if config_from and not sharded:
        raise WrongFlag(
            f"--config-from is for a sharded checkpoint, and {folder} has none (no .metadata, no "
            "pytorch_model_fsdp_0/, no DeepSpeed global_step*/ without Hugging Face weights): drop --config-from"
        )
    if sharded:
        found = find_distributed(folder, config_from)
        check_readable(found, allow_pickle)
        check_shards(found)
        check_tokenizer(found.tokenizer_dir)
        return Located(folder, found.config_dir, config_from=found.config_dir)
    checks = {"trust_remote_code": trust_remote_code, "ignore_remote_code": ignore_remote_code}
    if is_adapter(folder):
        adapter = find_adapter(folder, base_model, allow_pickle)
        check_checkpoint(adapter.base, **checks, allow_pickle=allow_pickle)
        return Located(folder, adapter.base, base_model=adapter.base)
    check_checkpoint(folder, **checks, allow_pickle=allow_pickle)
    return Located(folder, folder)


def has_hf_weights(folder: Path) -> bool:
    """Weights ``from_pretrained`` reads (what Trainer saves beside a ZeRO-1/2 checkpoint): such a folder is loaded
    as a Hugging Face folder."""
    return any(folder.glob("*.safetensors")) or any(folder.glob("pytorch_model*.bin"))
