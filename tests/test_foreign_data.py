"""The one door for foreign data files (``ctxgate.sources.door``): its readers, and the family
loaders that go through it, fed structured garbage (deep nesting, wrong JSON types, bad encodings,
empty files, sizes, a folder where the file goes), answer with a valid result or one designed line
naming the file, never another exception."""

from __future__ import annotations

import json
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxgate.ext.families.babilong_files import load_set
from ctxgate.ext.families.mrcr_files import load_mrcr
from ctxgate.ext.families.nolima_files import load_official
from ctxgate.sources import door
from ctxgate.sources.errors import DataUnavailable
from ctxgate.sources.files import load_rows
from fixtures.make_family_fixtures import NOLIMA_NEEDLES, official_row

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
FEW = settings(max_examples=12, deadline=None)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=10,
)


@st.composite
def nested(draw: st.DrawFn) -> str:
    """JSON nested from one level to far past the parser's recursion limit."""
    depth = draw(st.sampled_from([1, 50, 900, 2_000, 100_000]))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
    return opener * depth + "1" + closer * depth


@st.composite
def foreign_text(draw: st.DrawFn) -> bytes:
    """What a data file may hold: records, wrong JSON types, deep nesting, huge numbers, other
    encodings, empty or blank, or any bytes."""
    how = draw(
        st.sampled_from(["records", "value", "nested", "digits", "encoded", "blank", "bytes"])
    )
    if how == "records":
        rows = draw(st.lists(st.dictionaries(st.sampled_from("xyz"), json_values), max_size=3))
        return "\n".join(map(json.dumps, rows)).encode()
    if how == "value":
        return json.dumps(draw(json_values)).encode()
    if how == "nested":
        return draw(nested()).encode()
    if how == "digits":
        return b'{"x": ' + b"7" * draw(st.sampled_from([10, 5_000])) + b"}"
    if how == "encoded":
        text = json.dumps([{"x": draw(st.text(min_size=1, max_size=6))}], ensure_ascii=False)
        return text.encode(
            draw(st.sampled_from(["utf-16", "latin-1", "cp1252", "utf-8-sig"])), "replace"
        )
    if how == "blank":
        return draw(st.sampled_from([b"", b"\n", b"  \n\t"]))
    return draw(st.binary(max_size=200))


def _one_line(exc: BaseException, path: object) -> None:
    message = str(exc)
    assert str(path) in message and "\n" not in message and "Traceback" not in message, message


_SCRATCH: list[Path] = []  # this module's temporary folder, which pytest cleans up


@pytest.fixture(scope="module", autouse=True)
def _scratch(tmp_path_factory: pytest.TempPathFactory) -> None:
    _SCRATCH[:] = [tmp_path_factory.mktemp("foreign")]


def _fresh() -> Path:
    """A folder of its own per example: loaders remember results per path."""
    return Path(tempfile.mkdtemp(dir=_SCRATCH[0]))


@SETTINGS
@given(data=foreign_text(), suffix=st.sampled_from([".jsonl", ".json"]))
def test_a_records_file_is_read_or_named_in_one_line(data, suffix):
    path = _fresh() / f"d{suffix}"
    path.write_bytes(data)
    problem = door.problem(path)
    try:
        rows = load_rows(str(path), "train", None, "restore it")
    except DataUnavailable as exc:
        _one_line(exc, path)
        return
    assert problem is None and rows and all(isinstance(r, dict) for r in rows)


@SETTINGS
@given(data=foreign_text())
def test_a_json_document_is_parsed_or_named_in_one_line(data):
    path = _fresh() / "set.json"
    path.write_bytes(data)
    try:
        doc = door.json_document(path, "restore it")
    except DataUnavailable as exc:
        _one_line(exc, path)
        assert str(exc).endswith("; restore it")
        return
    assert doc == json.loads(data.decode("utf-8"))


@SETTINGS
@given(text=st.one_of(nested(), st.text(max_size=20), json_values))
def test_json_in_a_field_is_parsed_or_named_in_one_line(text):
    try:
        door.json_field(text, "f.parquet: row 1: field prompt", "restore it")
    except DataUnavailable as exc:
        _one_line(exc, "f.parquet: row 1: field prompt")


def _parquet(path: Path, columns: dict[str, pa.Array]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def _raw_strings(values: list[bytes]) -> pa.Array:
    """A string column holding any bytes: Arrow checks UTF-8 only when asked to validate."""
    offsets, at = [0], 0
    for v in values:
        at += len(v)
        offsets.append(at)
    buffers = [None, pa.array(offsets, pa.int32()).buffers()[1], pa.py_buffer(b"".join(values))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers)


@SETTINGS
@given(
    cells=st.lists(
        st.one_of(st.text(max_size=6).map(str.encode), st.binary(max_size=6)),
        max_size=40,
    )
)
def test_parquet_text_that_is_not_utf8_is_named_with_its_rows(cells):
    path = _parquet(_fresh() / "t.parquet", {"text": _raw_strings(cells)})
    problem = door.problem(path)
    valid = all(_utf8(c) for c in cells)
    if cells and valid:
        assert problem is None
    else:
        assert problem is not None and problem.startswith(str(path)) and "\n" not in problem
        assert ("not UTF-8" in problem) if cells else ("no rows" in problem)


def _utf8(cell: bytes) -> bool:
    try:
        cell.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@SETTINGS
@given(data=st.one_of(st.binary(max_size=300), foreign_text()))
def test_any_bytes_under_a_parquet_name_are_named_in_one_line(data):
    path = _fresh() / "t.parquet"
    path.write_bytes(data)
    problem = door.problem(path)
    assert problem is not None and problem.startswith(f"{path}: ") and "\n" not in problem


# the family loaders, through the door
# --------------------------------------------------------------------------------------------------


def _babilong(root: Path) -> object:
    return load_set("babilong_qa1", "qa1", str(root), 1024)


def _nolima(root: Path) -> object:
    return load_official(str(root))


LOADERS: dict[str, tuple[str, Callable[[Path], object]]] = {
    "babilong": ("babilong/data/qa1/1k.json", _babilong),
    "nolima": ("nolima/needlesets/needle_set.json", _nolima),
}


@pytest.mark.parametrize("family", sorted(LOADERS))
@SETTINGS
@given(data=foreign_text())
def test_a_familys_file_is_read_or_refused_in_one_line(family, data):
    where, load = LOADERS[family]
    root = _fresh()
    path = root / where
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    try:
        load(root)
    except DataUnavailable as exc:
        _one_line(exc, path)


@pytest.mark.parametrize("family", sorted(LOADERS))
def test_a_folder_where_a_familys_file_goes_is_named_not_taken_for_absent(family, tmp_path):
    where, load = LOADERS[family]
    (tmp_path / where).mkdir(parents=True)
    with pytest.raises(DataUnavailable, match="is a folder, where a file goes") as refused:
        load(tmp_path)
    assert type(refused.value) is DataUnavailable  # not "not given": the case fails, not skips
    _one_line(refused.value, tmp_path / where)


@pytest.mark.parametrize(
    ("body", "why"),
    [(b"", "is empty"), (b"[]", "holds no records"), (b"[" * 9000 + b"]" * 9000, "nested deeper")],
)
def test_empty_and_deep_babilong_sets_say_what_is_wrong(tmp_path, body, why):
    path = tmp_path / "babilong" / "data" / "qa1" / "1k.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(body)
    with pytest.raises(DataUnavailable, match=why) as refused:
        _babilong(tmp_path)
    _one_line(refused.value, path)


def test_a_deep_needle_set_is_one_line():
    root = _fresh()
    path = root / "nolima" / "needlesets" / "needle_set.json"
    path.parent.mkdir(parents=True)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataUnavailable, match="nested deeper than the parser reads"):
        load_official(str(root))
    path.write_text(json.dumps(NOLIMA_NEEDLES))
    assert load_official(str(root)).cases


def _mrcr_file(root: Path, prompts: pa.Array, single: bool = False) -> Path:
    row = official_row(random.Random(0), 2, 4)
    n = len(prompts)
    where = "mrcr/2needle.parquet" if single else "mrcr/2needle/2needle_0.parquet"
    columns = {k: pa.array([row[k]] * n) for k in row if k != "prompt"}
    return _parquet(root / where, {"prompt": prompts, **columns})


def _mrcr_rows(root: Path) -> None:
    data = load_mrcr(str(root), 2)
    for i in range(len(data)):
        data.row(i)


@FEW
@given(
    prompt=st.one_of(
        nested().map(str.encode),
        st.binary(max_size=12),
        json_values.map(lambda v: json.dumps(v).encode()),
    )
)
def test_any_mrcr_prompt_is_read_or_refused_in_one_line(prompt):
    root = _fresh()
    path = _mrcr_file(root, _raw_strings([prompt]))
    try:
        _mrcr_rows(root)
    except DataUnavailable as exc:
        _one_line(exc, path)


def test_non_utf8_bytes_in_an_mrcr_parquet_name_the_file_and_rows(tmp_path):
    good = json.dumps([{"role": "user", "content": "hi"}]).encode()
    path = _mrcr_file(tmp_path, _raw_strings([good, b'[{"role": "user", "content": "\xff"}]']))
    with pytest.raises(DataUnavailable, match="rows 1-2: holds text that is not UTF-8") as refused:
        load_mrcr(str(tmp_path), 2)
    _one_line(refused.value, f"{path}, rows 1-2")


@pytest.mark.parametrize("how", ["empty", "no rows", "folder"])
def test_an_empty_or_folder_mrcr_file_says_so(tmp_path, how):
    path = tmp_path / "mrcr" / "2needle.parquet"
    path.parent.mkdir(parents=True)
    if how == "empty":
        path.write_bytes(b"")
    elif how == "no rows":
        _mrcr_file(tmp_path, pa.array([], pa.string()), single=True)
    else:
        path.mkdir()
    why = {"empty": "is empty", "no rows": "holds no rows", "folder": "is a folder"}[how]
    with pytest.raises(DataUnavailable, match=why) as refused:
        load_mrcr(str(tmp_path), 2)
    assert type(refused.value) is DataUnavailable
    _one_line(refused.value, path)


# a field of another JSON kind than its loader relies on (HELMET's records)
# --------------------------------------------------------------------------------------------------

RAG_RECORD = {
    "id": "q1",
    "question": "which river does Kariton stand on",
    "answers": ["Neme"],
    "ctxs": [
        {"id": "1", "title": "Kariton", "text": "Kariton stands on the Neme.", "has_answer": True}
    ],
}
OTHER_KINDS = st.sampled_from([None, True, 7, 2.5, "text", [], ["a"], {}, {"a": 1}])


@SETTINGS
@given(changes=st.dictionaries(st.sampled_from(["question", "answers", "ctxs"]), OTHER_KINDS))
def test_a_rag_record_of_other_kinds_is_read_or_named_by_loader_and_verify_alike(changes):
    from ctxgate.sources.helmet_files import RAG_TESTS
    from ctxgate.sources.kilt import load_rag
    from ctxgate.sources.manifest import verify

    root = _fresh()
    (root / "kilt").mkdir()
    record = {**RAG_RECORD, **changes}
    test = root / "kilt" / "nq-dev-multikilt_1000_k20_dep6.jsonl"
    test.write_text(json.dumps(record) + "\n")
    (root / "kilt" / "nq-train-multikilt_1000_k3_dep6.jsonl").write_text(json.dumps(RAG_RECORD))
    fault = RAG_TESTS["kilt_nq"].fault(record)
    try:
        load_rag("kilt_nq", str(root))
    except DataUnavailable as exc:
        _one_line(exc, test)
    else:
        assert not fault
    (found,) = [f for f in verify(root) if f.path == "kilt/nq-dev-multikilt_1000_k20_dep6.jsonl"]
    assert (found.status == "bad") == bool(fault) and fault in found.detail


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("[" * 5000 + "]" * 5000, ":1: JSON nested deeper"),
        ("7\n", ":1: a JSON number, not a record"),
    ],
)
def test_a_dataset_haystack_comes_through_the_door(tmp_path, body, why):
    from ctxgate.data.haystacks import HaystackError, load_essay

    path = tmp_path / "hay.jsonl"
    path.write_text(body)
    with pytest.raises(HaystackError, match=f"^--haystack {path}{why}") as refused:
        load_essay(str(path))
    _one_line(refused.value, path)
