"""Whatever stands where a data file goes and is none (a link to nothing or to itself, a FIFO, a
socket, a device, a folder, a file this user may not read) is unreadable data: the run's case fails
(``DataUnavailable``, not ``DataNotGiven``'s skip), and the run and ``ctxgate data verify`` name it
in the same words, the door's (``ctxgate.sources.door``). Only a path with no entry is not given."""

from __future__ import annotations

import os
import signal
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ctxgate.data.haystacks import HaystackError, load_essay
from ctxgate.ext.families.nolima_files import FETCH, OFFICIAL, load_official
from ctxgate.sources import door
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.files import load_rows, read_jsonl
from ctxgate.sources.manifest import verify


def _no_read_permission(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path.write_text('{"x": 1}\n')
    path.chmod(0)
    if os.geteuid() == 0:  # root may read any file: os.access, the door's question, is a user's
        monkeypatch.setattr(os, "access", _as_a_user)


_ACCESS = os.access


def _as_a_user(path: str | os.PathLike[str], mode: int, **kwargs: bool) -> bool:
    """``os.access`` as it answers a user other than root: no permission bits, no access."""
    try:
        bits = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return False
    return bits != 0 and _ACCESS(path, mode, **kwargs)


def _block_device() -> Path:
    found = next((d for d in sorted(Path("/dev").iterdir()) if d.is_block_device()), None)
    if found is None:
        pytest.skip("no block device in /dev here")
    return found


def _socket(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as bound:  # by its name: an address is 108 bytes at most
        bound.bind(path.name)


MakeEntry = Callable[[Path, pytest.MonkeyPatch], None]
NOT_FILES: dict[str, tuple[MakeEntry, str]] = {
    "dangling-link": (lambda p, _: p.symlink_to("nowhere"), "is a dangling symbolic link"),
    "looping-link": (lambda p, _: p.symlink_to(p.name), "is a looping symbolic link"),
    "fifo": (lambda p, _: os.mkfifo(p), "is a FIFO, where a file goes"),
    "socket": (lambda p, _: _socket(p), "is a socket, where a file goes"),
    "dev-null": (lambda p, _: p.symlink_to("/dev/null"), "is a character device, where"),
    "block-device": (lambda p, _: p.symlink_to(_block_device()), "is a block device, where"),
    "folder": (lambda p, _: p.mkdir(), "is a folder, where a file goes"),
    "no-read-permission": (_no_read_permission, "is not readable by this user (mode ----------)"),
}


@pytest.fixture
def bounded() -> Iterator[None]:
    """A door that opened the FIFO would wait for a writer for ever: the test fails instead."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError("the door opened what it should only have looked at")

    before = signal.signal(signal.SIGALRM, stop)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, before)


@pytest.mark.usefixtures("bounded")
@pytest.mark.parametrize("entry", list(NOT_FILES))
def test_what_stands_where_a_file_goes_is_unreadable_data_the_run_and_verify_name_alike(
    tmp_path, monkeypatch, entry
):
    make, words = NOT_FILES[entry]
    needles, records = tmp_path / OFFICIAL, (tmp_path / "d.jsonl", tmp_path / "d.parquet")
    needles.parent.mkdir(parents=True)
    bare, haystack = tmp_path / "squad_copy", tmp_path / "essay"  # a dataset folder's names
    for path in (needles, *records, bare, haystack):
        monkeypatch.chdir(path.parent)  # a socket is bound by its name, from its folder
        make(path, monkeypatch)
    (found,) = [f for f in verify(tmp_path) if f.task == "nolima"]
    assert found.status == "bad" and found.detail.startswith(words), found
    with pytest.raises(DataUnavailable) as run:
        load_official(str(tmp_path))
    assert type(run.value) is DataUnavailable  # fails the case: not DataNotGiven's skip
    assert str(run.value) == f"{needles}: {found.detail}; restore the file ({FETCH})"
    for path in records:
        with pytest.raises(DataUnavailable) as read:
            load_rows(str(path), "train", None, "restore it")
        assert type(read.value) is DataUnavailable
        assert str(read.value) == f"{path}: {found.detail}; restore it"
    if entry != "folder":  # a folder is a save_to_disk dataset's, read as one
        with pytest.raises(DataUnavailable) as bare_read:
            load_rows(str(bare), "train", None, "restore it")
        assert str(bare_read.value) == f"{bare}: {found.detail}; restore it"
        with pytest.raises(HaystackError) as essay:
            load_essay(str(haystack))
        assert str(essay.value).startswith(f"--haystack {haystack}: {found.detail}; give")


def test_only_a_path_with_no_entry_at_all_is_data_not_given(tmp_path):
    (tmp_path / OFFICIAL).parent.mkdir(parents=True)  # the folder, and no file in it
    (found,) = [f for f in verify(tmp_path) if f.task == "nolima"]
    assert found.status == "optional"
    with pytest.raises(DataNotGiven, match=" does not exist; restore it$"):
        door.json_document(tmp_path / OFFICIAL, "restore it")
    with pytest.raises(DataNotGiven, match=" does not exist; "):
        read_jsonl(tmp_path / "d.jsonl")
    with pytest.raises(DataNotGiven, match=" does not exist; restore it$"):
        load_rows(str(tmp_path / "d.parquet"), "train", None, "restore it")


def test_a_looping_needle_set_fails_the_nolima_case_in_the_words_verify_says(
    tmp_path, byte_encoder
):
    from ctxgate.tasks import BuildContext, get_task
    from ctxgate.tasks.build import build_sample

    needles = tmp_path / OFFICIAL
    needles.parent.mkdir(parents=True)
    needles.symlink_to(needles.name)
    (found,) = [f for f in verify(tmp_path) if f.task == "nolima"]
    ctx = BuildContext(encoder=byte_encoder, chat=False, seed=42, data_dir=str(tmp_path))
    with pytest.raises(DataUnavailable) as run:
        build_sample(get_task("nolima"), ctx, 4096, 0, 42)
    assert type(run.value) is DataUnavailable, run.value  # the case fails: no skip
    assert f"{needles}: {found.detail}; " in str(run.value) and found.status == "bad"
