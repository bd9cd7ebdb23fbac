"""The one door for foreign data files (``ctxgate.sources.door``): its readers, and HELMET's
loaders that go through it, fed structured garbage (deep nesting, wrong JSON types, bad encodings,
empty files, sizes, a folder where the file goes), answer with a valid result or one designed line
naming the file, never another exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ctxgate.sources import door
from ctxgate.sources.errors import DataUnavailable
from ctxgate.sources.files import load_rows
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
@example(data=b'{"x": {"\\u0000": {}}}', suffix=".jsonl")  # a key datasets cannot decode
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
