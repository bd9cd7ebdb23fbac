"""What cuts a run's cost: ``--sequential`` (each case stops once its verdict is certain, a test by
betting) and ``--search-effective-length`` (the lengths shortest first, those past the one that
decides the effective length left out; with ``--sequential``, RULER's cases at a length drawn in
rounds that the average's own test stops)."""
