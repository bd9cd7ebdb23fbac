"""ctxgate's pytest plugins, one module per concern: loaded as ``ctxgate_plugins`` by the
``pytest11`` entry point, or from a bare checkout by the root conftest, which imports this folder
under that name; ``plugins.X`` is the same module, so each plugin and its StashKey exist once.
PYTEST_DONT_REWRITE: imported before pytest could rewrite it."""

import importlib
import importlib.abc
import importlib.util
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

NAME = "ctxgate_plugins"
# The options plugin's pytest_configure runs first: it is tryfirst and registered after the tryfirst
# plugins that build on its plan (pluggy calls the last registered first), which import it before.
# The extras' pytest side is their run plugins, which ``extras`` registers (ctxgate_run_plugin).
MODULES = tuple(
    "engine options workers signals model collection cases reporting junit extras".split()
)
pytest_plugins = [f"{NAME}.{name}" for name in MODULES]


def _installed() -> ModuleType:
    """``ctxgate_plugins``: the installed package, else this folder loaded under that name."""
    if importlib.util.find_spec(NAME) is None:  # (a module already imported is found)
        folder = Path(__file__).parent
        spec = importlib.util.spec_from_file_location(
            NAME, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        assert spec is not None and spec.loader is not None
        module = sys.modules[NAME] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return importlib.import_module(NAME)


class _SameModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``plugins.X`` is ``ctxgate_plugins.X``, imported when first asked for (so pytest still
    imports each plugin itself, rewriting its asserts)."""

    def __init__(self, alias: str) -> None:
        self.alias = alias

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname.startswith(f"{self.alias}."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        return importlib.import_module(NAME + spec.name[len(self.alias) :])

    def exec_module(self, module: ModuleType) -> None:
        pass  # the module ran under its one name


if __name__ != NAME:  # the folder by its own name: the one package, and its plugins on demand
    sys.meta_path.insert(0, _SameModules(__name__))
    sys.modules[__name__] = _installed()
