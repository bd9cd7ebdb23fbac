"""``python -m ctxgate``: the ``ctxgate`` command line."""

import sys

from ctxgate.cli import main

sys.exit(main())
