"""``python -m ctxgate``: the same command line as the ``ctxgate`` script, named so in its help and
messages."""

import sys

from ctxgate.cli import main

sys.exit(main())
