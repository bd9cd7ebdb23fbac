"""Config overrides that no model can load with are refused when the options are read, in one line
naming the key, the value and the fix: alike under pytest and ``ctxgate bisect`` (the shared resolve
step, ``gate/plan.make_plan``), before anything loads. What transformers' RoPE validators and
functions need of a RoPE dictionary is checked as a property against transformers itself; a load
that fails because of an override says so (an adapter whose config disagrees with its own weights:
tests/ext/checkpoints/test_adapters.py)."""

from __future__ import annotations

import json
import logging
import math
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ctxgate.backends.model_config import ConfigChanges
from ctxgate.ext.rope.overrides import applied, config_changes, parse
from ctxgate.ext.rope.rules import ANY_ROPE_KEY, ROPE_KEYS, OverrideError
from tests.conftest import TINY, call_ctxgate

CASES = ("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache")
BISECT = ("-k", "niah_single_1", "--lengths", "256", "--samples", "2", "--no-cache")

# each refused before anything loads: (flag, value, what the one line names)
REFUSED = [
    pytest.param(
        "--rope-scaling",
        '{"rope_type":"linear","factor":Infinity}',
        "--rope-scaling factor Infinity must be a number of at least 1 (the window grows by it), "
        "and finite: e.g. ",
        id="factor-infinity",
    ),
    pytest.param(
        "--rope-scaling",
        '{"rope_type":"linear","factor":NaN}',
        "--rope-scaling factor NaN must be a number of at least 1 (the window grows by it), and "
        "finite: e.g. ",
        id="factor-nan",
    ),
    pytest.param(
        "--rope-scaling",
        '{"rope_type":"yarn","factor":4.0,"beta_fast":"x"}',
        "--rope-scaling beta_fast 'x' must be a number of at least 0.001 (YaRN's is 32): "
        "e.g. --rope-scaling "
        """'{"rope_type": "yarn", "factor": 4.0, "beta_fast": 32}'""",
        id="yarn-beta-text",
    ),
    pytest.param(
        "--model-override",
        "rope_theta=Infinity",
        "--model-override rope_theta=Infinity must be a number above 0, and finite: e.g. "
        "--model-override "
        "rope_theta=500000",
        id="theta-infinity",
    ),
    pytest.param(
        "--model-override",
        "rope_theta=0",
        "--model-override rope_theta=0 must be a number above 0: e.g. --model-override "
        "rope_theta=500000",
        id="theta-zero",
    ),
    pytest.param(
        "--model-override",
        "vocab_size=-1",
        "--model-override vocab_size=-1 must be a whole number above 0 (a size or count in the "
        "model): correct it, "
        "or drop --model-override vocab_size=... to keep the checkpoint's own",
        id="vocab-negative",
    ),
]


def _refused(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A bisect refused before anything loads: its CLI in this process."""
    return call_ctxgate(*args, cwd=cwd)


@pytest.mark.parametrize(("flag", "value", "line"), REFUSED)
def test_pytest_refuses_it_in_one_line_before_loading(real_suite, flag, value, line):
    result = real_suite(*CASES, flag, value)
    err = result.stderr.str()
    assert result.ret == 4, result.stdout.str()[-2000:] + err
    assert line in err and "Traceback" not in err + result.stdout.str()
    assert [row for row in err.splitlines() if row.strip()] == [
        f"ERROR: {err.split('ERROR: ', 1)[1].strip()}"
    ]


@pytest.mark.parametrize(("flag", "value", "line"), REFUSED)
def test_bisect_refuses_it_in_the_same_line_before_loading(
    checkpoint_sequence, tmp_path, flag, value, line
):
    result = _refused("bisect", str(checkpoint_sequence), *BISECT, flag, value, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("ctxgate bisect: ") and result.stderr.count("\n") == 1
    assert line in result.stderr
    assert "evaluating" not in result.stdout  # nothing loaded


def test_bisect_checks_a_key_against_the_good_checkpoints_config_before_loading(
    checkpoint_sequence, tmp_path
):
    result = _refused(
        "bisect",
        str(checkpoint_sequence),
        *BISECT,
        "--model-override",
        "max_position_embedding=16384",
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "config.json has no such setting (did you mean max_position_embeddings?)" in result.stderr
    )
    assert result.stderr.count("\n") == 1 and "evaluating" not in result.stdout


def test_an_override_that_breaks_the_load_is_named_as_the_cause_not_the_checkpoint(real_suite):
    result = real_suite(*CASES, "--model-override", "num_attention_heads=3")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "Traceback" not in out
    assert "Restore the checkpoint's own config.json" not in out
    assert "the likely cause is --model-override num_attention_heads=3" in out
    assert "drop or correct --model-override num_attention_heads=3" in out


def test_bisect_names_the_override_when_the_load_fails(checkpoint_sequence, tmp_path):
    result = call_ctxgate(
        "bisect",
        str(checkpoint_sequence),
        *BISECT,
        "--model-override",
        "num_attention_heads=3",
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert "the likely cause is --model-override num_attention_heads=3" in result.stderr
    assert "Restore the checkpoint's own config.json" not in result.stderr


@pytest.mark.parametrize(
    ("rope", "items", "message"),
    [
        (
            '{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": '
            "4.0}",
            None,
            r"llama3 reads the extended window from max_position_embeddings, which is 8192, not "
            r"above the original "
            r"8192 positions: also pass --model-override max_position_embeddings=65536",
        ),
        (
            '{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": '
            "1.0}",
            ["max_position_embeddings=65536"],
            r"high_freq_factor 1.0 must be above low_freq_factor 4.0",
        ),
        (
            '{"rope_type": "longrope", "factor": 4.0, "short_factor": [1.0], "long_factor": [4.0]}',
            None,
            r"longrope short_factor has 1 number\(s\), but the model rotates 32 dimensions per "
            r"head, which take 16: "
            r"give 16 numbers",
        ),
        (
            '{"rope_type": "yarn", "factor": 4.0, "attention_factor": 1}',
            None,
            r"attention_factor 1 must be written ",
        ),
        (
            '{"rope_type": "yarn", "factor": 4.0, "beta_fast": 1, "beta_slow": 2}',
            None,
            r"beta_fast 1 is below beta_slow 2",
        ),
        (
            '{"rope_type": "yarn", "factor": 4.0, "rope_theta": 1}',
            None,
            r"rope_theta=1 must be a number above 0, and more than 1",
        ),
        (
            '{"rope_type": "linear", "factor": 1e300}',
            None,
            r"factor 1e\+300 must be .*, at most 2,147,483,647",
        ),
        (
            '{"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4096}',
            None,
            r"does not read",
        ),
        (
            '{"rope_type": "linear", "factor": 2.0, "partial_rotary_factor": 0.84375}',
            None,
            r"rotates 27 of the model's 32 dimensions per head, which must be an even number of "
            r"at least 4: e\.g\. "
            r"partial_rotary_factor 0\.8125",
        ),
        (
            None,
            ["vocab_size=null"],
            r"vocab_size=null must be a whole number above 0 \(a size or count in the model\)",
        ),
        (
            None,
            ["num_attention_heads=2.5"],
            r"num_attention_heads=2\.5 must be a whole number above 0",
        ),
        (
            None,
            ["max_position_embeddings=1"],
            r"max_position_embeddings=1 must be a whole number above 0, and more than 1",
        ),
        (
            None,
            ['rope_parameters={"rope_type": "linear", "factor": NaN}'],
            r"--model-override rope_parameters factor NaN",
        ),
    ],
)
def test_each_rule_is_one_line_naming_the_setting_and_the_fix(rope, items, message):
    with pytest.raises(OverrideError, match=message) as refused:
        applied(TINY, parse(rope, items))
    assert "\n" not in str(refused.value)


# --- the RoPE dictionary, against transformers' own reading
# ----------------------------------------------------

ROPE_NAMES = sorted(ROPE_KEYS)
ROPE_KEY_NAMES = sorted(
    {k for required, optional in ROPE_KEYS.values() for k in required | optional} | ANY_ROPE_KEY
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=2)
    ),
    max_leaves=6,
)
NUMBERS = (
    st.integers(-3, 70_000) | st.floats(-2.0, 70.0) | st.sampled_from([0, 1, 1.0, 1e-300, 1e300])
)
# values near the ones each key takes, so that many dictionaries are accepted and reach transformers
PLAUSIBLE = {
    "rope_type": st.sampled_from(ROPE_NAMES),
    "factor": st.floats(1.0, 64.0) | st.integers(1, 64),
    "rope_theta": st.floats(0.5, 1e7) | st.sampled_from([10000.0, 500000, 1]),
    "partial_rotary_factor": st.floats(0.01, 1.0),
    "original_max_position_embeddings": st.integers(1, 16384),
    "attention_factor": st.floats(0.001, 4.0),
    "beta_fast": st.floats(0.001, 64.0),
    "beta_slow": st.floats(0.001, 4.0),
    "mscale": st.floats(0.0, 2.0),
    "mscale_all_dim": st.floats(0.0, 2.0),
    "truncate": st.booleans(),
    "low_freq_factor": st.floats(0.01, 4.0),
    "high_freq_factor": st.floats(0.5, 8.0),
    "short_factor": st.lists(st.floats(0.5, 4.0), min_size=16, max_size=16),
    "long_factor": st.lists(st.floats(1.0, 64.0), min_size=15, max_size=16),
}


def _value(key: str, noise: bool) -> st.SearchStrategy[object]:
    plausible = PLAUSIBLE.get(key, JSON)
    if not noise:
        return plausible
    return st.integers(0, 4).flatmap(lambda n: plausible if n else st.one_of(JSON, NUMBERS))


@st.composite
def rope_dicts(draw: st.DrawFn, noise: bool) -> dict[str, object]:
    """A RoPE type's dictionary with its required keys and some of the others it reads, values near
    the ones each takes; with ``noise``, now and then any JSON value, and any key."""
    kind = draw(st.sampled_from(ROPE_NAMES))
    required, optional = ROPE_KEYS[kind]
    found: dict[str, object] = {"rope_type": kind}
    keys = sorted(required) + draw(
        st.lists(st.sampled_from(sorted(optional | ANY_ROPE_KEY - {"rope_type"})))
    )
    if noise:
        keys += draw(st.lists(st.sampled_from(ROPE_KEY_NAMES) | st.text(max_size=6), max_size=1))
    for key in keys:
        found[key] = draw(_value(key, noise))
    return found


@pytest.fixture(scope="module")
def rope_warnings() -> Iterator[list[str]]:
    """What transformers' RoPE validators say (they log a warning and go on where a value is of the
    wrong kind)."""
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    logger, handler = logging.getLogger("transformers.modeling_rope_utils"), Keep(logging.WARNING)
    logger.addHandler(handler)
    yield said
    logger.removeHandler(handler)


def _transformers_takes(changes: ConfigChanges, said: list[str]) -> None:
    """transformers builds the tiny model's config with the changes (its validators silent), reads
    each back as given, and its RoPE function gives finite frequencies and attention scale."""
    import torch
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    from ctxgate.backends.hf import check_applied

    said.clear()
    config = transformers.AutoConfig.from_pretrained(TINY, **changes.changes)
    # a YaRN factor other than max/original positions is used as given, which transformers notes
    # once
    assert [s for s in said if "implicitly set by other parameters" not in s] == []
    check_applied(config, changes, "tiny")
    kind = config.rope_parameters["rope_type"]
    for seq_len in (None, 4 * config.max_position_embeddings):
        if kind == "default":
            frequencies, scale = LlamaRotaryEmbedding.compute_default_rope_parameters(config)
        else:
            frequencies, scale = ROPE_INIT_FUNCTIONS[kind](config, "cpu", seq_len=seq_len)
        assert (
            bool(torch.isfinite(frequencies).all())
            and frequencies.numel() > 0
            and math.isfinite(scale)
        )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        rope_dicts(noise=False),
        rope_dicts(noise=True),
        st.dictionaries(st.sampled_from(ROPE_KEY_NAMES) | st.text(max_size=6), JSON),
    )
)
def test_a_rope_dictionary_is_refused_in_one_line_or_taken_by_transformers(rope_warnings, rope):
    """Any JSON value in any key: either refused in one line that names the fix, or transformers
    takes it."""
    try:
        changes = config_changes(TINY, parse(json.dumps(rope), None))
    except OverrideError as exc:
        message = str(exc)
        assert "\n" not in message and re.search(r"e\.g\. |give |pass |drop ", message), message
        event("refused")
        return
    event(f"taken: {rope.get('rope_type', 'default')}")
    assert changes.window is not None and 0 < changes.window <= 2**31 - 1
    _transformers_takes(changes, rope_warnings)
