"""PEFT adapter folders as ``--model``: what LoRA fine-tuning and LongLoRA-style context extension
save (``adapter_config.json`` and ``adapter_model.safetensors``), without the base weights. The base
(``--base-model``, else the adapter's ``base_model_name_or_path``) is checked before any model
loads; the adapter is merged into it with ``peft`` (the predictions of the folder
``merge_and_unload`` would save), and the fingerprint covers both."""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.api import (
    TOKENIZER_FILES,
    CheckpointError,
    ModelNotFound,
    check_safetensors,
    read_json,
    resolve_model,
    tokenizer_files,
)

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
TOKENIZER_EXTRAS = ("tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")
# the files of an adapter's folder that change the outputs, and so its fingerprint
COUNTED = frozenset((ADAPTER_CONFIG, *ADAPTER_WEIGHTS, *TOKENIZER_FILES, *TOKENIZER_EXTRAS))
# LoRA's low-rank factors, and which dimension of each is the rank: A is (rank, in), B (out, rank)
RANK_DIMENSION = {"lora_A": 0, "lora_embedding_A": 0, "lora_B": 1, "lora_embedding_B": 1}


@dataclass(frozen=True)
class Adapter:
    folder: Path  # what --model named
    base: Path  # the base model's folder
    weights: Path
    peft_type: str

    @property
    def tokenizer_dir(self) -> Path:
        """Trainer saves the tokenizer beside the adapter when given one; else the base's."""
        return self.folder if tokenizer_files(self.folder) else self.base

    def describe(self) -> dict[str, object]:
        return {
            "adapter": str(self.folder),
            "base_model": str(self.base),
            "peft_type": self.peft_type,
        }


def is_adapter(folder: Path) -> bool:
    """adapter_config.json makes the folder an adapter whatever else it holds, as PEFT reads it
    (a config.json beside it is the base's, saved by some trainers)."""
    return (folder / ADAPTER_CONFIG).is_file()


def find_adapter(folder: Path, base_model: str | None, allow_pickle: bool = False) -> Adapter:
    """The adapter in ``folder`` and its base, checked (CheckpointError names what is missing)."""
    path = folder / ADAPTER_CONFIG
    config = read_json(path, "restore it from the training run")
    if not config.get("peft_type"):
        raise CheckpointError(
            f"{path} names no peft_type: it is not a PEFT adapter config; restore it"
        )
    _check_peft_type(path, config["peft_type"])
    weights = next((folder / name for name in ADAPTER_WEIGHTS if (folder / name).is_file()), None)
    if weights is None:
        raise CheckpointError(
            f"{folder} has {ADAPTER_CONFIG} but no adapter weights ({' or '.join(ADAPTER_WEIGHTS)}"
            "): the save was cut short; restore the file from the training run"
        )
    if weights.suffix == ".safetensors":
        check_safetensors(weights)
    if weights.suffix == ".bin" and not allow_pickle:
        raise CheckpointError(
            f"{weights} is a pickle file, which can run code when loaded: pass --allow-pickle if "
            "you trust it"
        )
    named = base_model or config.get("base_model_name_or_path")
    if not named:
        raise CheckpointError(
            f"{path} names no base_model_name_or_path: pass --base-model PATH (the base model)"
        )
    base = _base_folder(str(named), folder, given=base_model is not None)
    return Adapter(folder, base, weights, config["peft_type"])


def _check_peft_type(path: Path, peft_type: object) -> None:
    """A type the installed peft can load: imported before any model loads, so that a type it
    cannot load is one line instead of a failure after the base has loaded."""
    try:
        from peft.utils import PeftType
    except ImportError:
        return
    known = sorted((t.value for t in PeftType), key=lambda t: t != "LORA")
    if peft_type not in known:
        raise CheckpointError(
            f"{path}: peft_type {peft_type!r} is not one this peft loads (e.g. "
            f"{', '.join(known[:4])}): the file was edited or comes from another tool; restore it "
            "from the training run, or upgrade peft if it is newer"
        )


def _base_folder(named: str, adapter: Path, given: bool) -> Path:
    source = "--base-model" if given else f"{adapter / ADAPTER_CONFIG}'s base_model_name_or_path"
    beside = adapter / named
    if not Path(named).expanduser().is_dir() and beside.is_dir():
        return beside
    try:
        return resolve_model(named)
    except ModelNotFound:
        raise CheckpointError(
            f"the adapter's base model {named!r} ({source}) is not there: pass --base-model PATH, "
            "the folder of the model the adapter was trained on"
        ) from None


def adapter_fingerprint(adapter: Adapter, base: Mapping[str, object]) -> dict[str, object]:
    """The base's fingerprint combined with every file of the adapter that changes the outputs."""
    from ctxgate.api import file_digest

    parts = {
        p.name: file_digest(p)
        for p in sorted(adapter.folder.iterdir())
        if p.is_file() and p.name in COUNTED
    }
    combined = hashlib.sha256(
        (str(base["sha256"]) + "".join(f"\n{k}:{v}" for k, v in sorted(parts.items()))).encode()
    ).hexdigest()
    return {
        "sha256": combined,
        "base_sha256": base["sha256"],
        **{f"adapter:{k}": v for k, v in parts.items()},
    }


def apply_adapter(model: Any, adapter: Adapter) -> Any:
    try:
        from peft import PeftModel
    except ImportError:
        raise CheckpointError(
            f"{adapter.folder} is a PEFT adapter: loading it needs the peft package (pip install "
            "'ctxgate[peft]')"
        ) from None
    with warnings.catch_warnings():  # peft asks transformers a deprecated question while it loads
        warnings.filterwarnings(
            "ignore", category=FutureWarning, message=".*gradient_checkpointing.*"
        )
        try:
            return PeftModel.from_pretrained(model, str(adapter.folder)).merge_and_unload()
        except RuntimeError as exc:  # torch lists every tensor that does not fit, one line each
            problem = _misfit(adapter, str(exc))
            if problem is None:
                raise
            raise CheckpointError(problem) from None


def _misfit(adapter: Adapter, error: str) -> str | None:
    """torch's size mismatches, in one line with the fix (None: not a size mismatch). A LoRA factor
    that differs only in its rank: the adapter's config and weights disagree (the rank comes from
    adapter_config.json); any other dimension: the base is not the one it was trained on."""
    found = re.findall(
        r"size mismatch for (\S+): copying a param with shape (.+?) from checkpoint, the shape in "
        r"current model is (.+?)\.$",
        error,
        re.MULTILINE,
    )
    if not found:
        return None
    base = [(n, s, b) for n, s, b in found if _rank_dimension(n, _dims(s), _dims(b)) is None]
    if not base:
        name, saved, built = found[0]
        rank = _rank_dimension(name, _dims(saved), _dims(built)) or 0
        return (
            f"{adapter.folder}: its {ADAPTER_CONFIG} makes {name} rank {_dims(built)[rank]}, but "
            f"its own weights are rank {_dims(saved)[rank]} ({len(found)} tensors): the adapter "
            f"is damaged or its config was edited; restore {ADAPTER_CONFIG} (r, rank_pattern) "
            "and the weights from the same save of the training run"
        )
    name, saved, built = base[0]
    return (
        f"{adapter.folder} does not fit the base {adapter.base}: {name} is {saved} in the adapter "
        f"and {built} in the base ({len(found)} tensors differ); pass --base-model with the model "
        "it was trained on"
    )


def _dims(shape: str) -> tuple[int, ...]:
    return tuple(int(d) for d in re.findall(r"\d+", shape))


def _rank_dimension(name: str, saved: tuple[int, ...], built: tuple[int, ...]) -> int | None:
    """The rank dimension of a LoRA factor whose shapes differ in it alone; None otherwise."""
    factor = next((part for part in name.split(".") if part in RANK_DIMENSION), None)
    if factor is None or len(saved) != len(built):
        return None
    rank = RANK_DIMENSION[factor]
    same = saved[:rank] + saved[rank + 1 :] == built[:rank] + built[rank + 1 :]
    return rank if same else None


def merged_model(adapter: Adapter) -> Any:
    import torch
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(adapter.base, dtype=torch.float32)
    return apply_adapter(model, adapter)
