"""Experiment trackers: a run's scores logged at the checkpoint's training step, where teams watch
their loss curves. ``metrics`` turns a report into flat metric names (pure); each tracker module
writes them through the tracker's own library, imported only when it is asked for."""
