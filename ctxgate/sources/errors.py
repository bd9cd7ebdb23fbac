"""The errors a task's data raises. Which one decides whether the case fails its gates (``gate.verdicts``):
data that was not given leaves an ungated case skipped, data that was given but cannot be read always fails."""

from ctxgate.records.refusal import Refusal


class DataUnavailable(Refusal, RuntimeError):
    """A task's data was given but cannot be used (unreadable, malformed, missing fields). The message names the
    file (and line, where there is one) and ends with the fix."""

    cause = "data_unreadable"


class DataNotGiven(DataUnavailable):
    """A task's data was not provided: no --data-dir, no such file in it, or a hub dataset that is not in the local
    cache (a run never downloads). The message names the path that was expected and the flag that provides it."""

    cause = "data_not_given"
