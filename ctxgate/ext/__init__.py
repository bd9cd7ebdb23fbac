"""The extras that ship with ctxgate: each a package here with a ``plugin`` module that answers the
hooks of ``ctxgate/hookspec.py`` and imports ctxgate only from ``ctxgate.api``. Every such package
is an extra, in name order, the order each hook lists their answers in: adding one is adding its
folder (and its line in pyproject.toml's packages, which tests/test_layout.py holds)."""

import importlib
import pkgutil

PLUGINS: tuple[object, ...] = tuple(
    importlib.import_module(f"{__name__}.{found.name}.plugin")
    for found in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    if found.ispkg
)
