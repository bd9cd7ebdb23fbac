"""A model's config.json as the backends read it: the window (positions) it covers, as
transformers applies its RoPE settings, and the changes the extras make to it before the model
loads or is served (``hookspec.ctxgate_config_changes``), checked against it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ctxgate.backends.checkpoint import CheckpointError, read_json
from ctxgate.values import is_finite, is_whole

# window = original positions x factor, as transformers reads them
SCALED_BY_FACTOR = ("linear", "dynamic", "yarn")


@dataclass(frozen=True)
class ConfigChanges:
    """What the extras change in a model's config.json, checked against it: ``changes``, its
    top-level keys to set (as transformers and vLLM's ``--hf-overrides`` take them), and
    ``window``, the positions the changed config covers (None: it does not say). The rest is for
    the messages: ``asked``, the changes as given (JSON); ``flags``, the options that ask for them;
    ``resizing``, those that resize the model's tensors as given ("" none), a failed load's likely
    cause."""

    changes: Mapping[str, object]
    window: int | None
    asked: Mapping[str, object]
    flags: str
    resizing: str = ""


def rope_key(config: Mapping[str, object]) -> str:
    """transformers 5's ``rope_parameters``, unless the config has only the legacy one."""
    if "rope_parameters" not in config and "rope_scaling" in config:
        return "rope_scaling"
    return "rope_parameters"


def window(config: Mapping[str, object]) -> int | None:
    """The positions a config covers, as transformers applies its RoPE settings: linear, dynamic and
    YaRN scale the original positions by the factor; Llama 3 and LongRoPE configs state the extended
    window in ``max_position_embeddings`` already."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    assert isinstance(text, Mapping)
    positions = text.get("max_position_embeddings")
    rope = text.get(rope_key(text)) or {}
    if not is_whole(positions):
        return None
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) in SCALED_BY_FACTOR:
        factor = rope.get("factor")
        original = rope.get("original_max_position_embeddings") or positions
        if is_finite(factor) and factor > 0 and is_whole(original):
            try:
                return int(original * factor)
            except OverflowError:  # a config's own absurd numbers: no window to tell
                return None
    return positions


def config_window(config_dir: str | Path) -> int | None:
    """The window ``config_dir``'s config.json covers as it is; None where it cannot be read."""
    try:
        return window(read_json(Path(config_dir) / "config.json"))
    except CheckpointError:
        return None
