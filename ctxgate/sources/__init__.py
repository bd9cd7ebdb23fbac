"""Released benchmark files (``--data-dir``) and hub datasets (there, else the local hub cache)."""

from ctxgate.sources.errors import DataNotGiven, DataUnavailable

__all__ = ["DataNotGiven", "DataUnavailable"]
