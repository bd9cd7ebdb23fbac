"""Data for HELMET's application tasks: where it lives, how it is read, and how a folder is checked.

Two kinds of source, both read through ``datasets``:

* HELMET's released layout (its ``data/`` folder: ``kilt/*.jsonl``, ``msmarco/...``), pointed at with
  ``--data-dir``. RAG and re-rank need it: their hard negatives come from a retriever run that cannot be redone here.
* Public datasets in their hub layout (TREC, BANKING77, CLINC150, NLU, InfiniteBench): read from ``--data-dir``
  (``icl/<name>/`` and ``infbench/``) when present there, else from the local hub cache (a run never downloads).
"""

from ctxgate.sources.errors import DataNotGiven, DataUnavailable

__all__ = ["DataNotGiven", "DataUnavailable"]
