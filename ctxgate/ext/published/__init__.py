"""The papers' published numbers: ``--reference``, ``ctxgate published`` and ``ctxgate
reproduce``."""
