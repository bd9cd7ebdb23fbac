"""Running one case: build its samples, generate them through a backend, cache each, score."""
