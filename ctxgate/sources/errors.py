"""The errors a task's data raises. Which one decides the gates (``gate.verdicts``): data not given
leaves an ungated case skipped, data given but unreadable always fails."""

from ctxgate.records.refusal import Refusal


class DataUnavailable(Refusal, RuntimeError):
    """A task's data was given but cannot be used; the message names the file (and line) and ends
    with the fix."""

    cause = "data_unreadable"


class DataNotGiven(DataUnavailable):
    """A task's data was not provided (a run never downloads); the message names the path that was
    expected and the flag that provides it."""

    cause = "data_not_given"
