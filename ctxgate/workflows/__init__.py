"""Workflows over stored runs and checkpoint directories, one per ``ctxgate`` verb (each module
holds its verb's parser beside its code): diff, bisect, trend, watch, metrics, judge, rescore, data."""

import sys


def refuse(verb: str, message: object) -> int:
    """Say on stderr why ``ctxgate VERB`` stops (the message names the bad value and the fix): exit status 2."""
    print(f"ctxgate {verb}: {message}", file=sys.stderr)
    return 2
