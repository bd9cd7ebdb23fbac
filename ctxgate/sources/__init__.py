"""Data for HELMET's application tasks: its released files and hub datasets (see ``files``)."""

from ctxgate.sources.errors import DataNotGiven, DataUnavailable

__all__ = ["DataNotGiven", "DataUnavailable"]
