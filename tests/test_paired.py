"""The paired statistics behind --baseline: hand-checked values, and the error rate of a regression
claim simulated at the tolerance boundary."""

import math
import random
from statistics import NormalDist

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxgate.stats.paired import compare, tango_statistic


def test_tango_statistic_by_hand():
    # c=0, b=30, n=100 at delta=-0.2: A=200, B=-30-46=-76, C=-30*(-0.2)(1.2)=7.2;
    # q=(76+sqrt(5776-5760))/400=0.2; the numerator -30+20=-10 moved half a sample towards 0;
    # variance 100*(0.4-0.24)=16
    assert tango_statistic(0, 30, 100, -0.2) == pytest.approx(-9.5 / 4)
    assert tango_statistic(0, 30, 100, -0.2, continuity=0) == pytest.approx(-10 / 4)
    assert tango_statistic(5, 5, 100, 0.0) == 0.0


def test_each_end_is_where_the_statistic_crosses_z():
    base = [1.0] * 80 + [0.0] * 20
    cur = [0.0] * 30 + [1.0] * 50 + [0.0] * 20
    r = compare(cur, base, 0.95)
    z = NormalDist().inv_cdf(0.95)
    assert r.low < r.delta < r.high
    assert tango_statistic(0, 30, 100, r.high / 100) == pytest.approx(-z, abs=0.01)
    assert tango_statistic(0, 30, 100, r.low / 100) == pytest.approx(z, abs=0.01)


@pytest.mark.parametrize("drop", [0.02, 0.10, 0.25])
@pytest.mark.parametrize("gained", [0.0, 0.05])
def test_a_drop_equal_to_the_tolerance_is_claimed_at_most_alpha_of_the_time(drop, gained):
    # n=100 paired samples whose true delta is exactly -tolerance: each sample flips to right with
    # probability `gained`, to wrong with `gained + drop`. A regression claim here is a false alarm;
    # it must happen at most alpha = 5% of the time, within Monte Carlo error (3 standard errors
    # over 3,000 runs).
    rng = random.Random(f"{drop}-{gained}")
    runs, n, alpha = 3000, 100, 0.05
    claims = 0
    for _ in range(runs):
        base, cur = [], []
        for _ in range(n):
            u = rng.random()
            pair = (0.0, 1.0) if u < gained else (1.0, 0.0) if u < 2 * gained + drop else (1.0, 1.0)
            base.append(pair[0])
            cur.append(pair[1])
        claims += compare(cur, base, 1 - alpha).regressed(100 * drop)
    assert claims / runs <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / runs)


def test_a_clear_regression_is_found():
    # 20 points lost against a tolerance of 2: the test sees it on 100 samples
    rng = random.Random(3)
    found = 0
    for _ in range(200):
        base = [1.0] * 100
        cur = [0.0 if rng.random() < 0.2 else 1.0 for _ in range(100)]
        found += compare(cur, base, 0.95).regressed(2.0)
    assert found / 200 > 0.95


def test_pure_noise_passes():
    # 100 samples, 80 right in both runs, but 3 flipped each way: delta 0, wide interval around it.
    base = [1.0] * 80 + [0.0] * 20
    cur = [0.0] * 3 + [1.0] * 77 + [1.0] * 3 + [0.0] * 17
    r = compare(cur, base, 0.95)
    assert (r.current, r.baseline, r.delta) == (80.0, 80.0, 0.0)
    assert (r.flipped_to_right, r.flipped_to_wrong) == (3, 3)
    assert r.low < -2 < 0 < r.high and not r.regressed(2.0)


def test_real_drop_fails():
    # 30 of 80 right answers lost, none gained: a drop of more than 20 points is certain, of 25 is
    # not
    base = [1.0] * 80 + [0.0] * 20
    cur = [0.0] * 30 + [1.0] * 50 + [0.0] * 20
    r = compare(cur, base, 0.95)
    assert r.delta == -30.0
    assert r.regressed(2.0) and r.regressed(20.0) and not r.regressed(25.0)


def test_small_drop_within_noise_passes():
    base = [1.0] * 80 + [0.0] * 20
    cur = (
        [0.0] * 3 + [1.0] * 77 + [0.0] * 20
    )  # 3 lost, none gained: -3 points, but d = 3 is no evidence
    r = compare(cur, base, 0.95)
    assert r.delta == -3.0 and not r.regressed(2.0)


def test_fractional_outcomes_use_a_paired_bootstrap():
    base = [0.75] * 50 + [0.5] * 50
    cur = [0.5] * 50 + [0.25] * 50
    r = compare(cur, base, 0.95)
    assert (
        r.method == "paired-bootstrap" and r.delta == -25.0 and r.high == -25.0 and r.regressed(2.0)
    )


def test_different_sample_counts_are_an_error():
    with pytest.raises(ValueError, match="same samples"):
        compare([1.0], [1.0, 0.0])


@given(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=60))
def test_identical_runs_never_regress(outcomes):
    r = compare(outcomes, outcomes, 0.95)
    assert r.delta == 0 and not r.regressed(0.0)
