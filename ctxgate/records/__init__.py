"""The report's file format, below everything that writes or reads one: its records (the report's
root and the run's in ``schema.py``, a case's in ``case.py``, the cost's in ``cost.py``, the
summaries' and gates' in ``summary.py``, the words they share in ``vocabulary.py``) and their
reading and atomic writing (``io.py``). The gates (``ctxgate.gate``) and the report
(``ctxgate.report``) both stand on it, so neither depends on the other's package."""
