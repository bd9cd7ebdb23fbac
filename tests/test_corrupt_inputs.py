"""Every reader, fed corrupt bytes (cut short, garbled, not UTF-8, the wrong shape), answers with
its own error type and a one-line message, never another exception or a traceback (Hypothesis
generates the damage)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxgate.backends.checkpoint import CheckpointError, check_checkpoint, check_safetensors
from ctxgate.data.haystacks import HaystackError, load_essay
from ctxgate.ext.training.watch import WatchError, WatchState
from ctxgate.gate.baseline import BaselineError, load_baseline
from ctxgate.gate.thresholds import ThresholdsError, parse_thresholds
from ctxgate.records.io import ReportFileError, read_predictions, read_report
from ctxgate.records.schema import to_json
from ctxgate.sources import door
from ctxgate.sources.errors import DataUnavailable
from ctxgate.sources.files import load_rows
from ctxgate.tasks.registry import task_names
from tests.conftest import TINY, prediction, stored_report

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

REPORT = json.dumps(
    stored_report(
        [
            {
                "task": "vt",
                "length": 1024,
                "verdict": "pass",
                "score": 50.0,
                "n": 2,
                "data_sha256": "ab",
            }
        ],
        predictions="r.predictions.jsonl",
    ),
    indent=1,
).encode()
PREDICTIONS = "".join(
    json.dumps(to_json(prediction("vt", 1024, i, score, sample_sha256=digest))) + "\n"
    for i, (score, digest) in enumerate([(1.0, "a"), (0.0, "b")])
).encode()
THRESHOLDS = (
    b'[defaults]\nfloor = 10\nrule = "score"\n'
    b'[[floor]]\ntask = "niah_*"\nlength = "<=32k"\nfloor = 90\n'
    b'[regression]\ntolerance = 2.0\n[[tolerance]]\ntask = "vt"\npoints = 5\n'
)
JSONL = b'{"question": "q1", "answers": ["a"]}\n{"question": "q2", "answers": ["b"]}\n'
ESSAY = ("Sentence number one is here. " * 12).encode()


@st.composite
def damaged(draw: st.DrawFn, valid: bytes) -> bytes:
    """``valid`` cut short, with bytes flipped or inserted (invalid UTF-8 among them), or replaced
    outright."""
    how = draw(st.sampled_from(["cut", "flip", "insert", "garbage", "empty"]))
    if how == "cut":
        return valid[: draw(st.integers(0, max(0, len(valid) - 1)))]
    if how == "flip":
        data = bytearray(valid)
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        return bytes(data)
    if how == "insert":
        i = draw(st.integers(0, len(valid)))
        return (
            valid[:i]
            + draw(st.sampled_from([b"\xff", b"\xc3(", b"\x00", b"{", b'"', b"\n\n]"]))
            + valid[i:]
        )
    if how == "garbage":
        return draw(st.binary(max_size=300))
    return b""


def _safetensors() -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    return struct.pack("<Q", len(header)) + header + b"\x00" * 8


def _essay(path: Path) -> object:
    load_essay.cache_clear()  # remembered by path: each example is a new file under the same name
    return load_essay(str(path))


# reader, the file name it reads, a valid file, and the one error it may raise
FILE_READERS = {
    "report": (read_report, "r.json", REPORT, ReportFileError),
    "predictions": (read_predictions, "p.jsonl", PREDICTIONS, ReportFileError),
    "safetensors": (check_safetensors, "model.safetensors", _safetensors(), CheckpointError),
    "haystack": (_essay, "hay.txt", ESSAY, HaystackError),
    "watch_state": (
        WatchState.load,
        "watch-state.json",
        b'{"done": ["checkpoint-100"], "failed": {}, "last": "checkpoint-100"}',
        WatchError,
    ),
}


def _one_line(exc: BaseException) -> None:
    message = str(exc)
    assert message and "\n" not in message and "Traceback" not in message, message


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


@SETTINGS
@given(data=damaged(THRESHOLDS))
def test_thresholds(data):
    try:
        parse_thresholds(data.decode("utf-8", errors="replace"), "t.toml", task_names())
    except ThresholdsError as exc:
        _one_line(exc)


@pytest.mark.parametrize("reader", sorted(FILE_READERS))
@SETTINGS
@given(data=st.data())
def test_file_reader(tmp_path, reader, data):
    read, name, valid, error = FILE_READERS[reader]
    path = _write(tmp_path, name, data.draw(damaged(valid)))
    try:
        read(path)
    except error as exc:
        _one_line(exc)


@SETTINGS
@given(report=damaged(REPORT), predictions=damaged(PREDICTIONS))
def test_baseline(tmp_path, report, predictions):
    _write(tmp_path, "r.predictions.jsonl", predictions)
    try:
        load_baseline(_write(tmp_path, "r.json", report))
    except BaselineError as exc:
        _one_line(exc)


@SETTINGS
@given(data=damaged(JSONL))
def test_jsonl_data(tmp_path, data):
    path = _write(tmp_path, "d.jsonl", data)
    problem = door.problem(path)
    assert problem is None or "\n" not in problem
    if problem is None:
        return  # well-formed records: datasets reads them (the slow path is the next test's)
    with pytest.raises(DataUnavailable) as caught:
        load_rows(str(path), "train", None, "fix it")
    _one_line(caught.value)
    assert str(path) in str(caught.value)


def read_whole(data: bytes) -> bool:
    """JSON lines of objects, read as one text: the door's line-at-a-time reading must agree."""
    try:
        lines = data.decode("utf-8").split("\n")
        return bool(data.strip()) and all(
            isinstance(json.loads(line), dict) for line in lines if line.strip()
        )
    except (ValueError, RecursionError):
        return False


@SETTINGS
@given(data=damaged(JSONL) | st.binary(max_size=40))
def test_jsonl_read_a_line_at_a_time_is_refused_as_read_whole(tmp_path, data):
    path = _write(tmp_path, "d.jsonl", data)
    assert (door.problem(path) is None) == read_whole(data)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    records=st.lists(
        st.dictionaries(
            st.sampled_from("abc"),
            st.one_of(st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=2)),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_records_of_mixed_shapes(tmp_path, records):
    """Lines that each parse but do not share a schema: datasets may refuse them, in one line."""
    path = _write(tmp_path, "m.jsonl", b"".join(json.dumps(r).encode() + b"\n" for r in records))
    try:
        load_rows(str(path), "train", None, "fix it")
    except DataUnavailable as exc:
        _one_line(exc)


@pytest.fixture(scope="module")
def checkpoint_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import shutil

    target = tmp_path_factory.mktemp("ck") / "ckpt"
    shutil.copytree(TINY, target, ignore=shutil.ignore_patterns("training_log.json"))
    return target


@SETTINGS
@given(
    name=st.sampled_from(
        [
            "config.json",
            "generation_config.json",
            "tokenizer_config.json",
            "special_tokens_map.json",
        ]
    ),
    data=st.data(),
)
def test_checkpoint_json_files(checkpoint_copy, name, data):
    path = checkpoint_copy / name
    original = path.read_bytes() if path.exists() else b"{}"
    try:
        path.write_bytes(data.draw(damaged(original)))
        check_checkpoint(checkpoint_copy)
    except CheckpointError as exc:
        _one_line(exc)
    finally:
        path.write_bytes(original)
