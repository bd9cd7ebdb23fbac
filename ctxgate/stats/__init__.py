"""Statistics, pure functions: intervals, paired differences, sequential tests. Imports nothing of ctxgate."""
