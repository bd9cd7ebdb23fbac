"""What a config override may say: the RoPE dictionaries of each rope_type (``--rope-scaling``)
and the values a ``--model-override KEY=VALUE`` may take, each refusal naming the flag and a value
that works. ``overrides.py`` applies them to a config."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxgate.api import CtxgateError, did_you_mean, is_finite, is_number, is_whole

YARN_OPTIONAL = (
    "original_max_position_embeddings attention_factor beta_fast beta_slow mscale mscale_all_dim "
    "truncate"
)
# per RoPE type, the keys --rope-scaling must give and those it may (transformers 5's
# modeling_rope_utils validators, which only warn about the rest); rope_type, rope_theta and
# partial_rotary_factor go with every type
ROPE_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "default": (frozenset(), frozenset()),
    "linear": (frozenset({"factor"}), frozenset()),
    # transformers 5 reads max_position_embeddings, not original
    "dynamic": (frozenset({"factor"}), frozenset()),
    "yarn": (frozenset({"factor"}), frozenset(YARN_OPTIONAL.split())),
    "longrope": (  # transformers asks for the factor when it is left to be derived
        frozenset({"short_factor", "long_factor", "factor"}),
        frozenset({"original_max_position_embeddings", "attention_factor"}),
    ),
    "llama3": (
        frozenset({"factor", "low_freq_factor", "high_freq_factor"}),
        frozenset({"original_max_position_embeddings"}),
    ),
}
ANY_ROPE_KEY = frozenset({"rope_type", "rope_theta", "partial_rotary_factor"})
ROPE_EXAMPLE = """--rope-scaling '{"rope_type": "yarn", "factor": 4.0}'"""
ROPE_DICTS = ("rope_parameters", "rope_scaling")  # where a config keeps its RoPE settings
# more positions than any model covers, and the most 32-bit position arithmetic holds (vLLM's max
# model length): a bound on every window, size and count, so no product of them overflows
MAX_POSITIONS = 2**31 - 1
# the range of the RoPE knobs below (YaRN's rotation counts, LongRoPE's factors; the most for the
# scales): far wider than every published recipe, and short of where transformers' YaRN and LongRoPE
# arithmetic overflows
MOST_KNOB = 10_000
LEAST_KNOB = 0.001


class OverrideError(CtxgateError, ValueError):
    """An override that cannot be applied; the message names it and the fix."""


@dataclass(frozen=True)
class Rule:
    """What a setting's value must be (``what``, for the refusal); ``works``: a value that works
    (None: none fits every model); a number must be at most ``most``, more than ``beyond``."""

    ok: Callable[[Any], bool]
    what: str
    works: str | None
    most: int | None = None
    beyond: float | None = None


def _at_least(low: float) -> Callable[[Any], bool]:
    return lambda v: is_number(v) and v >= low


def _above(low: float) -> Callable[[Any], bool]:
    return lambda v: is_number(v) and low < v < math.inf


def _knobs(v: Any) -> bool:
    return (
        isinstance(v, list)
        and bool(v)
        and all(is_number(x) and LEAST_KNOB <= x <= MOST_KNOB for x in v)
    )


# top-level config settings that a context extension sets (also inside --rope-scaling, as
# transformers 5 keeps them)
VALUES: dict[str, Rule] = {
    # the base of the rotary frequencies: at 1 or below they no longer fall with the dimension (YaRN
    # divides by its log; far below 1, float32 makes them infinite)
    "rope_theta": Rule(_above(0), "a number above 0", "500000", beyond=1),
    # windows: LongRoPE divides by the log of the original one
    "max_position_embeddings": Rule(
        is_whole, "a whole number above 0", "32768", MAX_POSITIONS, beyond=1
    ),
    "original_max_position_embeddings": Rule(
        is_whole, "a whole number above 0", "8192", MAX_POSITIONS, beyond=1
    ),
    "sliding_window": Rule(
        lambda v: v is None or is_whole(v), "a whole number above 0, or null", "null", MAX_POSITIONS
    ),
    "partial_rotary_factor": Rule(
        lambda v: is_number(v) and 0 < v <= 1, "a number above 0 and at most 1", "0.5"
    ),
}
# a size or count of the model's tensors (vocab_size, head_dim...): any other number, or null, fails
# to load with a message about a tensor; text, a list... is for overrides.check_keys
STRUCTURAL = Rule(
    lambda v: is_whole(v) or not (is_number(v) or v is None),
    "a whole number above 0 (a size or count in the model)",
    None,
    MAX_POSITIONS,
)
# what a norm adds to the variance before dividing by its root (rms_norm_eps, layer_norm_epsilon)
EPSILON = Rule(_above(0), "a number above 0 (a norm divides by it)", "1e-06", MOST_KNOB)
# settings that say which model the weights are, not how it runs: an override of them is refused
FIXED = {
    "model_type": "picks the model class that the weights were saved for",
    "architectures": "names the model class that the weights were saved for",
    "auto_map": "names the checkpoint's own model code, which --trust-remote-code decides on",
}
AT_LEAST_KNOB = f"a number of at least {LEAST_KNOB}"
KNOB_LIST = f"a list of numbers from {LEAST_KNOB} to {MOST_KNOB}"
# the other numbers of the RoPE types' dictionaries, as transformers 5's validators and RoPE
# functions read them; works: the key's value in the refusal's example
ROPE_VALUES: dict[str, Rule] = {
    "factor": Rule(
        _at_least(1), "a number of at least 1 (the window grows by it)", "4.0", MAX_POSITIONS
    ),
    "attention_factor": Rule(
        _above(0), "a number above 0 (it scales the attention logits)", "1.0", MOST_KNOB
    ),
    "beta_fast": Rule(_at_least(LEAST_KNOB), f"{AT_LEAST_KNOB} (YaRN's is 32)", "32", MOST_KNOB),
    "beta_slow": Rule(_at_least(LEAST_KNOB), f"{AT_LEAST_KNOB} (YaRN's is 1)", "1", MOST_KNOB),
    "mscale": Rule(_at_least(0), "a number of 0 or more", "1.0", MOST_KNOB),
    "mscale_all_dim": Rule(_at_least(0), "a number of 0 or more", "1.0", MOST_KNOB),
    "truncate": Rule(lambda v: isinstance(v, bool), "true or false", "true"),
    "low_freq_factor": Rule(_above(0), "a number above 0 (Llama 3.1's is 1.0)", "1.0", MOST_KNOB),
    "high_freq_factor": Rule(_above(0), "a number above 0 (Llama 3.1's is 4.0)", "4.0", MOST_KNOB),
    "short_factor": Rule(_knobs, KNOB_LIST, "[1.0, ...]"),
    "long_factor": Rule(_knobs, KNOB_LIST, "[4.0, ...]"),
}


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else json.dumps(value)


def _check(named: str, value: Any, rule: Rule, fix: str) -> None:
    if is_number(value) and not is_finite(value):
        raise OverrideError(f"{named} must be {rule.what}, and finite: {fix}")
    if not rule.ok(value):
        raise OverrideError(f"{named} must be {rule.what}: {fix}")
    if rule.beyond is not None and is_number(value) and value <= rule.beyond:
        raise OverrideError(f"{named} must be {rule.what}, and more than {rule.beyond:g}: {fix}")
    if rule.most is not None and is_number(value) and value > rule.most:
        raise OverrideError(f"{named} must be {rule.what}, at most {rule.most:,}: {fix}")


def _rope_example(kind: str, key: str) -> str:
    """--rope-scaling with ``key`` set to a value that works, in a ``kind`` (or YaRN) dictionary."""
    kind = "yarn" if key in ROPE_KEYS["yarn"][0] | ROPE_KEYS["yarn"][1] else kind
    names = ["factor", *sorted(ROPE_KEYS[kind][0] - {"factor"}), key]
    members = [f'"rope_type": "{kind}"'] + [
        f'"{name}": {ROPE_VALUES[name].works}'
        for name in dict.fromkeys(names)
        if name in ROPE_KEYS[kind][0] | {key}
    ]
    return f"--rope-scaling '{{{', '.join(members)}}}'"


def check_rope(given: dict[str, object], flag: str = "--rope-scaling") -> None:
    """A RoPE dictionary transformers would take: a known type, its required keys, no key it does
    not read, and each value in the range transformers' validators and RoPE functions need."""
    kind = given.get("rope_type", given.get("type", "default"))
    if not isinstance(kind, str) or kind not in ROPE_KEYS:
        raise OverrideError(
            f"{flag} rope_type {kind!r} is not one of {', '.join(sorted(ROPE_KEYS))}: e.g. "
            f"{ROPE_EXAMPLE}"
        )
    required, optional = ROPE_KEYS[kind]
    missing = sorted(required - set(given))
    if missing:
        raise OverrideError(f"{flag} {kind} needs {', '.join(missing)}: e.g. {ROPE_EXAMPLE}")
    known = required | optional | ANY_ROPE_KEY | ({"type"} if "rope_type" not in given else set())
    for key in given:
        if key not in known:
            raise OverrideError(
                f"{flag} {kind} does not read {key!r}{did_you_mean(key, known)}: e.g. "
                f"{ROPE_EXAMPLE}"
            )
    for key, value in given.items():
        if key in ROPE_VALUES:
            _check(
                f"{flag} {key} {_shown(value)}",
                value,
                ROPE_VALUES[key],
                f"e.g. {_rope_example(kind, key)}",
            )
        elif key in VALUES:
            _check(f"{flag} {key}={json.dumps(value)}", value, VALUES[key], f"e.g. {ROPE_EXAMPLE}")
    _check_rope_together(given, kind, flag)


def _check_rope_together(given: dict[str, object], kind: str, flag: str) -> None:
    """What transformers' validators require of two keys together, or of a number's type."""
    if kind == "yarn" and isinstance(given.get("attention_factor"), int):
        value = given["attention_factor"]
        raise OverrideError(
            f"{flag} attention_factor {value} must be written with a decimal point for yarn "
            "(transformers reads only a float there): e.g. "
            f"{_rope_example(kind, 'attention_factor')}"
        )
    fast, slow = given.get("beta_fast") or 32, given.get("beta_slow") or 1  # transformers' defaults
    if kind == "yarn" and is_number(fast) and is_number(slow) and fast < slow:
        raise OverrideError(
            f"{flag} beta_fast {fast} is below beta_slow {slow} (YaRN interpolates between them, "
            f"fast above slow; the defaults are 32 and 1): e.g. {_rope_example(kind, 'beta_fast')}"
        )
    low, high = given.get("low_freq_factor"), given.get("high_freq_factor")
    if kind == "llama3" and is_number(low) and is_number(high) and high <= low:
        raise OverrideError(
            f"{flag} high_freq_factor {high} must be above low_freq_factor {low} (Llama 3.1's are "
            f"4.0 and 1.0): e.g. {_rope_example(kind, 'high_freq_factor')}"
        )


def is_structural(key: str) -> bool:
    """A size or count of the model's tensors, by the names configs give them."""
    return key.startswith("num_") or key.endswith(("_size", "_heads", "_layers", "head_dim"))


def check_setting(key: str, value: Any) -> None:
    """A --model-override value no config could take (a RoPE dictionary as --rope-scaling's)."""
    # a per-layer-type dictionary is left to transformers
    flat = isinstance(value, dict) and not any(isinstance(v, dict) for v in value.values())
    if key in ROPE_DICTS and flat:
        check_rope(value, f"--model-override {key}")
    if key in FIXED:
        raise OverrideError(
            f"--model-override {key}={json.dumps(value)}: {key} {FIXED[key]}, which an override "
            f"cannot change; drop --model-override {key}=... (for another model, give its "
            "checkpoint)"
        )
    rule = VALUES.get(key) or (STRUCTURAL if is_structural(key) else None)
    rule = rule or (EPSILON if key.endswith(("_eps", "_epsilon")) else None)
    if rule is None:
        return
    fix = (
        f"e.g. --model-override {key}={rule.works}"
        if rule.works is not None
        else f"correct it, or drop --model-override {key}=... to keep the checkpoint's own"
    )
    _check(f"--model-override {key}={json.dumps(value)}", value, rule, fix)
