"""The options of ``ctxgate watch`` and ``ctxgate bisect``, declared once."""

from __future__ import annotations

from ctxgate.api import Option, not_negative, positive, whole

INTERVAL = Option(
    "--interval", "seconds between scans (default %(default)s)", default=60.0, parse=positive
)
SETTLE = Option(
    "--settle",
    "seconds a checkpoint must be unchanged (default %(default)s)",
    default=30.0,
    parse=not_negative,
)
ATTEMPTS = Option(
    "--attempts",
    "evaluations of one checkpoint that may fail before it waits for its files to change (default "
    "%(default)s)",
    default=3,
    parse=whole(1),
)
# --- ctxgate bisect
TOLERANCE = Option(
    "--tolerance",
    "points a case may drop (default: the thresholds' tolerances)",
    parse=positive,
    example="2",
)

WATCH = (INTERVAL, SETTLE, ATTEMPTS)
