"""Judging a run: thresholds.toml, the per-case and session verdicts, baselines, per-length
summaries."""
