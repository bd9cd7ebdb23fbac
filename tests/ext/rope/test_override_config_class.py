"""Config overrides transformers' own config class refuses, named when the options are read or
before anything loads: each refusal one line naming the flag, what is wrong and the fix."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxgate.ext.rope.overrides import applied, parse
from ctxgate.ext.rope.rules import OverrideError
from tests.conftest import TINY

CASES = ("-k", "vt", "--lengths", "1k", "--samples", "1", "--no-cache")
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@pytest.mark.parametrize(
    ("item", "said"),
    [
        (
            "model_type=bogus",
            '--model-override model_type="bogus": model_type picks the model class that the '
            "weights were saved for, which an override cannot change; drop --model-override "
            "model_type=... (for another model, give its checkpoint)",
        ),
        ("architectures=[]", "--model-override architectures=[]: architectures names the model"),
        (
            "rms_norm_eps=-1",
            "--model-override rms_norm_eps=-1 must be a number above 0 (a norm divides by it): "
            "e.g. --model-override rms_norm_eps=1e-06",
        ),
        ("rms_norm_eps=small", '--model-override rms_norm_eps="small" must be a number above 0'),
        ("x=" + "[" * 100_000, "--model-override x=[[[[["),
        ("x=" + "9" * 5000, "(a number of too many digits)"),
    ],
    ids=["model-type", "architectures", "eps-negative", "eps-text", "nested", "digits"],
)
def test_an_override_no_config_takes_is_named_when_read(item, said):
    with pytest.raises(OverrideError) as refused:
        parse(None, [item])
    assert said in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("item", "said"),
    [
        (
            "rms_norm_eps=1",
            "--model-override rms_norm_eps=1: transformers' LlamaConfig refuses the config it "
            "gives (Validation error for field 'rms_norm_eps': TypeError: Field 'rms_norm_eps' "
            "expected float, got int (value: 1)): the likely cause is --model-override "
            "rms_norm_eps=1, not the checkpoint; drop or correct --model-override rms_norm_eps=1 "
            "(the checkpoint's own is rms_norm_eps=1e-06)",
        ),
        ("initializer_range=2.0", "the likely cause is --model-override initializer_range=2.0"),
        ("hidden_act=3", 'config.json has "silu" there, so give a value of that kind'),
    ],
)
def test_an_override_of_the_wrong_kind_is_named_as_the_cause_before_loading(item, said):
    with pytest.raises(OverrideError) as refused:
        applied(TINY, parse(None, [item]))
    assert said in str(refused.value) and "\n" not in str(refused.value), str(refused.value)


def test_pytest_names_an_override_of_the_wrong_kind_in_one_line(real_suite):
    result = real_suite(*CASES, "--model-override", "rms_norm_eps=1")
    err = result.stderr.str()
    assert result.ret == 4 and "Traceback" not in err + result.stdout.str()
    assert [row for row in err.splitlines() if row.strip()] == [
        f"ERROR: {err.split('ERROR: ', 1)[1].strip()}"
    ]
    assert "the likely cause is --model-override rms_norm_eps=1, not the checkpoint" in err


@settings(max_examples=40, deadline=None)
@given(
    key=st.sampled_from(["rms_norm_eps", "initializer_range", "hidden_act", "use_cache"]),
    value=JSON_VALUES,
)
def test_any_value_of_an_override_is_applied_or_refused_in_one_line(key, value):
    try:
        changes, _ = applied(TINY, parse(None, [f"{key}={json.dumps(value)}"]))
    except OverrideError as exc:
        assert "\n" not in str(exc) and f"--model-override {key}" in str(exc)
    else:
        assert changes == {key: value}
