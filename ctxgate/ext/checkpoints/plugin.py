"""PEFT adapters and sharded training checkpoints as ``--model``: their kinds of folder
(``kinds.py``) and the two options that open them, read once into the model's spec."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxgate.api import Get, Option, OptionGroup, hookimpl

from .settings import NAME, CheckpointOptions

if TYPE_CHECKING:
    from ctxgate.api import CheckpointKind

BASE_MODEL = Option(
    "--base-model",
    "the checkpoint is a PEFT adapter folder: its base model (default: the adapter's "
    "base_model_name_or_path)",
)
CONFIG_FROM = Option(
    "--config-from",
    "the checkpoint is a sharded one (FSDP, DeepSpeed ZeRO): the folder of the config.json to "
    "build the model from (default: beside the shards, the checkpoint folder, or the run folder "
    "above it)",
)


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [
        OptionGroup(
            "ctxgate-checkpoints",
            "ctxgate checkpoints: PEFT adapters and sharded training checkpoints",
            (BASE_MODEL, CONFIG_FROM),
            evaluates=True,
        )
    ]


@hookimpl
def ctxgate_model_section(get: Get) -> tuple[str, CheckpointOptions] | None:
    base_model = BASE_MODEL.read(get(BASE_MODEL.dest))
    config_from = CONFIG_FROM.read(get(CONFIG_FROM.dest))
    if base_model is None and config_from is None:
        return None
    return NAME, CheckpointOptions(base_model, config_from)


@hookimpl
def ctxgate_checkpoint_kinds() -> list[CheckpointKind]:
    from .kinds import KINDS

    return list(KINDS)
