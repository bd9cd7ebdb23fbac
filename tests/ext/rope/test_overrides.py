"""Context-extension settings (``--rope-scaling``, ``--model-override``): parsed in one line or
refused in one, merged into the checkpoint's own RoPE settings, the window they give, and end to end
on the shipped checkpoint: another fingerprint, another cache key, other outputs past its window,
and a server started without them refused."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxgate.backends.model_config import window
from ctxgate.ext.rope.overrides import ConfigOverrides, applied, parse
from ctxgate.ext.rope.rules import OverrideError
from tests.conftest import TINY

LINEAR2 = '{"rope_type": "linear", "factor": 2.0}'


def test_rope_scaling_is_merged_into_the_checkpoints_own_settings():
    changes, win = applied(TINY, parse(LINEAR2, None))
    assert changes == {
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "linear", "factor": 2.0}
    }
    assert win == 2 * 8192


def test_rope_theta_goes_where_transformers_5_keeps_it():
    changes, win = applied(
        TINY, parse(None, ["rope_theta=500000", "max_position_embeddings=32768"])
    )
    assert changes == {
        "max_position_embeddings": 32768,
        "rope_parameters": {"rope_theta": 500000, "rope_type": "default"},
    }
    assert win == 32768


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"max_position_embeddings": 8192}, 8192),
        (
            {
                "max_position_embeddings": 8192,
                "rope_parameters": {"rope_type": "linear", "factor": 4},
            },
            32768,
        ),
        (
            {"max_position_embeddings": 8192, "rope_scaling": {"type": "dynamic", "factor": 2.0}},
            16384,
        ),
        (  # Qwen2.5's YaRN recipe: the original window times the factor
            {
                "max_position_embeddings": 32768,
                "rope_scaling": {
                    "type": "yarn",
                    "factor": 4.0,
                    "original_max_position_embeddings": 32768,
                },
            },
            131072,
        ),
        (  # Llama 3.1 states its extended window itself
            {
                "max_position_embeddings": 131072,
                "rope_parameters": {"rope_type": "llama3", "factor": 8.0},
            },
            131072,
        ),
        ({"text_config": {"max_position_embeddings": 4096}}, 4096),
        ({}, None),
    ],
)
def test_the_window_follows_transformers_reading_of_the_rope_settings(config, expected):
    assert window(config) == expected


@pytest.mark.parametrize(
    ("rope", "items", "message"),
    [
        ("{rope", None, r"--rope-scaling '\{rope' is not JSON .*e\.g\. --rope-scaling"),
        ("[1, 2]", None, r"must be a JSON object"),
        (None, ["factor"], r"--model-override 'factor' is not KEY=VALUE: e\.g\. --model-override"),
        (None, ["=3"], r"is not KEY=VALUE"),
    ],
)
def test_a_malformed_option_is_one_line_with_an_example(rope, items, message):
    with pytest.raises(OverrideError, match=message):
        parse(rope, items)


@pytest.mark.parametrize(
    ("rope", "message"),
    [
        ('{"rope_type": "linear", "factor": 0}', r"factor 0 must be a number of at least 1"),
        ('{"rope_type": "linear", "factor": -2}', r"factor -2 must be a number of at least 1"),
        ('{"rope_type": "yarn", "factor": "4"}', r"factor '4' must be a number of at least 1"),
        (
            '{"rope_type": "linear", "facter": 8, "factor": 2}',
            r"does not read 'facter' \(did you mean factor\?\)",
        ),
        (
            '{"rope_type": "bogus", "factor": 2}',
            r"rope_type 'bogus' is not one of default, dynamic, linear",
        ),
        ('{"rope_type": "yarn"}', r"--rope-scaling yarn needs factor"),
        ('{"type": "linear"}', r"--rope-scaling linear needs factor"),
        (
            '{"rope_type": "linear", "factor": 2, "rope_theta": 0}',
            r"rope_theta=0 must be a number above 0",
        ),
    ],
)
def test_a_rope_setting_transformers_would_misread_is_refused_with_the_fix(rope, message):
    with pytest.raises(OverrideError, match=message) as refused:
        parse(rope, None)
    assert str(refused.value).endswith(
        """e.g. --rope-scaling '{"rope_type": "yarn", "factor": 4.0}'"""
    ) or ("--model-override" in str(refused.value))


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            "rope_theta=0",
            r"rope_theta=0 must be a number above 0: e\.g\. --model-override rope_theta=500000",
        ),
        ("rope_theta=abc", r'rope_theta="abc" must be a number above 0'),
        (
            "max_position_embeddings=-5",
            r"must be a whole number above 0: e\.g\. --model-override max_position",
        ),
        ("max_position_embeddings=1.5", r"must be a whole number above 0"),
        (
            'num_hidden_layers="four"',
            r'num_hidden_layers="four": .*has 4 there, so give a value of that kind',
        ),
        ("tie_word_embeddings=1", r"tie_word_embeddings=1: .*has true there"),
    ],
)
def test_an_override_value_of_the_wrong_kind_is_refused_with_an_example(item, message):
    with pytest.raises(OverrideError, match=message):
        applied(TINY, parse(None, [item]))


def test_a_key_the_config_does_not_have_is_refused_with_the_nearest():
    with pytest.raises(
        OverrideError,
        match=r"max_position_embedding: .*config\.json has no such setting \(did you ",
    ):
        applied(TINY, parse(None, ["max_position_embedding=16384"]))


@given(
    st.dictionaries(
        st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True),
        st.one_of(
            st.integers(),
            st.floats(allow_nan=False, allow_infinity=False),
            st.text(max_size=8),
            st.booleans(),
        ),
        max_size=4,
    )
)
def test_override_values_read_back_as_given(values):
    """KEY=VALUE with a JSON value reads back as that value (text that is not JSON stays text)."""
    items = [f"{k}={json.dumps(v)}" for k, v in values.items()]
    assert dict(parse(None, items).keys) == values
    assert bool(parse(None, items)) == bool(values)


def test_the_digest_names_the_settings():
    a, b = parse(LINEAR2, None), parse('{"rope_type": "linear", "factor": 4.0}', None)
    assert a.sha256 != b.sha256 and a.sha256 == parse(LINEAR2, []).sha256
    assert not ConfigOverrides()


def _predictions(path: Path) -> list[str]:
    return [
        json.loads(line)["prediction"] for line in path.read_text().splitlines() if line.strip()
    ]


def test_rope_scaling_changes_the_fingerprint_cache_key_and_outputs_past_the_window(
    real_suite, pytester
):
    """At 16K (twice the shipped checkpoint's 8K positions): the linear factor 2 gives a 16K window,
    so the case runs without --force-lengths; its fingerprint, cache namespace and outputs are not
    those of the checkpoint run past its window as it is."""
    common = ("-k", "niah_single_1", "--lengths", "16k", "--samples", "2", "--cache-dir", "cache")
    plain = real_suite(*common)
    plain.stdout.fnmatch_lines(["*the length exceeds the model's max_position_embeddings (8192)*"])
    forced = real_suite(*common, "--force-lengths", "--report", "forced.json")
    assert forced.ret == 0, forced.stdout.str()[-2000:]
    scaled = real_suite(*common, "--rope-scaling", LINEAR2, "--report", "scaled.json")
    assert scaled.ret == 0, scaled.stdout.str()[-2000:]
    scaled.stdout.fnmatch_lines(
        ['*ctxgate model config overrides: {"rope_scaling": {"rope_type": "linear"*']
    )
    one, two = (
        json.loads((pytester.path / f).read_text())["run"] for f in ("forced.json", "scaled.json")
    )
    assert two["model_overrides"] == {"rope_scaling": {"rope_type": "linear", "factor": 2.0}}
    assert one["model_fingerprint"]["sha256"] != two["model_fingerprint"]["sha256"]
    assert two["model_fingerprint"]["checkpoint_sha256"] == one["model_fingerprint"]["sha256"]
    assert _predictions(pytester.path / "forced.predictions.jsonl") != _predictions(
        pytester.path / "scaled.predictions.jsonl"
    )
    namespaces = sqlite3.connect(pytester.path / "cache" / "generations.sqlite").execute(
        "SELECT COUNT(DISTINCT namespace), COUNT(*) FROM generations"
    )
    assert namespaces.fetchone() == (2, 4)  # two models, never one's outputs for the other


def test_a_served_model_started_without_the_settings_is_refused_with_both_numbers(real_suite):
    from fixtures.completions_server import start

    url, httpd = start()
    try:
        result = real_suite(
            "--backend", "openai", "--base-url", url, "--served-model", "tiny",
            "--rope-scaling", LINEAR2,
            "-k", "niah_single_1", "--lengths", "1k", "--samples", "1", "--no-cache",
        )  # fmt: skip
    finally:
        httpd.shutdown()
        httpd.server_close()
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0
    assert (
        "with a max model length of 8192, but --rope-scaling/--model-override give a window of "
        "16384" in out
    )
