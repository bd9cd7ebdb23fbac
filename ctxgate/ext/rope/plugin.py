"""``--rope-scaling`` and ``--model-override``: read once into the model's spec (a malformed one
refused there), checked against the config they change before anything loads, and given to the
spine as that config's changes and the window they give, what they add to the checkpoint's
fingerprint and the run's record, and the header's line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ctxgate.api import Get, Option, OptionGroup, hookimpl

if TYPE_CHECKING:
    from ctxgate.api import ConfigChanges, ModelSpec, Plan

    from .overrides import ConfigOverrides

NAME = "rope"
ROPE_SCALING = Option(
    "--rope-scaling",
    "RoPE settings merged into the checkpoint's own for context extension, e.g. "
    """'{"rope_type": "yarn", "factor": 4.0}'; the window they give is the length limit""",
    metavar="JSON",
)
MODEL_OVERRIDE = Option(
    "--model-override",
    "set a config.json key before loading (VALUE is JSON, else text; repeatable), e.g. "
    "rope_theta=1000000",
    action="append",
    metavar="KEY=VALUE",
)


def _section(spec: ModelSpec) -> ConfigOverrides | None:
    found: ConfigOverrides | None = spec.extras.get(NAME)
    return found


@hookimpl
def ctxgate_option_groups() -> list[OptionGroup]:
    return [
        OptionGroup(
            "ctxgate-rope",
            "ctxgate context extension: the model's config overridden",
            (ROPE_SCALING, MODEL_OVERRIDE),
            evaluates=True,
        )
    ]


@hookimpl
def ctxgate_model_section(get: Get) -> tuple[str, ConfigOverrides] | None:
    """The two options as given; a malformed one is refused here, before --model is located."""
    from .overrides import parse

    rope_scaling = ROPE_SCALING.read(get(ROPE_SCALING.dest))
    overrides = parse(rope_scaling, MODEL_OVERRIDE.read(get(MODEL_OVERRIDE.dest)))
    return (NAME, overrides) if overrides else None


@hookimpl
def ctxgate_config_changes(spec: ModelSpec, config_dir: Path) -> ConfigChanges | None:
    overrides = _section(spec)
    if overrides is None:
        return None
    from .overrides import config_changes

    return config_changes(config_dir, overrides)


@hookimpl
def ctxgate_model_changes(spec: ModelSpec) -> dict[str, Any]:
    """Two RoPE settings are two models: another fingerprint, another cache namespace."""
    overrides = _section(spec)
    return overrides.describe() if overrides else {}


@hookimpl
def ctxgate_plan_lines(plan: Plan) -> list[str]:
    overrides = _section(plan.model)
    if overrides is None:
        return []
    return [f"ctxgate model config overrides: {json.dumps(overrides.describe())}"]
