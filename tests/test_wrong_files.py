"""A verb given the wrong file says in one line what it was given and what it needs: a report
where its predictions go and the reverse, a predictions file with nothing to score, a metric for
another task's answers (tests for the class, through each verb's ``main``)."""

from __future__ import annotations

import pytest

from ctxgate import cli


@pytest.fixture
def report(real_suite, pytester) -> None:
    """A small real run's report, r.json, and its r.predictions.jsonl, in the current folder."""
    ran = real_suite(
        "-k", "niah_single_1", "--lengths", "512", "--samples", "2", "--no-cache",
        "--report", "r.json",
    )  # fmt: skip
    assert ran.ret == 0
    (pytester.path / "empty.predictions.jsonl").write_text("")


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["rescore", "r.json"],
            "r.json is a report, not its predictions: pass r.predictions.jsonl",
        ),
        (
            ["html", "r.predictions.jsonl"],
            "r.predictions.jsonl holds a report's predictions, not the report: pass the report "
            "written beside it (r.json)",
        ),
        (["rescore", "empty.predictions.jsonl"], "holds no sample a metric scored"),
        (
            ["rescore", "r.predictions.jsonl", "--metric", "mrcr_ratio"],
            "--metric mrcr_ratio cannot score its answers (mrcr_ratio: MRCR needs two references",
        ),
        (
            ["score", "--metric", "mrcr_ratio", "--prediction", "x", "--answer", "y"],
            "give such references, one --answer each",
        ),
    ],
    ids=["report-as-predictions", "predictions-as-report", "empty", "metric", "score"],
)
def test_a_verb_given_the_wrong_file_says_what_it_needs_in_one_line(report, capsys, argv, said):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err
    assert "Traceback" not in err and "CTXGATE_DEBUG" not in err  # a refusal, no surprise
