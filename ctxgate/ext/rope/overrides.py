"""Config overrides for context extension: ``--rope-scaling JSON`` and ``--model-override
KEY=VALUE``, applied alike for every backend. Checked when the options are read, then against the
config (``applied``); the RoPE dictionary given is merged into the config's own, as transformers 5
drops ``rope_theta`` when a bare ``rope_scaling`` is passed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxgate.api import (
    CheckpointError,
    ConfigChanges,
    config_window,
    did_you_mean,
    is_finite,
    is_whole,
    read_json,
    rope_key,
)

from .rules import (
    MAX_POSITIONS,
    ROPE_DICTS,
    ROPE_EXAMPLE,
    VALUES,
    OverrideError,
    check_rope,
    check_setting,
    is_structural,
)

# how the messages of the backends name the two options together
FLAGS = "--rope-scaling/--model-override"
ROTARY_MIN = 4  # the fewest rotated dimensions per head: dynamic NTK divides by (dimensions - 2)
# keys a config may leave to its class's defaults but a context extension sets
EXTENSION_KEYS = frozenset(
    "rope_parameters rope_scaling rope_theta max_position_embeddings sliding_window "
    "partial_rotary_factor".split()
)


@dataclass(frozen=True)
class ConfigOverrides:
    """The top-level config keys to set, with their JSON values, in order (a later one wins)."""

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
        """The top-level keys to set on a config.json's dictionary (for transformers and vLLM)."""
        changes: dict[str, object] = dict(self.keys)
        key = rope_key(config)
        rope = dict(self.rope)
        if key == "rope_parameters" and "rope_theta" in changes:  # transformers 5 keeps it inside
            rope = {"rope_theta": changes.pop("rope_theta"), **rope}
        if rope:
            base = changes.get(key, config.get(key))
            merged = dict(base) if isinstance(base, dict) else {}
            # a config that kept the base at the top level
            if key == "rope_parameters" and "rope_theta" not in merged and "rope_theta" in config:
                merged["rope_theta"] = config["rope_theta"]
            merged.update(rope)
            changes[key] = merged
        return changes


def parse(
    rope_scaling: str | None, overrides: list[str] | tuple[str, ...] | None
) -> ConfigOverrides:
    """The two options as given; a malformed one, or a value no config could take, is an
    OverrideError (what depends on the checkpoint's config is ``applied``'s)."""
    rope: tuple[tuple[str, Any], ...] = ()
    if rope_scaling:
        try:
            given = json.loads(rope_scaling)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            raise OverrideError(
                f"--rope-scaling {rope_scaling[:80]!r} is not JSON ({_unread(exc)}): e.g. "
                f"{ROPE_EXAMPLE}"
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
                f"--model-override {item!r} is not KEY=VALUE: e.g. --model-override "
                "max_position_embeddings=32768"
            )
        try:
            keys[key] = json.loads(raw)
        except json.JSONDecodeError:
            # a plain string: --model-override attn_logit_softcapping=none stays text
            keys[key] = raw
        except (ValueError, RecursionError) as exc:
            shown = raw[:80] + "..." * (len(raw) > 80)
            raise OverrideError(
                f"--model-override {key}={shown} cannot be read ({_unread(exc)}): give a value of "
                "the config's kind"
            ) from None
        check_setting(key, keys[key])
    return ConfigOverrides(rope, tuple(keys.items()))


def _unread(exc: Exception) -> str:
    """Why json could not read a value: its own words, or the limit it met."""
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    return "nested too deeply" if isinstance(exc, RecursionError) else "a number of too many digits"


def check_keys(changes: dict[str, object], config: dict[str, object], where: str) -> None:
    """Each --model-override against the config: a key it lacks (and not in EXTENSION_KEYS) is a
    typo far more often than a new setting; a value without a rule of its own must be of the JSON
    type the config has for it."""
    known = set(config) | EXTENSION_KEYS
    for key in changes:
        if key not in known:
            raise OverrideError(
                f"--model-override {key}: {where} has no such setting{did_you_mean(key, known)}; "
                "use a key of its config.json"
            )
    for key, value in changes.items():
        current = config.get(key)
        if key in VALUES or current is None or value is None:
            continue
        kinds = [(bool,), (int, float), (str,), (list,), (dict,)]
        was = next((k for k in kinds if isinstance(current, k)), None)
        if was is not None and not (
            isinstance(value, was) and (was == (bool,)) == isinstance(value, bool)
        ):
            raise OverrideError(
                f"--model-override {key}={json.dumps(value)}: {where} has {json.dumps(current)} "
                f"there, so give a value of that kind, e.g. --model-override "
                f"{key}={json.dumps(current)}"
            )


def applied(folder: str | Path, overrides: ConfigOverrides) -> tuple[dict[str, object], int | None]:
    """The changes to make to ``folder``'s config, checked against it, and the window they give."""
    try:
        config = read_json(
            Path(folder) / "config.json", f"{_flags(overrides)} change it; restore it"
        )
    except CheckpointError as exc:
        raise OverrideError(str(exc)) from None
    check_keys(dict(overrides.keys), config, f"{folder}/config.json")
    changes = overrides.resolve(config)
    result = {**config, **changes}
    if any(key in changes for key in (*ROPE_DICTS, "partial_rotary_factor")):
        _check_rope_in(result, overrides)
    covered = config_window(result)
    if covered is not None and covered > MAX_POSITIONS:
        raise OverrideError(
            f"{_flags(overrides)} give a window of {covered:,} positions, more than "
            f"{MAX_POSITIONS:,}: give a smaller factor or max_position_embeddings"
        )
    _check_class(config, changes, overrides)  # last: the checks above say more
    return changes, covered


def config_changes(folder: str | Path, overrides: ConfigOverrides) -> ConfigChanges:
    """``applied``, as the backends take it (``hookspec.ctxgate_config_changes``): with what was
    asked, and the --model-override keys that resize the model's tensors."""
    changes, covered = applied(folder, overrides)
    resizing = [(k, v) for k, v in overrides.keys if is_structural(k)]
    given = " ".join(f"--model-override {k}={json.dumps(v)}" for k, v in resizing)
    return ConfigChanges(changes, covered, overrides.describe(), FLAGS, given)


def _check_class(
    config: dict[str, object], changes: dict[str, object], overrides: ConfigOverrides
) -> None:
    """The changed config through transformers' own class for its model_type, as a server reads the
    config.json written with them: the class's validators know each setting's type and range, and
    the settings' fit together. What they refuse with the changes and not without is the
    overrides'."""
    import copy

    try:
        import transformers
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    except ImportError:  # pragma: no cover - a backend that loads the config brings it
        return
    kind = config.get("model_type")
    if not changes or not isinstance(kind, str) or kind not in CONFIG_MAPPING:
        return
    built = CONFIG_MAPPING[kind]
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # its warnings about the config's other keys
    try:
        try:
            built.from_dict(copy.deepcopy(config))
        except Exception:  # noqa: BLE001 - the checkpoint's own config: its load says why
            return
        try:
            built.from_dict(copy.deepcopy({**config, **changes}))
            return
        except Exception as exc:  # noqa: BLE001 - whatever the class's validators raise
            problem = " ".join(str(exc).split())[:300] or type(exc).__name__
    finally:
        transformers.logging.set_verbosity(verbosity)
    given = dict(overrides.keys)
    key = next((k for k in given if f"'{k}'" in problem), None)
    named = (
        f"--model-override {key}={json.dumps(given[key])}" if key is not None else _named(overrides)
    )
    own = config.get(key) if key is not None else None
    hint = f" (the checkpoint's own is {key}={json.dumps(own)})" if own is not None else ""
    raise OverrideError(
        f"{named}: transformers' {built.__name__} refuses the config it gives ({problem}): the "
        f"likely cause is {named}, not the checkpoint; drop or correct {named}{hint}"
    )


def _named(overrides: ConfigOverrides) -> str:
    """The overrides as given on the command line."""
    rope = [f"--rope-scaling '{json.dumps(dict(overrides.rope))}'"] if overrides.rope else []
    return " ".join(rope + [f"--model-override {k}={json.dumps(v)}" for k, v in overrides.keys])


def _flags(overrides: ConfigOverrides) -> str:
    given = {"--rope-scaling": overrides.rope, "--model-override": overrides.keys}
    return "/".join(flag for flag, items in given.items() if items)


def _check_rope_in(config: dict[str, object], overrides: ConfigOverrides) -> None:
    """The RoPE dictionary the overrides leave, against the rest of the config, as transformers'
    validators and RoPE functions need them together."""
    rope = config.get(rope_key(config))
    if not isinstance(rope, dict):
        return
    flags = _flags(overrides)
    kind = rope.get("rope_type", rope.get("type", "default"))
    positions = config.get("max_position_embeddings")
    if kind == "llama3" and is_whole(positions):
        original = rope.get("original_max_position_embeddings", positions)
        factor = rope.get("factor")
        if is_whole(original) and original >= positions and is_finite(factor):
            raise OverrideError(
                f"{flags}: llama3 reads the extended window from max_position_embeddings, which "
                f"is {positions}, not above the original {original} positions: also pass "
                f"--model-override max_position_embeddings={int(original * factor)}"
            )
    # the rotated and all dimensions per head, as transformers counts them
    head = config.get("head_dim")
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    if not is_whole(head):
        head = hidden // heads if is_whole(hidden) and is_whole(heads) else None
    share = rope.get("partial_rotary_factor", config.get("partial_rotary_factor", 1.0))
    if not is_whole(head) or not is_finite(share):
        return
    rotated = int(head * share)
    if rotated < ROTARY_MIN or rotated % 2:  # RoPE turns pairs: YaRN and LongRoPE fail on odd
        fits = max(ROTARY_MIN, rotated - rotated % 2)
        raise OverrideError(
            f"{flags}: partial_rotary_factor {share} rotates {rotated} of the model's {head} "
            f"dimensions per head, which must be an even number of at least {ROTARY_MIN}: e.g. "
            f"partial_rotary_factor {min(1, fits / head):g}"
        )
    for key in ("short_factor", "long_factor"):
        factors = rope.get(key)
        if kind == "longrope" and isinstance(factors, list) and len(factors) != rotated // 2:
            raise OverrideError(
                f"{flags}: longrope {key} has {len(factors)} number(s), but the model rotates "
                f"{rotated} dimensions per head, which take {rotated // 2}: give {rotated // 2} "
                "numbers, one per frequency"
            )
