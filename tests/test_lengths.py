import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxgate.lengths import LengthError, format_length, parse_length, parse_lengths


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("8k", 8192),
        ("8K", 8192),
        ("8192", 8192),
        ("128k", 131072),
        (" 1k ", 1024),
        ("1m", 1048576),
        (512, 512),
        ("0", 0),
        ("0k", 0),
    ],
)
def test_parse_length(text, tokens):
    assert parse_length(text) == tokens


@pytest.mark.parametrize("bad", ["", "8kb", "-1", "1.5k", "k", -5])
def test_bad_length_names_value_and_fix(bad):
    with pytest.raises(LengthError) as err:
        parse_length(bad)
    assert repr(bad) in str(err.value) and "8k" in str(err.value)


def test_length_zero_runs_with_the_others():
    assert parse_lengths("1k,0,256") == (0, 256, 1024)
    assert format_length(0) == "0" and parse_length(format_length(0)) == 0


def test_parse_lengths_sorts_and_dedupes():
    assert parse_lengths("1k,512,1024") == (512, 1024)


@given(st.integers(min_value=0, max_value=4096), st.integers(min_value=0, max_value=1023))
def test_format_then_parse_roundtrip(k, extra):
    tokens = k * 1024 + extra
    assert parse_length(format_length(tokens).lower()) == tokens
