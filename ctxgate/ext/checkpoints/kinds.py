"""The two kinds of checkpoint folder this extra adds to the Hugging Face folder
(``backends.formats.CheckpointKind``): a PEFT adapter (``adapters.py``) and a torch distributed or
DeepSpeed ZeRO checkpoint (``sharded.py``), each with its part of the located ``Checkpoint``. They
read ``--base-model`` and ``--config-from`` from the model's spec (``settings.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.api import (
    Checkpoint,
    CheckpointKind,
    Opening,
    WrongFlag,
    check_checkpoint,
    check_json_files,
    check_tokenizer,
    has_hf_weights,
)

from .adapters import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    Adapter,
    adapter_fingerprint,
    apply_adapter,
    find_adapter,
    is_adapter,
    merged_model,
)
from .settings import NAME, CheckpointOptions
from .sharded import (
    DCP_METADATA,
    FSDP_DIR_PREFIX,
    ZERO_STEP,
    DistributedCheckpoint,
    check_readable,
    check_shards,
    dcp_shards,
    distributed_fingerprint,
    find_distributed,
    load_into,
    sharded_model,
    zero_shards,
)


def options_of(how: Opening) -> CheckpointOptions:
    found = how.extras.get(NAME)
    return found if isinstance(found, CheckpointOptions) else CheckpointOptions()


@dataclass(frozen=True)
class AdapterPart:
    """A PEFT adapter, merged into its base when it loads."""

    adapter: Adapter
    kind = "adapter"
    what = "a PEFT adapter"
    served_as = "the PEFT adapter merged into its base, as a Hugging Face folder"

    @property
    def base(self) -> Path:
        return self.adapter.base

    def fingerprint(self) -> dict[str, object]:
        from ctxgate.api import checkpoint_fingerprint

        return adapter_fingerprint(self.adapter, checkpoint_fingerprint(str(self.adapter.base)))

    def describe(self) -> dict[str, object]:
        return {"adapter": {**self.adapter.describe(), "applied": "merged"}}

    def as_model(self) -> Any:
        return merged_model(self.adapter)

    def fill(self, model: Any) -> None:
        raise TypeError(f"{self.adapter.folder} is loaded from its base, not filled")

    def finish(self, model: Any) -> Any:
        return apply_adapter(model, self.adapter)


@dataclass(frozen=True)
class ShardedPart:
    """A sharded checkpoint: the model built from its config and filled from the shards."""

    sharded: DistributedCheckpoint
    kind = "sharded"
    what = "a sharded training checkpoint"
    served_as = "the sharded checkpoint, as a Hugging Face folder"

    @property
    def base(self) -> None:
        return None

    def fingerprint(self) -> dict[str, object]:
        return distributed_fingerprint(self.sharded)

    def describe(self) -> dict[str, object]:
        return {"checkpoint": self.sharded.describe()}

    def as_model(self) -> Any:
        return sharded_model(self.sharded)

    def fill(self, model: Any) -> None:
        load_into(model, self.sharded)

    def finish(self, model: Any) -> Any:
        return model


class ShardedKind:
    name = "sharded"
    described = "FSDP or DeepSpeed checkpoints"
    marks = (DCP_METADATA, f"{ZERO_STEP}*/")
    configs: tuple[str, ...] = ()
    own_weights: tuple[str, ...] = ()

    def claims(self, folder: Path) -> bool:
        return dcp_shards(folder) is not None or (
            zero_shards(folder) is not None and not has_hf_weights(folder)
        )

    def refuse(self, folder: Path, kind: str | None, how: Opening) -> None:
        if options_of(how).config_from and kind != self.name:
            raise WrongFlag(
                f"--config-from is for a sharded checkpoint, and {folder} has none (no .metadata, "
                "no pytorch_model_fsdp_0/, no DeepSpeed global_step*/ without Hugging Face "
                "weights): drop --config-from"
            )

    def locate(self, folder: Path, how: Opening) -> Checkpoint:
        sharded = find_distributed(folder, options_of(how).config_from)
        check_readable(sharded, how.allow_pickle)
        check_shards(sharded)
        check_tokenizer(sharded.tokenizer_dir)
        return Checkpoint(folder, sharded.config_dir, sharded.tokenizer_dir, ShardedPart(sharded))

    def written(self, folder: Path) -> bool:
        return True

    def unfinished(self, folder: Path, names: list[str]) -> str | None:
        if (folder / "config.json").is_file():
            return None  # the spine's "config.json without weights" says it
        dirs = [n for n in names if (folder / n).is_dir()]
        fsdp = [n for n in dirs if n.startswith(FSDP_DIR_PREFIX)]
        if fsdp or any(n.endswith(".distcp") for n in names):
            shards = f"{fsdp[0]}/" if fsdp else "shards (*.distcp)"
            return f"{shards} without {DCP_METADATA}, which a distributed save writes last"
        if [n for n in names if n.endswith(".safetensors") or n.startswith("pytorch_model")]:
            return None  # the spine's "weights without config.json" says it
        zero = [n for n in dirs if n.startswith(ZERO_STEP)]
        if zero := [n for n in zero if not any((folder / n).glob("*model_states.pt"))]:
            return f"{zero[0]}/ without *model_states.pt"
        return None


SHARDED = ShardedKind()


class AdapterKind:
    name = "adapter"
    described = "PEFT adapters"
    marks = (ADAPTER_CONFIG,)
    configs = (ADAPTER_CONFIG,)
    own_weights = ADAPTER_WEIGHTS

    def claims(self, folder: Path) -> bool:
        # a sharded checkpoint's folder is one whatever else it holds
        return is_adapter(folder) and not SHARDED.claims(folder)

    def refuse(self, folder: Path, kind: str | None, how: Opening) -> None:
        base_model = options_of(how).base_model
        if base_model and kind != self.name:
            raise WrongFlag(
                f"--base-model is for a PEFT adapter folder, and {folder} has no "
                "adapter_config.json: drop --base-model"
            )
        if kind == self.name and not base_model and has_hf_weights(folder):
            raise WrongFlag(
                f"{folder} holds a PEFT adapter ({ADAPTER_CONFIG}) and a whole model's weights: "
                "PEFT reads it as the adapter on the base its config names, transformers as the "
                "adapter on the weights beside it. Pass --base-model with the base to apply it to "
                "(the folder itself for the weights beside it)"
            )

    def locate(self, folder: Path, how: Opening) -> Checkpoint:
        adapter = find_adapter(folder, options_of(how).base_model, how.allow_pickle)
        # its own files: the JSON beside it, and the tokenizer when it was saved there
        check_json_files(folder)
        check_tokenizer(adapter.tokenizer_dir)
        check_checkpoint(  # its base is a Hugging Face folder
            adapter.base,
            trust_remote_code=how.trust_remote_code,
            ignore_remote_code=how.ignore_remote_code,
            allow_pickle=how.allow_pickle,
        )
        return Checkpoint(folder, adapter.base, adapter.tokenizer_dir, AdapterPart(adapter))

    def written(self, folder: Path) -> bool:
        return any(folder.glob("adapter_model.*"))

    def unfinished(self, folder: Path, names: list[str]) -> str | None:
        if self.claims(folder):
            return f"{ADAPTER_CONFIG} without adapter weights ({ADAPTER_WEIGHTS[0]})"
        return None


ADAPTER = AdapterKind()
# the adapter's refusals first, as the spine listed them; no folder is claimed by both
KINDS: tuple[CheckpointKind, ...] = (ADAPTER, SHARDED)
