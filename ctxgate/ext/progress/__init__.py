"""The live progress line: each running case, its samples done, tokens per second and an ETA, on
the terminal while the suite runs."""
