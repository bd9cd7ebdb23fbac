"""HELMET data folders: the manifest check, pinned checksums, and a clear skip when data is missing."""

from __future__ import annotations

import json
import shutil

import pytest

from ctxgate.cli import main
from ctxgate.sources.manifest import LOCK_NAME, verify
from tests.conftest import HELMET_DATA


@pytest.fixture
def data(tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(HELMET_DATA, copy)
    return copy


def test_shipped_fixtures_verify_clean(capsys):
    assert main(["data", "verify", str(HELMET_DATA)]) == 0
    out = capsys.readouterr().out
    assert "0 problem(s), 0 unpinned file(s)" in out and "kilt/nq-dev-multikilt_1000_k24_dep6.jsonl" in out


def test_a_changed_file_fails_against_its_pin(data, capsys):
    path = data / "icl" / "trec" / "test.jsonl"
    path.write_text(path.read_text().replace("lantern", "lanterns", 1))
    assert main(["data", "verify", str(data)]) == 1
    out = capsys.readouterr().out
    assert "changed   icl_trec_coarse  icl/trec/test.jsonl" in out and "re-pin deliberately" in out


def test_missing_and_malformed_files_are_named(data, capsys):
    (data / "kilt" / "nq-train-multikilt_1000_k3_dep6.jsonl").unlink()
    (data / "infbench" / "longbook_qa_eng.jsonl").write_text('{"id": 1, "context": "x"}\n')
    assert main(["data", "verify", str(data)]) == 1
    out = capsys.readouterr().out
    assert "missing   kilt_nq          kilt/" in out
    assert "bad       infbench_qa      infbench/longbook_qa_eng.jsonl  (line 1 lacks input, answer)" in out


def test_hub_backed_sets_may_be_absent_and_a_new_folder_can_be_pinned(data, capsys):
    shutil.rmtree(data / "icl")
    (data / LOCK_NAME).unlink()
    findings = verify(data)
    assert {f.status for f in findings if f.task.startswith("icl_")} == {"hub"}
    assert any(f.status == "unpinned" for f in findings)
    assert main(["data", "verify", str(data), "--write-lock"]) == 0
    pins = json.loads((data / LOCK_NAME).read_text())["files"]
    assert "kilt/popqa_test_1000_k24_dep6.jsonl" in pins and not any(p.startswith("icl/") for p in pins)


def test_not_a_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["data", "verify", str(tmp_path / "nope")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_suite_without_data_skips_with_the_flag_to_pass(real_suite, pytester):
    result = real_suite("-k", "kilt_nq or icl_nlu", "--lengths", "1k", "--samples", "2", "--report", "r.json")
    result.assert_outcomes(skipped=2)
    cases = json.loads((pytester.path / "r.json").read_text())["cases"]
    assert all(c["verdict"] == "skip" and "--data-dir" in c["message"] for c in cases)
    assert "Traceback" not in result.stdout.str()


def test_helmet_compat_reproduces_the_empty_answer_bug(pytester):
    """Scripted empty outputs on InfBench MC: wrong by default, right for gold "A" under --helmet-compat."""
    from ctxgate.backends.scripted import ScriptedBackend
    from ctxgate.runner import run_case
    from ctxgate.tasks import BuildContext, get_task
    from ctxgate.textcodec import ByteTokenizer, PieceEncoder

    (pytester.path / "s.json").write_text(json.dumps({"default": 0.0}))
    backend = ScriptedBackend(str(pytester.path / "s.json"))
    ctx = BuildContext(encoder=PieceEncoder(ByteTokenizer()), chat=False, data_dir=str(HELMET_DATA))
    spec = get_task("infbench_mc")
    fixed = run_case(spec, ctx, backend, 8192, 6, 42)
    compat = run_case(spec, ctx, backend, 8192, 6, 42, helmet_compat=True)
    gold_a = sum(s.answers[0] == "A" for s in compat.samples)
    assert 0 < gold_a < 6
    assert fixed.score == 0.0 and fixed.metric == "mc_accuracy"
    assert compat.score == pytest.approx(100 * gold_a / 6, abs=0.01) and compat.metric == "mc_accuracy_helmet"


def test_fetch_extracts_only_what_is_read_and_refuses_escapes(tmp_path, capsys):
    import io
    import tarfile

    archive = tmp_path / "data.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, body in (("data/kilt/nq-dev-multikilt_1000_k20_dep6.jsonl", b'{"question": "q"}\n'),
                           ("data/msmarco/trec2019psg_preprocessed/x.jsonl", b"{}\n"),
                           ("data/alce/asqa.json", b"{}"), ("data/kilt/../../evil.txt", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    assert main(["data", "fetch", "--to", str(tmp_path / "out"), "--archive", str(archive)]) == 0
    assert "extracted 2 files" in capsys.readouterr().out
    assert (tmp_path / "out" / "kilt" / "nq-dev-multikilt_1000_k20_dep6.jsonl").is_file()
    assert not (tmp_path / "out" / "alce").exists() and not (tmp_path / "evil.txt").exists()


def test_fetch_without_hub_access_says_how_to_pass_an_archive(tmp_path, capsys):
    assert main(["data", "fetch", "--to", str(tmp_path / "out")]) == 2
    assert "--archive PATH" in capsys.readouterr().err
