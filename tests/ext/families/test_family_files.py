"""The families' loaders (BABILong's sets, NoLiMa's needle set, OpenAI MRCR's parquet files) through
the one door, fed structured garbage: a valid result or one designed line naming the file."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxgate.ext.families.babilong_files import load_set
from ctxgate.ext.families.mrcr_files import load_mrcr
from ctxgate.ext.families.nolima_files import load_official
from ctxgate.sources.errors import DataUnavailable
from fixtures.make_family_fixtures import NOLIMA_NEEDLES, official_row
from tests.foreign import (
    FEW,
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
    root = fresh()
    path = root / where
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    try:
        load(root)
    except DataUnavailable as exc:
        one_line(exc, path)


@pytest.mark.parametrize("family", sorted(LOADERS))
def test_a_folder_where_a_familys_file_goes_is_named_not_taken_for_absent(family, tmp_path):
    where, load = LOADERS[family]
    (tmp_path / where).mkdir(parents=True)
    with pytest.raises(DataUnavailable, match="is a folder, where a file goes") as refused:
        load(tmp_path)
    assert type(refused.value) is DataUnavailable  # not "not given": the case fails, not skips
    one_line(refused.value, tmp_path / where)


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
    one_line(refused.value, path)


def test_a_deep_needle_set_is_one_line():
    root = fresh()
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
    return parquet(root / where, {"prompt": prompts, **columns})


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
    root = fresh()
    path = _mrcr_file(root, raw_strings([prompt]))
    try:
        _mrcr_rows(root)
    except DataUnavailable as exc:
        one_line(exc, path)


def test_non_utf8_bytes_in_an_mrcr_parquet_name_the_file_and_rows(tmp_path):
    good = json.dumps([{"role": "user", "content": "hi"}]).encode()
    path = _mrcr_file(tmp_path, raw_strings([good, b'[{"role": "user", "content": "\xff"}]']))
    with pytest.raises(DataUnavailable, match="rows 1-2: holds text that is not UTF-8") as refused:
        load_mrcr(str(tmp_path), 2)
    one_line(refused.value, f"{path}, rows 1-2")


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
    one_line(refused.value, path)
