"""Root conftest. The plugins normally load through the installed ``pytest11`` entry point
(``ctxgate_plugins``); from a checkout that is not installed, importing ./plugins registers it under
that one name, and they load here.

``pytest_plugins`` is defined only in that case: pytest refuses the name in a conftest outside its
rootdir, and an absolute ``--model`` moves the rootdir (see pytest_configure in plugins/options.py).
"""

import importlib.util

if not importlib.util.find_spec("ctxgate_plugins"):
    import plugins  # noqa: F401  (registers ctxgate_plugins)

    pytest_plugins = ["ctxgate_plugins"]
