"""Root conftest. The plugins normally load through the installed ``pytest11`` entry point (``ctxgate_plugins``);
from a checkout that is not installed, they load from ./plugins here."""

import importlib.util

pytest_plugins = [] if importlib.util.find_spec("ctxgate_plugins") else ["plugins"]
