"""Sharded training checkpoints as ``--model``: torch distributed checkpoints (Accelerate/FSDP with
``SHARDED_STATE_DICT``) and DeepSpeed ZeRO checkpoints (``global_step*/``), read in one process into
a model built from the run's ``config.json`` with torch's or DeepSpeed's own readers (the formats
are never re-implemented here)."""

from __future__ import annotations

import hashlib
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.api import CheckpointError, step_in_name, tokenizer_files, zero_latest

FSDP_DIR_PREFIX = "pytorch_model_fsdp_"
DCP_METADATA = ".metadata"
NESTED = "model"  # Accelerate saves {"model": state_dict}
DCP = "torch_distributed_checkpoint"
ZERO = "deepspeed_zero"
ZERO_STEP = "global_step"


@dataclass(frozen=True)
class DistributedCheckpoint:
    folder: Path  # what --model named
    # the folder with .metadata and the *.distcp files, or a ZeRO tag's global_step* folder
    shards: Path
    config_dir: Path  # the folder whose config.json builds the model
    format: str = DCP

    @property
    def tokenizer_dir(self) -> Path:
        return next(
            (f for f in (self.folder, self.config_dir) if tokenizer_files(f)), self.config_dir
        )

    def describe(self) -> dict[str, object]:
        return {"format": self.format, "shards": str(self.shards), "config": str(self.config_dir)}

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.json"


def dcp_shards(folder: Path) -> Path | None:
    """The shard folder of a distributed checkpoint in ``folder`` (itself or Accelerate's
    ``pytorch_model_fsdp_0``), None when there is none."""
    if (folder / DCP_METADATA).is_file():
        return folder
    found = sorted(p for p in folder.glob(f"{FSDP_DIR_PREFIX}*") if (p / DCP_METADATA).is_file())
    return found[0] if found else None


def zero_shards(folder: Path) -> Path | None:
    """The tag folder of a DeepSpeed ZeRO checkpoint (``folder`` itself, else the tag ``latest``
    names, else the highest step), None when there is none."""
    if folder.name.startswith(ZERO_STEP) and any(folder.glob("*model_states.pt")):
        return folder
    if (tag := zero_latest(folder)) is not None:
        return folder / tag
    steps = [
        p for p in folder.glob(f"{ZERO_STEP}*") if p.is_dir() and any(p.glob("*model_states.pt"))
    ]
    return max(
        steps, key=lambda p: -1 if (step := step_in_name(p.name)) is None else step, default=None
    )


def find_distributed(folder: Path, config_from: str | None) -> DistributedCheckpoint:
    shards, kind = dcp_shards(folder), DCP
    if shards is None:
        shards, kind = zero_shards(folder), ZERO
    if shards is None:
        raise CheckpointError(
            f"{folder} holds no sharded checkpoint (neither {DCP_METADATA} with *.distcp files "
            f"nor DeepSpeed's {ZERO_STEP}*/ folders)"
        )
    if config_from:
        config_dir = Path(config_from).expanduser()
        if not (config_dir / "config.json").is_file():
            raise CheckpointError(
                f"--config-from {config_from}: no config.json there; give the model's config folder"
            )
    else:
        candidates = list(dict.fromkeys([shards, folder, folder.parent]))
        found = next((c for c in candidates if (c / "config.json").is_file()), None)
        if found is None:
            what = "DeepSpeed ZeRO" if kind == ZERO else "torch distributed"
            raise CheckpointError(
                f"{folder} is a {what} checkpoint without the model's config.json (looked in "
                f"{', '.join(str(c) for c in candidates)}): pass --config-from PATH, the folder "
                "of the config.json the run was trained with"
            )
        config_dir = found
    return DistributedCheckpoint(folder, shards, config_dir, kind)


def check_shards(ckpt: DistributedCheckpoint) -> dict[str, object]:
    """Every shard file the metadata names present (ZeRO: model states, and one optimizer partition
    per rank without a gap); returns the metadata's tensors."""
    if ckpt.format == ZERO:
        _check_zero_files(ckpt.shards)
        return {}
    import torch.distributed.checkpoint as dcp

    try:
        metadata = dcp.FileSystemReader(str(ckpt.shards)).read_metadata()
    except Exception as exc:  # noqa: BLE001 - torch raises what its unpickler meets
        raise CheckpointError(
            f"{ckpt.shards / DCP_METADATA} cannot be read ({type(exc).__name__}: {exc}); restore "
            "it from the run"
        ) from None
    files = sorted({str(item.relative_path) for item in (metadata.storage_data or {}).values()})
    for name in files:
        if not (ckpt.shards / name).is_file():
            raise CheckpointError(
                f"{ckpt.shards / name} is missing (named by {DCP_METADATA}): a shard of the "
                "checkpoint was not copied or the save was cut short; restore it from the "
                "training run"
            )
    return dict(metadata.state_dict_metadata)


def _check_zero_files(tag: Path) -> None:
    fix = (
        "a file of the checkpoint was not copied or the save was cut short; restore it from the "
        "training run"
    )
    if not any(tag.glob("*model_states.pt")):
        raise CheckpointError(f"{tag} has no *model_states.pt: {fix}")
    optim = sorted(tag.glob("*optim_states.pt"))
    if not optim:
        raise CheckpointError(
            f"{tag} has no *optim_states.pt (ZeRO keeps the fp32 weights there): {fix}"
        )
    ranks = sorted(
        int(m.group(1)) for p in optim if (m := re.search(r"zero_pp_rank_(\d+)_", p.name))
    )
    gap = next((r for r, want in zip(ranks, range(len(ranks)), strict=True) if r != want), None)
    if gap is not None:
        raise CheckpointError(
            f"{tag}: the optimizer states of rank {gap - 1 if gap else 0} are missing: {fix}"
        )


def load_into(model: Any, ckpt: DistributedCheckpoint) -> None:
    """Fill ``model``'s parameters from the checkpoint; a tensor the checkpoint lacks (it would stay
    as initialized) is refused."""
    saved = check_shards(ckpt)
    if ckpt.format == ZERO:
        saved = zero_state_dict(ckpt)
    own = model.state_dict()
    nested = ckpt.format == DCP and all(k.startswith(NESTED + ".") for k in saved)
    _check_names(model, ckpt, {f"{NESTED}.{k}" if nested else k for k in own}, saved)
    if ckpt.format == ZERO:
        _load_zero(model, ckpt, saved)
    else:
        _load_dcp(model, ckpt, own, saved, nested)


# what a refusal of a checkpoint that does not fit the model built from its config says to do
WRONG_CONFIG = (
    "the config is not the one the run was trained with; pass --config-from with the right one"
)


def _check_names(
    model: Any, ckpt: DistributedCheckpoint, wanted: set[str], saved: dict[str, object]
) -> None:
    """The checkpoint holds the ``wanted`` tensors, no fewer and no more."""
    config = ckpt.config_file
    missing, extra = sorted(wanted - set(saved)), sorted(set(saved) - wanted)
    tied = getattr(model, "_tied_weights_keys", None) or {}
    if ckpt.format == ZERO and getattr(model.config, "tie_word_embeddings", False):
        missing = [k for k in missing if k not in tied]  # DeepSpeed saves a tied tensor once
    if missing:
        raise CheckpointError(
            f"{ckpt.shards}: tensor {missing[0]} of the model built from {config} is not in the "
            f"checkpoint ({len(missing)} missing): {WRONG_CONFIG}"
        )
    if extra:
        raise CheckpointError(
            f"{ckpt.shards}: tensor {extra[0]} is in the checkpoint but not in the model built "
            f"from {config} ({len(extra)} more): {WRONG_CONFIG}"
        )


def _load_zero(model: Any, ckpt: DistributedCheckpoint, saved: dict[str, object]) -> None:
    """The state dict DeepSpeed's converter gave, into the model."""
    try:  # strict=False: the tied tensors it lacks are the model's own ties
        model.load_state_dict(saved, strict=False)
    except RuntimeError as exc:  # a tensor of another shape
        first = str(exc).strip().splitlines()[-1].strip()[:300]
        raise CheckpointError(
            f"{ckpt.shards} does not fit the model from {ckpt.config_file} ({first}): "
            f"{WRONG_CONFIG}"
        ) from None


def _load_dcp(
    model: Any,
    ckpt: DistributedCheckpoint,
    own: dict[str, Any],
    saved: dict[str, object],
    nested: bool,
) -> None:
    """The shards read by torch's reader into the model's own tensors (under ``"model"`` where
    Accelerate nested them), each tensor's shape compared first."""
    config = ckpt.config_file
    # the metadata records each tensor's shape: compared before anything is read
    for key, tensor in own.items():
        size = getattr(saved.get(f"{NESTED}.{key}" if nested else key), "size", None)
        if size is not None and tuple(size) != tuple(tensor.shape):
            raise CheckpointError(
                f"{ckpt.shards}: tensor {key} is {tuple(size)} in the checkpoint and "
                f"{tuple(tensor.shape)} in the model built from {config}: {WRONG_CONFIG}"
            )
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import logger as dcp_log
    from torch.distributed.checkpoint.api import CheckpointException

    state = {NESTED: own} if nested else own
    # torch logs each failed read with its traceback; the one line below says it instead
    quiet, dcp_log._dcp_logger.disabled = dcp_log._dcp_logger.disabled, True
    # one process, no process group: what torch warns about is the intent here
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=".*assuming the intent is to .* in a single process"
        )
        try:
            dcp.load(state, checkpoint_id=str(ckpt.shards))
        except (Exception, CheckpointException) as exc:  # noqa: BLE001
            # torch wraps each rank's failure (a shape, a truncated shard) in a BaseException, with
            # the rank's traceback as its text: its last error line says it
            lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
            first = next(
                (line for line in reversed(lines) if "Error" in line), lines[-1] if lines else ""
            )
            raise CheckpointError(
                f"{ckpt.shards} could not be read ({first[:300] or type(exc).__name__}): a shard "
                "is damaged or was cut short; restore it from the training run"
            ) from None
        finally:
            dcp_log._dcp_logger.disabled = quiet
    model.load_state_dict(state[NESTED] if nested else state)


def zero_state_dict(ckpt: DistributedCheckpoint) -> dict[str, object]:
    import contextlib
    import io

    try:
        from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint
    except ImportError:
        raise CheckpointError(deepspeed_missing(ckpt.folder)) from None
    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said):  # the converter prints its progress
            return dict(
                get_fp32_state_dict_from_zero_checkpoint(
                    str(ckpt.shards.parent), tag=ckpt.shards.name
                )
            )
    except Exception as exc:  # noqa: BLE001 - what its unpickler and checks meet
        first = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(
            f"{ckpt.shards} could not be converted by DeepSpeed's zero_to_fp32 ({first}): restore "
            "the checkpoint's files from the training run"
        ) from None


def sharded_model(ckpt: DistributedCheckpoint) -> Any:
    """The model built from its config and filled from the shards, in float32 (to save it)."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(ckpt.config_dir)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    load_into(model, ckpt)
    return model


def distributed_fingerprint(ckpt: DistributedCheckpoint) -> dict[str, object]:
    from ctxgate.api import file_digest

    files = [p for p in sorted(ckpt.shards.iterdir()) if p.is_file()]
    files += [ckpt.config_dir / "config.json"]
    files += [ckpt.tokenizer_dir / n for n in tokenizer_files(ckpt.tokenizer_dir)]
    parts = {p: file_digest(p) for p in files}  # a file met twice (config.json) counts once
    overall = hashlib.sha256(
        "\n".join(f"{p.name}:{v}" for p, v in parts.items()).encode()
    ).hexdigest()
    return {"sha256": overall, **{f"file:{p.name}": v for p, v in parts.items()}}


def deepspeed_missing(folder: Path) -> str:
    return (
        f"{folder} is a DeepSpeed ZeRO checkpoint: reading it needs DeepSpeed's converter, the "
        "deepspeed extra (DS_BUILD_OPS=0 pip install --no-build-isolation 'ctxgate[deepspeed]')"
    )


def check_readable(ckpt: DistributedCheckpoint, allow_pickle: bool) -> None:
    """Consent to the pickles both formats hold, and for ZeRO DeepSpeed installed."""
    import importlib.util

    if ckpt.format == ZERO and importlib.util.find_spec("deepspeed") is None:
        raise CheckpointError(deepspeed_missing(ckpt.folder))
    if not allow_pickle:
        what = (
            "a DeepSpeed ZeRO checkpoint, whose *.pt files are pickles"
            if ckpt.format == ZERO
            else f"a torch distributed checkpoint, whose {DCP_METADATA} is a pickle"
        )
        raise CheckpointError(
            f"{ckpt.folder} is {what} that can run code when loaded: pass --allow-pickle if you "
            "trust it"
        )
