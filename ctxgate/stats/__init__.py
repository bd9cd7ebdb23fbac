"""Statistics, pure functions: intervals, paired differences, sequential tests."""
