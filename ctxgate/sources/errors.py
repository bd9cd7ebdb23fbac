"""The one error a missing or malformed data source raises; cases turn it into a skip that names the fix."""


class DataUnavailable(RuntimeError):
    """A task's data is missing or unreadable. The message ends with the command or flag that provides it."""
