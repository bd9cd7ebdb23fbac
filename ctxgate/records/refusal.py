"""The one base of every error that says what is wrong and how to fix it; a case's designed refusal.

A ``CtxgateError``'s message names the bad value and ends with the fix, so the boundaries
(``cli.main``, the pytest plugins) only print it as one line. A ``Refusal`` is an outcome, not a
crash: the case gets no score, and ``gate.verdicts`` turns its cause into a skip or an error."""

from __future__ import annotations

from typing import ClassVar


class CtxgateError(Exception):
    """Something the user can fix; ``str(error)`` says what and how."""

    # the command line's exit status for it: 2, a refusal; 4, a usage error (pytest's own)
    exit_status: ClassVar[int] = 2

    @property
    def line(self) -> str:
        return " ".join(str(self).split())


class Unreachable(CtxgateError, RuntimeError):
    """What the run needs besides the checkpoint (a Ray cluster, its resources) could not be had:
    not the checkpoint's fault, so watch tries it again and bisect stops, rather than skip it."""


class Refusal(CtxgateError):
    """A case that cannot be built as asked; ``cause``: the report's word for why."""

    cause: ClassVar[str] = ""
