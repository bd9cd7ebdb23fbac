"""bench/prefix.py's smoke: two of the runs it compares (vLLM's prefix cache off, then on as the
suite runs by default), each through the suite's own command on vLLM's CPU build, and the figures
it prints from their reports."""

from __future__ import annotations

import re

import pytest

from bench.prefix import main
from tests.conftest import engine_in_its_server


def test_the_smoke_compares_the_cache_off_and_on_and_the_outputs_are_the_same(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with engine_in_its_server():  # the servers' processes are not what is measured
        main(["--smoke"])
    out = capsys.readouterr().out
    off = re.search(r"prefix cache off: ([\d,]*\d) prompt tokens computed of ([\d,]*\d)", out)
    on = re.search(
        r"on, by shared prefix: ([\d,]*\d) computed \(([\d,]*\d) from the cache, reported for "
        r"(\d+) of (\d+)",
        out,
    )
    assert off and on, out
    assert off[1] == off[2]  # nothing served without the cache
    # every generation's usage said what the cache served, and the samples after the first found
    # at least the instruction they share with those before them computed
    assert on[3] == on[4] == "4" and int(on[2].replace(",", "")) > 0, out
    assert re.search(r"computed prompt tokens on/off 0\.\d\dx", out), out
    assert "outputs as with the cache off in 4 of 4 samples" in out, out
