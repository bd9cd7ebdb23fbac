"""The one door for foreign data files (``ctxgate.sources.door``): its readers, and HELMET's
loaders that go through it, fed structured garbage (deep nesting, wrong JSON types, bad encodings,
empty files, sizes, a folder where the file goes), answer with a valid result or one designed line
naming the file, never another exception: what the data libraries (datasets, pyarrow, json) refuse
among it too."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxgate.sources import door
from ctxgate.sources.errors import DataUnavailable
from ctxgate.sources.files import iter_rows, load_rows
from tests.foreign import (
    SETTINGS,
    foreign_text,
    fresh,
    json_values,
    nested,
    one_line,
    parquet,
    raw_strings,
    use_scratch,
)


@pytest.fixture(scope="module", autouse=True)
def _scratch(tmp_path_factory: pytest.TempPathFactory) -> None:
    use_scratch(tmp_path_factory)


@SETTINGS
@given(data=foreign_text(), suffix=st.sampled_from([".jsonl", ".json"]))
# what the door passes and datasets or pyarrow refuse, each in its own words
@example(data=b'{"x": {"\\u0000": {}}}', suffix=".jsonl")  # a key datasets cannot decode (KeyError)
@example(data=b'{"x": {"\\u0000a": 1, "\\u0000b": 2}}', suffix=".json")  # two keys as one
@example(data=b'{"\\u0000": 1}', suffix=".jsonl")  # a column datasets cannot cast (CastError)
@example(data=b'{"x": "\\ud800"}', suffix=".jsonl")  # a lone surrogate (ArrowInvalid)
@example(data=b'{"x": 1e999}', suffix=".json")  # a number past a double (ArrowInvalid)
@example(data=b'{"x": 1, "x": 2}', suffix=".jsonl")  # a key twice (ArrowInvalid)
@example(data=b"{}", suffix=".jsonl")  # no columns: no data to datasets (ValueError)
def test_a_records_file_is_read_or_named_in_one_line(data, suffix):
    path = fresh() / f"d{suffix}"
    path.write_bytes(data)
    problem = door.problem(path)
    try:
        rows = load_rows(str(path), "train", None, "restore it")
    except DataUnavailable as exc:
        one_line(exc, path)
        return
    assert problem is None and rows and all(isinstance(r, dict) for r in rows)


@SETTINGS
@given(data=foreign_text())
def test_a_json_document_is_parsed_or_named_in_one_line(data):
    path = fresh() / "set.json"
    path.write_bytes(data)
    try:
        doc = door.json_document(path, "restore it")
    except DataUnavailable as exc:
        one_line(exc, path)
        assert str(exc).endswith("; restore it")
        return
    assert doc == json.loads(data.decode("utf-8"))


@SETTINGS
@given(text=st.one_of(nested(), st.text(max_size=20), json_values))
def test_json_in_a_field_is_parsed_or_named_in_one_line(text):
    try:
        door.json_field(text, "f.parquet: row 1: field prompt", "restore it")
    except DataUnavailable as exc:
        one_line(exc, "f.parquet: row 1: field prompt")


@SETTINGS
@given(
    cells=st.lists(
        st.one_of(st.text(max_size=6).map(str.encode), st.binary(max_size=6)),
        max_size=40,
    )
)
def test_parquet_text_that_is_not_utf8_is_named_with_its_rows(cells):
    path = parquet(fresh() / "t.parquet", {"text": raw_strings(cells)})
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
    path = fresh() / "t.parquet"
    path.write_bytes(data)
    problem = door.problem(path)
    assert problem is not None and problem.startswith(f"{path}: ") and "\n" not in problem


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

    root = fresh()
    (root / "kilt").mkdir()
    record = {**RAG_RECORD, **changes}
    test = root / "kilt" / "nq-dev-multikilt_1000_k20_dep6.jsonl"
    test.write_text(json.dumps(record) + "\n")
    (root / "kilt" / "nq-train-multikilt_1000_k3_dep6.jsonl").write_text(json.dumps(RAG_RECORD))
    fault = RAG_TESTS["kilt_nq"].fault(record)
    try:
        load_rag("kilt_nq", str(root))
    except DataUnavailable as exc:
        one_line(exc, test)
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
    one_line(refused.value, path)


# JSON the door passes and the data libraries may not: keys of control characters, empty or
# repeated, numbers past a double, lone surrogates
EDGE_KEYS = st.sampled_from(["x", "", "\x00", "\x00a", "a.b", "\ud800"])
EDGE_VALUES = st.sampled_from(
    ["1", "1e999", "{}", '{"\\u0000": {}}', '"\\ud800"', '[1, "a"]', "null"]
)
edge_records = st.lists(
    st.lists(st.tuples(EDGE_KEYS, EDGE_VALUES), max_size=3).map(
        lambda pairs: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in pairs) + "}"
    ),
    min_size=1,
    max_size=3,
).map("\n".join)


@SETTINGS
@given(text=edge_records, suffix=st.sampled_from([".jsonl", ".json"]))
def test_records_the_data_libraries_may_refuse_are_read_or_named_in_one_line(text, suffix):
    path = fresh() / f"d{suffix}"
    path.write_text(text)
    try:
        rows = load_rows(str(path), "train", None, "restore it")
    except DataUnavailable as exc:
        assert type(exc) is DataUnavailable and str(exc).endswith("; restore it")
        one_line(exc, path)
        return
    assert door.problem(path) is None and all(isinstance(r, dict) for r in rows)


def _bytes(data: bytes) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_bytes(data)

    return write


def _parquet_of(table: pa.Table) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        import pyarrow.parquet as pq

        pq.write_table(table, path)

    return write


def _saved(broken: str) -> Callable[[Path], None]:
    """A ``save_to_disk`` folder whose ``broken`` file holds garbage."""

    def write(path: Path) -> None:
        import datasets

        datasets.Dataset.from_list([{"x": 1}]).save_to_disk(str(path))
        target = next(path.glob(broken))
        target.write_bytes(b"{" if target.suffix == ".json" else b"garbage")

    return write


_A_MAP = pa.array([[("k", 1)]], type=pa.map_(pa.string(), pa.int64()))
_TWICE = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
# per data library and what it refuses: the file, how it is written, its refusal after the path
LIBRARY_FAILURES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    "datasets-decode": (
        "d.jsonl",
        _bytes(b'{"x": {"\\u0000": {}}}'),
        ", record 1: cannot be read (KeyError: '\\x00')",
    ),
    "datasets-cast": (
        "d.jsonl",
        _bytes(b'{"\\u0000": 1}'),
        r": cannot be read (CastError: Couldn't cast \x00: int64",
    ),
    "pyarrow-json": ("d.json", _bytes(b'{"x": 1e999}'), ": cannot be read (ArrowInvalid: JSON"),
    "datasets-parquet": (
        "d.parquet",
        _parquet_of(pa.table({"m": _A_MAP})),
        ": cannot be read (ValueError: Arrow type map<string, int64",
    ),
    "pyarrow-parquet": (
        "d.parquet",
        _parquet_of(_TWICE),
        ": cannot be read (ArrowInvalid: Multiple matches for FieldRef.Name(a)",
    ),
    "datasets-folder-json": (
        "saved",
        _saved("state.json"),
        ": cannot be read (JSONDecodeError: Expecting property name",
    ),
    "datasets-folder-arrow": ("saved", _saved("*.arrow"), ": cannot be read (ArrowInvalid: "),
}


@pytest.mark.parametrize("library", list(LIBRARY_FAILURES))
def test_what_a_data_library_refuses_is_the_doors_one_line(tmp_path, library):
    name, write, refusal = LIBRARY_FAILURES[library]
    path = tmp_path / name
    write(path)
    assert path.is_dir() or door.problem(path) is None  # the door reads it: the library does not
    with pytest.raises(DataUnavailable) as refused:
        load_rows(str(path), "train", None, "restore it")
    assert type(refused.value) is DataUnavailable and str(refused.value).endswith("; restore it")
    assert str(refused.value).startswith(f"{path}{refusal}"), refused.value
    one_line(refused.value, path)


def test_rows_one_at_a_time_are_load_rows_records_and_refused_with_the_same_line(tmp_path):
    """``iter_rows`` (a caller that keeps only what it derives from a large file) reads what
    ``load_rows`` reads, and a record it cannot decode is the same one line, when it is reached."""
    good = tmp_path / "good.jsonl"
    good.write_text("".join(f'{{"x": {i}, "y": "r{i}"}}\n' for i in range(3)))
    assert tuple(iter_rows(str(good), "train", None, "restore it")) == load_rows(
        str(good), "train", None, "restore it"
    )
    name, write, refusal = LIBRARY_FAILURES["datasets-decode"]
    bad = tmp_path / name
    write(bad)
    rows = iter_rows(str(bad), "train", None, "restore it")  # nothing read yet
    with pytest.raises(DataUnavailable) as refused:
        next(rows)
    assert str(refused.value).startswith(f"{bad}{refusal}"), refused.value


RECORD = st.fixed_dictionaries(
    {
        "id": st.one_of(st.none(), st.integers(-(2**62), 2**62)),
        "question": st.text(),
        "context": st.fixed_dictionaries(
            {"title": st.lists(st.text()), "sentences": st.lists(st.lists(st.text()))}
        ),
    }
)


@settings(max_examples=12, deadline=None)
@given(
    records=st.lists(RECORD, min_size=1, max_size=40),
    batch=st.integers(1, 8),
    parquet=st.booleans(),
)
def test_rows_one_at_a_time_are_the_librarys_rows(tmp_path_factory, records, batch, parquet):
    """What ``iter_rows`` reads from the dataset's Arrow files a batch at a time is what datasets
    gives row by row: every value, in order, across batches (a parquet file's row groups)."""
    import datasets

    folder = tmp_path_factory.mktemp("rows")
    if parquet:
        path = folder / "r.parquet"
        pq.write_table(pa.Table.from_pylist(records), path, row_group_size=batch)
    else:
        path = folder / "r.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    kind = "parquet" if parquet else "json"
    expected = list(datasets.load_dataset(kind, data_files=str(path), split="train"))
    assert list(iter_rows(str(path), "train", None, "restore it")) == expected


@pytest.mark.parametrize(
    ("body", "refusal"),
    [
        ("[" * 100_000 + "]" * 100_000, "JSON nested deeper than the parser reads"),  # Recursion
        ('{"x": ' + "7" * 5_000 + "}", "not readable JSON (Exceeds the limit"),  # ValueError
        ('{"x": }', "not valid JSON (Expecting value: line 1 column 7)"),  # JSONDecodeError
    ],
    ids=["nesting", "digits", "syntax"],
)
def test_what_the_json_library_refuses_is_the_doors_one_line(tmp_path, body, refusal):
    path = tmp_path / "set.json"
    path.write_text(body)
    with pytest.raises(DataUnavailable) as refused:
        door.json_document(path, "restore it")
    assert str(refused.value).startswith(f"{path}: {refusal}"), refused.value
    one_line(refused.value, path)
