"""The --baseline gate end to end on real checkpoints: the real suite, real generations, no scripted
backend.

checkpoint-100 and -200 differ only by 1% noise on their attention weights (same behaviour);
checkpoint-600 is past the break of the sequence, where retrieval really stops working. One test, so
the baseline run is made once.
"""

from __future__ import annotations

import json

SELECT = ("-k", "niah_single_1", "--lengths", "256", "--samples", "40", "--no-cache")


def test_the_baseline_gate_on_real_checkpoints(real_suite, pytester, checkpoint_sequence):
    (pytester.path / "thresholds.toml").write_text(
        "[regression]\ntolerance = 5\nconfidence = 0.95\n"
    )
    real_suite(
        *SELECT, "--report", "base.json", model=checkpoint_sequence / "checkpoint-100"
    ).assert_outcomes(passed=1)
    base = str(pytester.path / "base.json")
    base_score = json.loads((pytester.path / "base.json").read_text())["cases"][0]["score"]

    # Same behaviour, different weights: the paired difference is noise and the case passes.
    real_suite(
        *SELECT,
        "--baseline",
        base,
        "--report",
        "same.json",
        model=checkpoint_sequence / "checkpoint-200",
    ).assert_outcomes(passed=1)
    (case,) = json.loads((pytester.path / "same.json").read_text())["cases"]
    paired = case["baseline"]
    assert paired["n"] == 40 and not paired["regressed"] and paired["tolerance"] == 5
    assert paired["interval"][0] <= paired["delta"] <= paired["interval"][1]

    # Broken retrieval: the case fails with both scores, the delta, its interval and n.
    result = real_suite(
        *SELECT,
        "--baseline",
        base,
        "--report",
        "broken.json",
        model=checkpoint_sequence / "checkpoint-600",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*niah_single_1 at 256 regressed: * vs baseline {base_score:.1f}: delta -* points "
            "(interval * to *, *, n=40), tolerance 5.0*"
        ]
    )
    (case,) = json.loads((pytester.path / "broken.json").read_text())["cases"]
    assert case["verdict"] == "fail" and case["baseline"]["regressed"]
    assert case["baseline"]["interval"][1] < -5  # the whole interval lies beyond the tolerance

    # --sequential asks the same question sample by sample (paired on the baseline's samples): the
    # broken checkpoint is certain to have dropped long before 40 samples, with the same verdict.
    result = real_suite(
        *SELECT,
        "--baseline",
        base,
        "--sequential",
        "--report",
        "seq.json",
        model=checkpoint_sequence / "checkpoint-600",
    )
    result.assert_outcomes(failed=1)
    (case,) = json.loads((pytester.path / "seq.json").read_text())["cases"]
    seq = case["stop"]
    assert (
        case["baseline"]["regressed"]
        and seq["decided"] == "fail"
        and seq["baseline"]["decided"] == "below"
    )
    assert 10 <= seq["used"] == case["n"] < 40 and case["baseline"]["n"] == case["n"]
    result.stdout.fnmatch_lines(
        ["*regressed*--sequential: certain it dropped by more than the tolerance*"]
    )

    # Other data (another seed) cannot be paired: the error names the data hash instead of
    # comparing.
    result = real_suite(
        *SELECT, "--seed", "7", "--baseline", base, model=checkpoint_sequence / "checkpoint-200"
    )
    result.assert_outcomes(errors=1)  # raised while setting the case up, before any generation
    result.stdout.fnmatch_lines(
        ["*the prompts differ in data seed (42 in the baseline, 7 now)*drop --baseline*"]
    )
