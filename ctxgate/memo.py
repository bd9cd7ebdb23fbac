"""Memos of what was built from files, valid only while those files are as they were.

``@memo(maxsize)`` remembers a loader's result per arguments with the identity (size or entry
count, and mtime) of every file and folder it consulted through ``is_file``/``is_dir``/``noted``,
nested loaders' included, and uses it only while each is the same: an edited, added or removed
data file is read again, also within one process (bisect, watch). Failures are never remembered.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from contextvars import ContextVar
from functools import wraps
from pathlib import Path
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
Identity = tuple[str, int, int] | None  # (kind, size or entry count, mtime_ns); None: absent

_CONSULTED: ContextVar[dict[str, Identity] | None] = ContextVar(
    "ctxgate_memo_consulted", default=None
)


def identity(path: str | os.PathLike[str]) -> Identity:
    try:
        st = os.stat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        try:
            count = len(os.listdir(path))
        except OSError:
            count = -1
        return ("dir", count, st.st_mtime_ns)
    # a FIFO, socket or device is no file to read (the data door names which it is)
    return ("file" if stat.S_ISREG(st.st_mode) else "other", st.st_size, st.st_mtime_ns)


def noted(path: str | os.PathLike[str]) -> Identity:
    """Record that the running loaders read ``path``; its identity now."""
    now = identity(path)
    consulted = _CONSULTED.get()
    if consulted is not None:
        consulted.setdefault(os.fspath(path), now)
    return now


def is_file(path: Path) -> bool:
    found = noted(path)
    return found is not None and found[0] == "file"


def is_dir(path: Path) -> bool:
    found = noted(path)
    return found is not None and found[0] == "dir"


def memo(maxsize: int) -> Callable[[Callable[P, R]], Callable[P, R]]:
    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        entries: OrderedDict[Hashable, tuple[R, dict[str, Identity]]] = OrderedDict()
        lock = threading.Lock()

        @wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            key = (args, tuple(sorted(kwargs.items())))
            outer = _CONSULTED.get()
            with lock:
                hit = entries.get(key)
            if hit is not None and all(identity(p) == was for p, was in hit[1].items()):
                result, consulted = hit
                with lock:
                    if key in entries:
                        entries.move_to_end(key)
            else:
                consulted = {}
                token = _CONSULTED.set(consulted)
                try:
                    result = fn(*args, **kwargs)
                finally:
                    _CONSULTED.reset(token)
                with lock:
                    entries[key] = (result, consulted)
                    entries.move_to_end(key)
                    while len(entries) > maxsize:
                        entries.popitem(last=False)
            if outer is not None:  # passed up to the loaders that called this one
                for p, was in consulted.items():
                    outer.setdefault(p, was)
            return result

        wrapper.cache_clear = entries.clear  # type: ignore[attr-defined]
        return wrapper

    return decorate
