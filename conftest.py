"""Root conftest. The plugins normally load through the installed ``pytest11`` entry point (``ctxgate_plugins``);
from a checkout that is not installed, they load from ./plugins here.

``pytest_plugins`` is defined only in that case: pytest refuses the name in a conftest outside its rootdir, and an
absolute ``--model`` moves the rootdir (see plugins/options.py, _collect_the_suite)."""

import importlib.util

if not importlib.util.find_spec("ctxgate_plugins"):
    pytest_plugins = ["plugins"]
