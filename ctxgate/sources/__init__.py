"""Data for HELMET's application tasks: HELMET's released layout (``--data-dir``; RAG and re-rank
need it: their hard negatives come from a retriever run that cannot be redone here) and public
datasets in their hub layout, from ``--data-dir`` when there, else the local hub cache.
"""

from ctxgate.sources.errors import DataNotGiven, DataUnavailable

__all__ = ["DataNotGiven", "DataUnavailable"]
