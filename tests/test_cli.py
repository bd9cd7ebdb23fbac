import json
import subprocess
import sys

from ctxgate.cli import main
from ctxgate.records.schema import to_json
from tests.conftest import ROOT, prediction


def test_score_one_prediction(capsys):
    assert (
        main(
            [
                "score",
                "--metric",
                "helmet_subem",
                "--prediction",
                "The answer: 10",
                "--answer",
                "1",
                "--prefix",
                "answer:",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    # HELMET prepends the prompt's answer prefix to the output, then parses after its first
    # occurrence
    assert out["score"] == 1.0 and out["scored_text"] == "The answer: 10"


def test_score_unknown_metric_lists_choices(capsys):
    assert main(["score", "--metric", "em", "--prediction", "x", "--answer", "x"]) == 2
    assert "string_match_all" in capsys.readouterr().err


def test_rescore_from_predictions(tmp_path, capsys):
    rows = [
        prediction(
            "niah_single_1",
            512,
            0,
            0.0,
            metric="string_match_all",
            prediction=" 1234567",
            answers=("1234567",),
        ),
        prediction(
            "json_kv", 512, 0, 1.0, metric="helmet_subem", prediction=" abc-1", answers=("ABC 1",)
        ),
    ]
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(json.dumps(to_json(r)) for r in rows) + "\n")
    assert main(["rescore", str(path), "--json"]) == 0
    out = {r["task"]: r for r in json.loads(capsys.readouterr().out)}
    assert out["niah_single_1"]["rescored"] == 100.0 and out["niah_single_1"]["delta"] == 100.0
    assert out["json_kv"]["rescored"] == 0.0  # "abc1" does not contain "abc 1" after normalization
    assert main(["rescore", str(path), "--metric", "string_match_part", "--json"]) == 0


def test_rescore_bad_line_names_file_and_line(tmp_path, capsys):
    path = tmp_path / "p.jsonl"
    path.write_text('{"task": "nope"}\n')
    assert main(["rescore", str(path)]) == 2
    assert f"{path}:1" in capsys.readouterr().err


def test_tasks_and_schema_commands(capsys):
    assert main(["tasks"]) == 0
    assert "niah_multikey_3" in capsys.readouterr().out
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "ctxgate run report"
    assert main(["schema", "--predictions"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "ctxgate prediction line"


def test_every_report_field_is_described_in_the_schema_and_the_report_doc_shows_it():
    """docs/report.md's field tables are written from the schema's descriptions (the records'
    docstrings)."""
    done = subprocess.run(
        [sys.executable, "scripts/report_doc.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr + " (run: python scripts/report_doc.py)"
