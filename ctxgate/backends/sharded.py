"""Sharded training checkpoints as ``--model``: torch distributed checkpoints (Accelerate/FSDP with
``SHARDED_STATE_DICT``: ``pytorch_model_fsdp_0/`` of ``*.distcp`` shards and a ``.metadata``) and DeepSpeed ZeRO
checkpoints (``global_step*/`` with ``*_model_states.pt``).

A distributed checkpoint is read with torch's own ``torch.distributed.checkpoint`` API, in one process, into a
model built from the ``config.json`` found beside the shards, in the checkpoint folder, in the run folder above it,
or given by ``--config-from``; the format is never re-implemented here. Accelerate nests the model's parameters
under ``model.`` (``{"model": model.state_dict()}``); a flat state dict is read as well. Every tensor the model has
must be in the checkpoint, and every shard the metadata names must be on disk: checked from the metadata before
the weights are read. DeepSpeed checkpoints are refused with the command of DeepSpeed's own converter
(``zero_to_fp32.py``).
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.backends.checkpoint import TOKENIZER_FILES, CheckpointError

FSDP_DIR_PREFIX = "pytorch_model_fsdp_"
DCP_METADATA = ".metadata"
NESTED = "model"  # Accelerate saves {"model": state_dict}


@dataclass(frozen=True)
class DistributedCheckpoint:
    folder: Path  # what --model named
    shards: Path  # the folder with .metadata and the *.distcp files
    config_dir: Path  # the folder whose config.json builds the model

    @property
    def tokenizer_dir(self) -> Path:
        for folder in (self.folder, self.config_dir):
            if any((folder / name).is_file() for name in TOKENIZER_FILES):
                return folder
        return self.config_dir

    def describe(self) -> dict[str, Any]:
        return {"format": "torch_distributed_checkpoint", "shards": str(self.shards), "config": str(self.config_dir)}


def dcp_shards(folder: Path) -> Path | None:
    """The shard folder of a distributed checkpoint in ``folder`` (the folder itself or Accelerate's
    ``pytorch_model_fsdp_0``), None when ``folder`` is not one."""
    if (folder / DCP_METADATA).is_file():
        return folder
    found = sorted(p for p in folder.glob(f"{FSDP_DIR_PREFIX}*") if (p / DCP_METADATA).is_file())
    return found[0] if found else None


def is_deepspeed(folder: Path) -> bool:
    return (folder / "latest").is_file() or any(folder.glob("global_step*/*model_states.pt"))


def find_distributed(folder: Path, config_from: str | None) -> DistributedCheckpoint:
    shards = dcp_shards(folder)
    if shards is None:
        raise CheckpointError(f"{folder} holds no torch distributed checkpoint ({DCP_METADATA} and *.distcp files)")
    if config_from:
        config_dir = Path(config_from).expanduser()
        if not (config_dir / "config.json").is_file():
            raise CheckpointError(f"--config-from {config_from}: no config.json there; give the model's config folder")
    else:
        candidates = [shards, folder, folder.parent]
        found = next((c for c in candidates if (c / "config.json").is_file()), None)
        if found is None:
            raise CheckpointError(
                f"{folder} is a torch distributed checkpoint without the model's config.json (looked in "
                f"{', '.join(str(c) for c in candidates)}): pass --config-from PATH, the folder of the config.json "
                "the run was trained with"
            )
        config_dir = found
    return DistributedCheckpoint(folder, shards, config_dir)


def check_shards(ckpt: DistributedCheckpoint) -> dict[str, Any]:
    """The metadata read, every shard file it names present: a missing shard is named before anything loads."""
    import torch.distributed.checkpoint as dcp

    try:
        metadata = dcp.FileSystemReader(str(ckpt.shards)).read_metadata()
    except Exception as exc:  # noqa: BLE001 - torch raises what its unpickler meets
        raise CheckpointError(
            f"{ckpt.shards / DCP_METADATA} cannot be read ({type(exc).__name__}: {exc}); restore it from the run"
        ) from None
    files = sorted({str(item.relative_path) for item in (metadata.storage_data or {}).values()})
    for name in files:
        if not (ckpt.shards / name).is_file():
            raise CheckpointError(
                f"{ckpt.shards / name} is missing (named by {DCP_METADATA}): a shard of the checkpoint was not copied "
                "or the save was cut short; restore it from the training run"
            )
    return dict(metadata.state_dict_metadata)


def load_into(model: Any, ckpt: DistributedCheckpoint) -> None:
    """Fill ``model``'s parameters from the checkpoint with ``torch.distributed.checkpoint.load``. A tensor the model
    has and the checkpoint lacks is refused, naming it (it would stay as initialized)."""
    import torch.distributed.checkpoint as dcp

    saved = check_shards(ckpt)
    own = model.state_dict()
    nested = all(k.startswith(NESTED + ".") for k in saved)
    wanted = {f"{NESTED}.{k}" if nested else k for k in own}
    config = ckpt.config_dir / "config.json"
    fix = "the config is not the one the run was trained with; pass --config-from with the right one"
    missing, extra = sorted(wanted - set(saved)), sorted(set(saved) - wanted)
    if missing:
        raise CheckpointError(
            f"{ckpt.shards}: tensor {missing[0]} of the model built from {config} is not in the checkpoint "
            f"({len(missing)} missing): {fix}"
        )
    if extra:
        raise CheckpointError(
            f"{ckpt.shards}: tensor {extra[0]} is in the checkpoint but not in the model built from {config} "
            f"({len(extra)} more): {fix}"
        )
    state = {NESTED: own} if nested else own
    with warnings.catch_warnings():  # one process, no process group: what torch warns about is the intent here
        warnings.filterwarnings("ignore", message=".*assuming the intent is to .* in a single process")
        try:
            dcp.load(state, checkpoint_id=str(ckpt.shards))
        except Exception as exc:  # noqa: BLE001 - torch wraps each rank's failure (a shape, a truncated shard)
            first = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
            raise CheckpointError(
                f"{ckpt.shards} could not be read into the model from {config} ({first}): {fix}"
            ) from None
    model.load_state_dict(state[NESTED] if nested else state)


def sharded_model(ckpt: DistributedCheckpoint) -> Any:
    """The model built from its config and filled from the shards, in float32 (for saving as a folder)."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(ckpt.config_dir)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    load_into(model, ckpt)
    return model


def distributed_fingerprint(ckpt: DistributedCheckpoint) -> dict[str, Any]:
    from ctxgate.backends.fingerprint import file_digest

    files = [p for p in sorted(ckpt.shards.iterdir()) if p.is_file()]
    files += [ckpt.config_dir / "config.json"]
    files += [ckpt.tokenizer_dir / n for n in TOKENIZER_FILES if (ckpt.tokenizer_dir / n).is_file()]
    parts = {str(p): file_digest(p) for p in files}
    overall = hashlib.sha256("\n".join(f"{Path(k).name}:{v}" for k, v in parts.items()).encode()).hexdigest()
    return {"sha256": overall, **{f"file:{Path(k).name}": v for k, v in parts.items()}}


def deepspeed_error(folder: Path) -> CheckpointError:
    """One line: DeepSpeed's own converter, saved beside every ZeRO checkpoint, is the way in."""
    return CheckpointError(
        f"{folder} is a DeepSpeed ZeRO checkpoint: convert it with DeepSpeed's own converter first (pip install "
        f"deepspeed; python {folder / 'zero_to_fp32.py'} {folder} OUT_DIR --safe_serialization), copy config.json "
        "and the tokenizer beside the weights, and pass --model OUT_DIR"
    )
