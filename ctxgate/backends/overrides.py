"""Config overrides for context extension: ``--rope-scaling JSON`` and ``--model-override KEY=VALUE``.

Teams extend a model's context by changing its RoPE settings (linear, dynamic NTK, YaRN, Llama 3 scaling; a
larger ``rope_theta`` or ``max_position_embeddings``), with no training or after a short run. The settings are
applied to the loaded config alike for every backend (HF: ``from_pretrained(config=...)``; vLLM:
``--hf-overrides``), enter the fingerprint and the cache key, and give the window lengths are checked against.

``--rope-scaling`` is merged into the config's own RoPE dictionary (``rope_parameters`` in transformers 5, or a
legacy ``rope_scaling``), never put in place of it: transformers 5 drops ``rope_theta`` when a bare
``rope_scaling`` is passed, which would evaluate another model than the one meant.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

SCALED_BY_FACTOR = ("linear", "dynamic", "yarn")  # window = original positions x factor, as transformers reads them
# per RoPE type, the keys --rope-scaling must give and those it may (transformers 5's modeling_rope_utils validators,
# which only warn about the rest); rope_type, rope_theta and partial_rotary_factor go with every type
ROPE_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "default": (frozenset(), frozenset()),
    "linear": (frozenset({"factor"}), frozenset()),
    "dynamic": (frozenset({"factor"}), frozenset({"original_max_position_embeddings"})),
    "yarn": (
        frozenset({"factor"}),
        frozenset(
            {
                "original_max_position_embeddings",
                "attention_factor",
                "beta_fast",
                "beta_slow",
                "mscale",
                "mscale_all_dim",
                "truncate",
            }
        ),
    ),
    "longrope": (
        frozenset({"short_factor", "long_factor"}),
        frozenset({"original_max_position_embeddings", "attention_factor", "factor"}),
    ),
    "llama3": (
        frozenset({"factor", "low_freq_factor", "high_freq_factor"}),
        frozenset({"original_max_position_embeddings"}),
    ),
}
ANY_ROPE_KEY = frozenset({"rope_type", "rope_theta", "partial_rotary_factor"})
ROPE_EXAMPLE = """--rope-scaling '{"rope_type": "yarn", "factor": 4.0}'"""


class OverrideError(ValueError):
    """An override that cannot be applied; the message names it and the fix."""


@dataclass(frozen=True)
class ConfigOverrides:
    """The top-level config keys to set, with their JSON values, in the order given (a later one wins)."""

    rope: tuple[tuple[str, Any], ...] = ()  # --rope-scaling, merged into the RoPE dictionary
    keys: tuple[tuple[str, Any], ...] = ()  # --model-override KEY=VALUE

    def __bool__(self) -> bool:
        return bool(self.rope or self.keys)

    def describe(self) -> dict[str, object]:
        """For the header, the report and the cache key: what was asked, as given."""
        given = {"rope_scaling": self.rope, "overrides": self.keys}
        return {name: dict(items) for name, items in given.items() if items}

    @property
    def sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.describe(), sort_keys=True).encode()).hexdigest()

    def resolve(self, config: dict[str, object]) -> dict[str, object]:
        """The top-level keys to set on ``config`` (a config.json's dictionary): each override, and the RoPE
        dictionary with ``--rope-scaling`` merged in. The same dictionary goes to transformers and to vLLM."""
        changes: dict[str, object] = dict(self.keys)
        key = rope_key(config)
        rope = dict(self.rope)
        if key == "rope_parameters" and "rope_theta" in changes:
            rope = {"rope_theta": changes.pop("rope_theta"), **rope}  # transformers 5 keeps the base inside
        if rope:
            base = changes.get(key, config.get(key))
            merged = dict(base) if isinstance(base, dict) else {}
            if key == "rope_parameters" and "rope_theta" not in merged and "rope_theta" in config:
                merged["rope_theta"] = config["rope_theta"]  # a config that kept it at the top level
            merged.update(rope)
            changes[key] = merged
        return changes


def rope_key(config: dict[str, object]) -> str:
    """Where the config keeps its RoPE settings: transformers 5's ``rope_parameters``, unless it has only the
    legacy ``rope_scaling``."""
    if "rope_parameters" not in config and "rope_scaling" in config:
        return "rope_scaling"
    return "rope_parameters"


def parse(rope_scaling: str | None, overrides: list[str] | tuple[str, ...] | None) -> ConfigOverrides:
    """The two options as given on the command line; a malformed one is an OverrideError naming it."""
    rope: tuple[tuple[str, Any], ...] = ()
    if rope_scaling:
        try:
            given = json.loads(rope_scaling)
        except json.JSONDecodeError as exc:
            raise OverrideError(
                f"--rope-scaling {rope_scaling!r} is not JSON ({exc.msg}): e.g. {ROPE_EXAMPLE}"
            ) from None
        if not isinstance(given, dict) or not given:
            raise OverrideError(
                f"--rope-scaling {rope_scaling!r} must be a JSON object: e.g. "
                """--rope-scaling '{"rope_type": "linear", "factor": 2.0}'"""
            )
        if "type" in given and "rope_type" not in given:
            given["rope_type"] = given.pop("type")  # the legacy spelling
        check_rope(given)
        rope = tuple(given.items())
    keys: dict[str, object] = {}
    for item in overrides or ():
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or not key.isidentifier():
            raise OverrideError(
                f"--model-override {item!r} is not KEY=VALUE: e.g. --model-override max_position_embeddings=32768"
            )
        try:
            keys[key] = json.loads(raw)
        except json.JSONDecodeError:
            keys[key] = raw  # a plain string: --model-override attn_logit_softcapping=none stays text
    return ConfigOverrides(rope, tuple(keys.items()))


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_rope(given: dict[str, object]) -> None:
    """A --rope-scaling object transformers would take: a known type, its required keys, no key it does not read,
    and factors that extend (numbers of at least 1)."""
    kind = given.get("rope_type", "default")
    if kind not in ROPE_KEYS:
        raise OverrideError(
            f"--rope-scaling rope_type {kind!r} is not one of {', '.join(sorted(ROPE_KEYS))}: e.g. {ROPE_EXAMPLE}"
        )
    required, optional = ROPE_KEYS[kind]
    missing = sorted(required - set(given))
    if missing:
        raise OverrideError(f"--rope-scaling {kind} needs {', '.join(missing)}: e.g. {ROPE_EXAMPLE}")
    for key in given:
        if key not in required | optional | ANY_ROPE_KEY:
            near = difflib.get_close_matches(key, sorted(required | optional | ANY_ROPE_KEY), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise OverrideError(f"--rope-scaling {kind} does not read {key!r}{hint}: e.g. {ROPE_EXAMPLE}")
    for key in ("factor", "low_freq_factor", "high_freq_factor"):
        if key not in given:
            continue
        value = given[key]
        if not _number(value) or value < (1 if key == "factor" else 0):
            bound = "a number of at least 1 (the window grows by it)" if key == "factor" else "a number of 0 or more"
            raise OverrideError(f"--rope-scaling {key} {value!r} must be {bound}: e.g. {ROPE_EXAMPLE}")
    for key in ("rope_theta", "original_max_position_embeddings"):
        if key in given:
            _check_value(key, given[key], "--rope-scaling")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


# settings whose values a context extension sets: what each must be, checked before any model loads
VALUES: dict[str, tuple[Callable[[Any], bool], str, str]] = {  # key: (rule, what it must be, a value that works)
    "rope_theta": (lambda v: _number(v) and v > 0, "a number above 0", "500000"),
    "max_position_embeddings": (_whole, "a whole number above 0", "32768"),
    "original_max_position_embeddings": (_whole, "a whole number above 0", "8192"),
    "sliding_window": (lambda v: v is None or _whole(v), "a whole number above 0, or null", "null"),
    "partial_rotary_factor": (lambda v: _number(v) and 0 < v <= 1, "a number above 0 and at most 1", "0.5"),
}


def _check_value(key: str, value: Any, flag: str) -> None:
    if key in VALUES:
        ok, what, works = VALUES[key]
        if not ok(value):
            example = ROPE_EXAMPLE if flag == "--rope-scaling" else f"--model-override {key}={works}"
            raise OverrideError(f"{flag} {key}={json.dumps(value)} must be {what}: e.g. {example}")


def check_values(changes: dict[str, object], config: dict[str, object], where: str) -> None:
    """Each --model-override value of the kind its setting takes: the extension settings by their rule, any other
    of the JSON type ``config`` has for it (a number stays a number, text text)."""
    for key, value in changes.items():
        _check_value(key, value, "--model-override")
        current = config.get(key)
        if key in VALUES or current is None or value is None:
            continue
        kinds = [(bool,), (int, float), (str,), (list,), (dict,)]
        was = next((k for k in kinds if isinstance(current, k)), None)
        if was is not None and not (isinstance(value, was) and (was == (bool,)) == isinstance(value, bool)):
            raise OverrideError(
                f"--model-override {key}={json.dumps(value)}: {where} has {json.dumps(current)} there, so give a "
                f"value of that kind, e.g. --model-override {key}={json.dumps(current)}"
            )


def check_keys(changes: dict[str, object], known: set[str], where: str) -> None:
    """A key the config does not have is a typo far more often than a new setting: refused, with the nearest
    known key."""
    for key in changes:
        if key not in known:
            near = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise OverrideError(
                f"--model-override {key}: {where} has no such setting{hint}; use a key of its config.json"
            )


def window(config: dict[str, object]) -> int | None:
    """The positions a config covers, as transformers applies its RoPE settings: linear, dynamic and YaRN scale
    the original positions (``original_max_position_embeddings``, else ``max_position_embeddings``) by the
    factor; Llama 3 and LongRoPE configs state the extended window in ``max_position_embeddings`` already."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    assert isinstance(text, dict)
    positions = text.get("max_position_embeddings")
    rope = text.get(rope_key(text)) or {}
    if not isinstance(positions, int):
        return None
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) in SCALED_BY_FACTOR:
        factor = rope.get("factor")
        if isinstance(factor, (int, float)) and factor > 0:
            original = rope.get("original_max_position_embeddings") or positions
            return int(original * factor)
    return positions


def read_config(folder: str | Path) -> dict[str, object]:
    try:
        found = json.loads((Path(folder) / "config.json").read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise OverrideError(f"the overrides need {folder}/config.json, which cannot be read ({exc})") from None
    if not isinstance(found, dict):
        raise OverrideError(f"{folder}/config.json is not a JSON object")
    return found


# keys a config may leave to its class's defaults but a context extension sets
EXTENSION_KEYS = frozenset(
    {
        "rope_parameters",
        "rope_scaling",
        "rope_theta",
        "max_position_embeddings",
        "sliding_window",
        "partial_rotary_factor",
    }
)


def applied(folder: str | Path, overrides: ConfigOverrides) -> tuple[dict[str, object], int | None]:
    """The changes to make to ``folder``'s config, and the window the result covers. A ``--model-override`` key
    that config.json does not have (nor is one of EXTENSION_KEYS) is refused as a likely typo."""
    config = read_config(folder)
    check_keys(dict(overrides.keys), set(config) | EXTENSION_KEYS, f"{folder}/config.json")
    check_values(dict(overrides.keys), config, f"{folder}/config.json")
    changes = overrides.resolve(config)
    return changes, window({**config, **changes})
