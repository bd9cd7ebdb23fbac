"""Foreign data for the tests of the one door (``ctxgate.sources.door``) and the loaders that go
through it: structured garbage (deep nesting, wrong JSON types, bad encodings, empty files), a
scratch folder per example, and the one-line check every refusal meets."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

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


def one_line(exc: BaseException, path: object) -> None:
    message = str(exc)
    assert str(path) in message and "\n" not in message and "Traceback" not in message, message


_SCRATCH: list[Path] = []  # the module's temporary folder, which pytest cleans up


def use_scratch(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A test module's scratch folder (its module-scoped fixture calls this): ``fresh`` makes
    folders in it."""
    _SCRATCH[:] = [tmp_path_factory.mktemp("foreign")]


def fresh() -> Path:
    """A folder of its own per example: loaders remember results per path."""
    return Path(tempfile.mkdtemp(dir=_SCRATCH[0]))


def parquet(path: Path, columns: dict[str, pa.Array]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def raw_strings(values: list[bytes]) -> pa.Array:
    """A string column holding any bytes: Arrow checks UTF-8 only when asked to validate."""
    offsets, at = [0], 0
    for v in values:
        at += len(v)
        offsets.append(at)
    buffers = [None, pa.array(offsets, pa.int32()).buffers()[1], pa.py_buffer(b"".join(values))]
    return pa.Array.from_buffers(pa.string(), len(values), buffers)
