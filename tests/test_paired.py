"""The paired statistics behind --baseline, on constructed per-sample outcomes with hand-checked numbers."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxgate.stats.paired import clopper_pearson, compare


def test_clopper_pearson_known_values():
    # Textbook values: 5/10 -> (0.1871, 0.8129); 0/10 -> (0, 0.3085); 10/10 -> (0.6915, 1)
    assert clopper_pearson(5, 10, 0.95) == pytest.approx((0.1871, 0.8129), abs=1e-4)
    assert clopper_pearson(0, 10, 0.95) == pytest.approx((0.0, 0.3085), abs=1e-4)
    assert clopper_pearson(10, 10, 0.95) == pytest.approx((0.6915, 1.0), abs=1e-4)


def test_pure_noise_passes():
    # 100 samples, 80 right in both runs, but 3 flipped each way: delta 0, wide interval around it.
    base = [1.0] * 80 + [0.0] * 20
    cur = [0.0] * 3 + [1.0] * 77 + [1.0] * 3 + [0.0] * 17
    r = compare(cur, base, 0.95)
    assert (r.current, r.baseline, r.delta) == (80.0, 80.0, 0.0)
    assert (r.flipped_to_right, r.flipped_to_wrong) == (3, 3)
    assert r.low < -2 < 0 < r.high and not r.regressed(2.0)


def test_real_drop_fails():
    # 30 of 80 right answers lost, none gained: c=0 of d=30 discordant. One-sided 95% upper bound of p is
    # 1 - 0.05**(1/30) = 0.0950, so the delta's upper end is 30 * (2 * 0.0950 - 1) / 100 = -24.30 points.
    base = [1.0] * 80 + [0.0] * 20
    cur = [0.0] * 30 + [1.0] * 50 + [0.0] * 20
    r = compare(cur, base, 0.95)
    assert r.delta == -30.0 and r.high == pytest.approx(-24.30, abs=0.01)
    assert r.regressed(2.0) and r.regressed(20.0) and not r.regressed(25.0)


def test_small_drop_within_noise_passes():
    base = [1.0] * 80 + [0.0] * 20
    cur = [0.0] * 3 + [1.0] * 77 + [0.0] * 20  # 3 lost, none gained: -3 points, but d = 3 is no evidence
    r = compare(cur, base, 0.95)
    assert r.delta == -3.0 and not r.regressed(2.0)


def test_fractional_outcomes_use_a_paired_bootstrap():
    base = [0.75] * 50 + [0.5] * 50
    cur = [0.5] * 50 + [0.25] * 50
    r = compare(cur, base, 0.95)
    assert r.method == "paired-bootstrap" and r.delta == -25.0 and r.high == -25.0 and r.regressed(2.0)


def test_different_sample_counts_are_an_error():
    with pytest.raises(ValueError, match="same samples"):
        compare([1.0], [1.0, 0.0])


@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=60))
def test_identical_runs_never_regress(outcomes):
    r = compare(outcomes, outcomes, 0.95)
    assert r.delta == 0 and not r.regressed(0.0)
