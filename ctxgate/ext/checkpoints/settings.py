"""The extra's section of the model's spec (``ModelSpec.extras[NAME]``): ``--base-model`` and
``--config-from`` as read, where the checkpoint kinds find them."""

from __future__ import annotations

from dataclasses import dataclass

NAME = "checkpoints"


@dataclass(frozen=True)
class CheckpointOptions:
    base_model: str | None = None  # --base-model: the checkpoint is a PEFT adapter on this base
    config_from: str | None = None  # --config-from: a sharded one, built from this config folder
