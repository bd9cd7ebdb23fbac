"""Experiment trackers: a run's scores logged at the checkpoint's training step."""
