"""What cuts a run's cost: ``--sequential`` (each case stops once its verdict is certain, a test by
betting) and ``--search-effective-length`` (the lengths shortest first, a case left out past the
lengths that decided every effective length it counts in; with ``--sequential``, RULER's cases at a
length drawn in rounds that the average's own test stops)."""
