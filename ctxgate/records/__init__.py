"""The report's file format, below everything that writes or reads one: its schema and words
(``schema.py``) and its reading and atomic writing (``io.py``). The gates (``ctxgate.gate``) and the
report (``ctxgate.report``) both stand on it, so neither depends on the other's package."""
