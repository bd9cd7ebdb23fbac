"""Memos of loaded data hold only while the files they read are unchanged: an edited, added or
removed file is read again in the same process, a failure is never remembered, and a loader built on
another sees the other's files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxgate.memo import is_file, memo
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import read_jsonl


def write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_an_edited_file_is_read_again(tmp_path):
    data = tmp_path / "d.jsonl"
    write(data, [{"q": "a"}])
    assert read_jsonl(data) == ({"q": "a"},)
    write(data, [{"q": "a"}, {"q": "b"}])
    assert read_jsonl(data) == ({"q": "a"}, {"q": "b"})


def test_a_failure_is_not_remembered(tmp_path):
    data = tmp_path / "d.jsonl"
    with pytest.raises(DataNotGiven):
        read_jsonl(data)
    data.write_text('{"q": "a"}\n{"q": \n')
    with pytest.raises(DataUnavailable, match="d.jsonl:2"):
        read_jsonl(data)
    write(data, [{"q": "fixed"}])
    assert read_jsonl(data) == ({"q": "fixed"},)


def test_an_added_or_removed_file_changes_the_answer(tmp_path):
    calls = []

    @memo(4)
    def present(folder: str) -> bool:
        calls.append(folder)
        return is_file(Path(folder) / "x.jsonl")

    assert present(str(tmp_path)) is False and present(str(tmp_path)) is False
    assert len(calls) == 1  # remembered while nothing changed
    write(tmp_path / "x.jsonl", [{}])
    assert present(str(tmp_path)) is True
    (tmp_path / "x.jsonl").unlink()
    assert present(str(tmp_path)) is False and len(calls) == 3


def test_a_loader_built_on_another_sees_the_inner_files(tmp_path):
    data = tmp_path / "d.jsonl"
    write(data, [{"q": "a"}])

    @memo(4)
    def count(path: str) -> int:
        return len(read_jsonl(Path(path)))

    assert count(str(data)) == 1
    assert count(str(data)) == 1  # the inner read is remembered too, and so is this
    write(data, [{"q": "a"}, {"q": "b"}, {"q": "c"}])
    assert count(str(data)) == 3


def test_the_cache_is_bounded(tmp_path):
    calls = []

    @memo(2)
    def f(x: int) -> int:
        calls.append(x)
        return x

    for x in (1, 2, 3, 1):
        f(x)
    assert calls == [1, 2, 3, 1]  # 1 was evicted by 3
