"""HELMET data folders: the manifest check, pinned checksums, and a clear skip when data is
missing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ctxgate.cli import main
from ctxgate.sources.manifest import LOCK_NAME, verify
from tests.conftest import HELMET_DATA, typed_report


@pytest.fixture
def data(tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(HELMET_DATA, copy)
    return copy


def test_shipped_fixtures_verify_clean(capsys):
    assert main(["data", "verify", str(HELMET_DATA)]) == 0
    out = capsys.readouterr().out
    assert (
        "0 problem(s), 0 unpinned file(s)" in out
        and "kilt/nq-dev-multikilt_1000_k24_dep6.jsonl" in out
    )


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
    assert (
        "bad       infbench_qa      infbench/longbook_qa_eng.jsonl  (line 1 lacks input, answer)"
        in out
    )


def test_hub_backed_sets_may_be_absent_and_a_new_folder_can_be_pinned(data, capsys):
    shutil.rmtree(data / "icl")
    (data / LOCK_NAME).unlink()
    findings = verify(data)
    assert {f.status for f in findings if f.task.startswith("icl_")} == {"hub"}
    assert any(f.status == "unpinned" for f in findings)
    assert main(["data", "verify", str(data), "--write-lock"]) == 0
    pins = json.loads((data / LOCK_NAME).read_text())["files"]
    assert "kilt/popqa_test_1000_k24_dep6.jsonl" in pins and not any(
        p.startswith("icl/") for p in pins
    )


def test_not_a_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["data", "verify", str(tmp_path / "nope")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_suite_without_data_skips_with_the_flag_to_pass(real_suite, pytester):
    result = real_suite(
        "-k", "kilt_nq or icl_nlu", "--lengths", "1k", "--samples", "2", "--report", "r.json"
    )
    result.assert_outcomes(skipped=2)
    cases = json.loads((pytester.path / "r.json").read_text())["cases"]
    assert all(c["verdict"] == "skip" and "--data-dir" in c["message"] for c in cases)
    assert "Traceback" not in result.stdout.str()


def test_helmet_compat_reproduces_the_empty_answer_bug(pytester, helmet_data_long):
    """Scripted empty outputs on InfBench MC: wrong by default, right for gold "A" under
    --helmet-compat."""
    from dataclasses import replace

    from ctxgate.metrics.registry import get_metric, resolve
    from ctxgate.run.case import Session, run_case
    from ctxgate.run.loading import ModelSpec
    from ctxgate.tasks import BuildContext, get_task
    from ctxgate.tokens.codec import PieceEncoder
    from tests.scripted import ByteTokenizer, ScriptedBackend

    (pytester.path / "s.json").write_text(json.dumps({"default": 0.0}))
    ctx = BuildContext(
        encoder=PieceEncoder(ByteTokenizer()), chat=False, data_dir=str(helmet_data_long)
    )
    backend = ScriptedBackend(ModelSpec(str(pytester.path / "s.json")), ctx)
    spec = get_task("infbench_mc")
    fixed = run_case(spec, Session(backend, ctx), 8192, 3)
    # --helmet-compat scores a case by the metric it resolves to (its prompts are HELMET's too,
    # which this byte tokenizer cannot build)
    swapped = resolve(spec.metric.name, helmet_compat=True)
    assert swapped == "mc_accuracy_helmet"
    compat = run_case(replace(spec, metric=get_metric(swapped)), Session(backend, ctx), 8192, 3)
    gold_a = sum(s.answers[0] == "A" for s in compat.samples)
    assert (
        0 < gold_a < 3 == len(compat.samples)
    )  # the fixtures' three long books (HELMET keeps only those)
    assert fixed.score == 0.0 and fixed.metric == "mc_accuracy"
    assert (
        compat.score == pytest.approx(100 * gold_a / 3, abs=0.01)
        and compat.metric == "mc_accuracy_helmet"
    )


def test_fetch_extracts_only_what_is_read_and_refuses_escapes(tmp_path, capsys):
    import io
    import tarfile

    archive = tmp_path / "data.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, body in (
            ("data/kilt/nq-dev-multikilt_1000_k20_dep6.jsonl", b'{"question": "q"}\n'),
            ("data/msmarco/trec2019psg_preprocessed/x.jsonl", b"{}\n"),
            ("data/alce/asqa.json", b"{}"),
            ("data/kilt/../../evil.txt", b"x"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    assert main(["data", "fetch", "--to", str(tmp_path / "out"), "--archive", str(archive)]) == 0
    assert "extracted 3 files" in capsys.readouterr().out
    assert (tmp_path / "out" / "kilt" / "nq-dev-multikilt_1000_k20_dep6.jsonl").is_file()
    assert (tmp_path / "out" / "alce" / "asqa.json").is_file()  # every folder a HELMET task reads
    assert not (tmp_path / "evil.txt").exists()


def test_fetch_without_hub_access_says_how_to_pass_an_archive(tmp_path, capsys):
    assert main(["data", "fetch", "--to", str(tmp_path / "out")]) == 2
    assert "--archive PATH" in capsys.readouterr().err


def test_a_pool_smaller_than_samples_runs_each_record_once(pytester):
    """msmarco_rerank's fixture holds 8 queries x 3 orders: --samples 100 runs those 24, each once,
    and says so."""

    from ctxgate.report.tables import rows
    from ctxgate.run.case import Session, run_case
    from ctxgate.run.loading import ModelSpec
    from ctxgate.tasks import BuildContext, get_task
    from ctxgate.tokens.codec import PieceEncoder
    from tests.scripted import ByteTokenizer, ScriptedBackend

    (pytester.path / "s.json").write_text(json.dumps({"default": 0.0}))
    ctx = BuildContext(encoder=PieceEncoder(ByteTokenizer()), chat=False, data_dir=str(HELMET_DATA))
    backend = ScriptedBackend(ModelSpec(str(pytester.path / "s.json")), ctx)
    result = run_case(get_task("msmarco_rerank"), Session(backend, ctx), 2048, 100)
    assert result.n == len(result.samples) == 24
    assert result.sample_cap == {"requested": 100, "pool": 24}
    assert len({s.sample_sha256 for s in result.samples}) == 24  # no prompt twice
    assert (
        run_case(
            get_task("msmarco_rerank"),
            Session(ScriptedBackend(ModelSpec(str(pytester.path / "s.json")), ctx), ctx),
            2048,
            10,
        ).sample_cap
        is None
    )
    from ctxgate.records.case import CaseRecord
    from ctxgate.records.schema import to_json

    record = to_json(result.onto(CaseRecord("msmarco_rerank", "helmet", 2048, verdict="pass")))
    _, _, notes = rows(typed_report([record]))
    assert "msmarco_rerank at 2K ran 24 of 100" in " ".join(notes)


def test_the_suite_prints_the_cap_and_records_it(real_suite, pytester):
    result = real_suite(
        "-k",
        "kilt_hotpotqa",
        "--lengths",
        "1k",
        "--samples",
        "30",
        "--data-dir",
        str(HELMET_DATA),
        "--report",
        "r.json",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*Fewer samples than asked*kilt_hotpotqa at 1K ran 24 of 30*"])
    (case,) = json.loads((pytester.path / "r.json").read_text())["cases"]
    assert case["n"] == 24 and case["sample_cap"] == {"requested": 30, "pool": 24}


def test_helmet_recall_comes_from_helmets_files_or_says_it_does_not(real_suite, pytester):
    with_files = real_suite(
        "-m",
        "recall",
        "--lengths",
        "1k",
        "--samples",
        "3",
        "--data-dir",
        str(HELMET_DATA),
        "--report",
        "own.json",
    )
    with_files.assert_outcomes(passed=7)  # json_kv, the three RULER cases and HELMET's three files
    recall = json.loads((pytester.path / "own.json").read_text())["by_length"]["1024"][
        "helmet_recall"
    ]
    assert recall["members"] == [
        "json_kv",
        "helmet_multikey_2",
        "helmet_multikey_3",
        "helmet_multivalue",
    ]
    assert "uses the suite's RULER cases" not in with_files.stdout.str()
    without = real_suite(
        "-m", "recall", "--lengths", "1k", "--samples", "3", "--report", "ruler.json"
    )
    without.assert_outcomes(passed=4, skipped=3)
    without.stdout.fnmatch_lines(["*HELMET Recall at 1K uses the suite's RULER cases*"])
    recall = json.loads((pytester.path / "ruler.json").read_text())["by_length"]["1024"][
        "helmet_recall"
    ]
    assert recall["members"] == ["json_kv", "niah_multikey_2", "niah_multikey_3", "niah_multivalue"]


def test_the_case_record_says_whether_helmets_files_built_it(pytester):

    from ctxgate.run.case import Session, run_case
    from ctxgate.run.loading import ModelSpec
    from ctxgate.tasks import BuildContext, get_task
    from ctxgate.tokens.codec import PieceEncoder
    from tests.scripted import ByteTokenizer, ScriptedBackend

    (pytester.path / "s.json").write_text(json.dumps({"default": 0.0}))
    ctx = BuildContext(encoder=PieceEncoder(ByteTokenizer()), chat=False, data_dir=str(HELMET_DATA))
    backend = ScriptedBackend(ModelSpec(str(pytester.path / "s.json")), ctx)
    session = Session(backend, ctx)
    assert run_case(get_task("kilt_nq"), session, 8192, 2).built_from == "helmet_file"
    assert run_case(get_task("kilt_nq"), session, 4096, 2).built_from == "placed"
    assert run_case(get_task("json_kv"), session, 4096, 2).built_from == "generated"
    assert run_case(get_task("niah_single_1"), session, 1024, 2).built_from is None


def _rewrite_first(path, change) -> None:
    lines = path.read_text().splitlines()
    lines[0] = json.dumps(change(json.loads(lines[0])))
    path.write_text("\n".join(lines) + "\n")


def test_the_loader_and_data_verify_hold_a_file_to_the_same_fields(data):
    """One declaration per file (``DataFile``, in the module that reads it): a field the loader
    needs is one ``data verify`` checks, and a record the loader skips by design is no fault for it.
    """
    from ctxgate.sources.errors import DataUnavailable
    from ctxgate.sources.judged import load_multi_lexsum
    from ctxgate.sources.kilt import load_rag

    popqa = data / "kilt" / "popqa_test_1000_k50_dep6.jsonl"
    _rewrite_first(popqa, lambda r: {k: v for k, v in r.items() if k != "s_pop"})
    with pytest.raises(DataUnavailable, match="lacks.*s_pop"):
        load_rag("kilt_popqa", str(data))
    (finding,) = [f for f in verify(data) if f.path == "kilt/popqa_test_1000_k50_dep6.jsonl"]
    assert finding.status == "bad" and "lacks s_pop" in finding.detail

    lexsum = data / "multi_lexsum" / "validation.jsonl"
    before = len(load_multi_lexsum(str(HELMET_DATA)).items)
    _rewrite_first(
        lexsum, lambda r: {**r, "summary/short": None}
    )  # HELMET keeps only cases with a short summary
    assert len(load_multi_lexsum(str(data)).items) == before - 1
    (finding,) = [f for f in verify(data) if f.path == "multi_lexsum/validation.jsonl"]
    assert finding.status != "bad", finding


@pytest.fixture
def every_layout(data):
    """The fixture data with the other layouts the loaders accept: MRCR's single file, BABILong's
    per-length parquet form, ALCE's prompt files in prompts/."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    mrcr = data / "mrcr" / "4needle"
    pq.write_table(
        pa.concat_tables(pq.read_table(p) for p in sorted(mrcr.iterdir())),
        data / "mrcr" / "4needle.parquet",
    )
    shutil.rmtree(mrcr)
    records = json.loads((data / "babilong" / "data" / "qa3" / "1k.json").read_text())
    (data / "babilong" / "1k").mkdir()
    pq.write_table(pa.Table.from_pylist(records), data / "babilong" / "1k" / "qa3-00000.parquet")
    (data / "prompts").mkdir()
    (data / "alce" / "asqa_revised.json").rename(data / "prompts" / "asqa_revised.json")
    return data


OTHER_LAYOUTS = (
    "mrcr/4needle.parquet",
    "babilong/1k/qa3-00000.parquet",
    "prompts/asqa_revised.json",
    "nolima/needlesets/needle_set.json",
)


def test_every_layout_a_loader_reads_is_pinned_and_an_edit_to_any_is_a_problem(
    every_layout, capsys
):
    import pyarrow.parquet as pq

    assert main(["data", "verify", str(every_layout), "--write-lock"]) == 0
    pins = json.loads((every_layout / LOCK_NAME).read_text())["files"]
    assert set(OTHER_LAYOUTS) <= set(pins)
    for rel in OTHER_LAYOUTS:
        path = every_layout / rel
        original = path.read_bytes()
        if path.suffix == ".parquet":  # a row fewer: still a good file, other bytes
            pq.write_table(pq.read_table(path).slice(1), path)
        else:
            path.write_bytes(original + b"\n")
        capsys.readouterr()
        assert main(["data", "verify", str(every_layout)]) == 1
        out = capsys.readouterr().out
        (line,) = [x for x in out.splitlines() if x.split()[2:3] == [rel]]
        assert line.startswith("changed") and "1 problem(s)" in out, out
        path.write_bytes(original)


def test_every_file_the_loaders_read_is_one_verify_pins(every_layout):
    """One catalog: whatever file a loader consults under the data folder, --write-lock pinned."""
    from contextlib import suppress

    from ctxgate.ext.families import babilong_files, mrcr_files, nolima_files
    from ctxgate.memo import _CONSULTED
    from ctxgate.sources import helmet_files, icl, judged, kilt
    from ctxgate.sources.errors import DataNotGiven
    from ctxgate.sources.manifest import write_lock

    root = str(every_layout)
    write_lock(every_layout)
    loads = [
        *(lambda t=t: kilt.load_rag(t, root) for t in helmet_files.RAG_SETS),
        *(lambda t=t: helmet_files.load_rag_file(t, root, 8192, 42) for t in helmet_files.RAG_SETS),
        lambda: kilt.load_msmarco(root),
        lambda: helmet_files.load_msmarco_file(root, 8192, 42),
        lambda: helmet_files.load_json_kv_file(root, 8192, 42),
        *(
            lambda t=t, n=n: helmet_files.load_ruler_file(t, root, n)
            for t in helmet_files.RULER_FOLDERS
            for n in (1024, 2048, 8192)
        ),
        *(lambda t=t: icl.load_icl(t, root, 42) for t in icl.SOURCES),
        *(lambda t=t: judged.load_infbench(t, root) for t in judged.SUBSETS),
        lambda: judged.load_narrativeqa(root),
        lambda: judged.load_infbench_sum(root),
        lambda: judged.load_multi_lexsum(root),
        *(lambda t=t: judged.load_alce(t, root) for t in judged.ALCE_FILES),
        *(
            lambda s=s, n=n: babilong_files.load_set(f"babilong_{s}", s, root, n)
            for s in babilong_files.SETS
            for n in (1024, 2048, 4096)
        ),
        *(lambda n=n: mrcr_files.load_mrcr(root, n) for n in mrcr_files.NEEDLES),
        lambda: nolima_files.load_official(root),
    ]
    consulted: dict = {}
    token = _CONSULTED.set(consulted)
    try:
        for load in loads:
            with suppress(DataNotGiven):
                load()
    finally:
        _CONSULTED.reset(token)
    read = {
        Path(p).relative_to(every_layout).as_posix()
        for p, identity in consulted.items()
        if identity and identity[0] == "file" and Path(p).is_relative_to(every_layout)
    }
    pins = set(json.loads((every_layout / LOCK_NAME).read_text())["files"])
    assert set(OTHER_LAYOUTS) <= read and read <= pins, read - pins


def test_an_absent_or_misplaced_file_a_loader_would_read_is_named(data, capsys):
    shutil.rmtree(data / "mrcr" / "2needle")
    (data / "nolima" / "needlesets" / "needle_set.json").unlink()
    (data / "nolima" / "needlesets" / "needle_set.json").mkdir()
    assert main(["data", "verify", str(data)]) == 1
    out = capsys.readouterr().out
    assert (
        "optional  mrcr_2needle     mrcr/2needle/*.parquet or mrcr/2needle.parquet  (absent: its "
        "cases skip" in out
    )
    assert "bad       nolima           nolima/needlesets/needle_set.json  (is a folder" in out
    assert "pinned in ctxgate-data.lock.json but absent" in out


@pytest.mark.parametrize(
    ("lock", "refusal"),
    [
        ('{"files": ' + "[" * 100_000, ": JSON nested deeper than the parser reads; delete it"),
        (
            '{"files": {"icl/trec/test.jsonl": 5}}',
            ": not a lock file (no 'files' table of checksums)",
        ),
        ("[1]", ": not a lock file (no 'files' table of checksums); delete it"),
        (None, ": is a FIFO, where a file goes; delete it"),  # never opened: it would block
    ],
    ids=["nested", "not-a-checksum", "not-a-table", "fifo"],
)
def test_a_lock_file_that_cannot_be_read_is_one_line(data, capsys, lock, refusal):
    import os

    path = data / LOCK_NAME
    path.unlink()
    if lock is None:
        os.mkfifo(path)
    else:
        path.write_text(lock)
    assert main(["data", "verify", str(data)]) != 0
    err = capsys.readouterr().err.strip()
    assert f"{path}{refusal}" in err and "\n" not in err, err
