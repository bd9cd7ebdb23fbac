"""The contract between the spine and an extra: one public face (``ctxgate/api.py``), and nothing
beside it. Every extra under ``ctxgate/ext/``, and the outside example package under
``tests/outside/``, imports ctxgate only from ``ctxgate.api`` (or its own package), reads no
StashKey of the spine's and imports no pytest plugin of its."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import ctxgate.api
from ctxgate import hookspec
from ctxgate.hooks import manager
from ctxgate.hookspec import hookimpl
from ctxgate.refusal import CtxgateError
from tests.conftest import ROOT

EXTRAS = ROOT / "ctxgate" / "ext"
OUTSIDE = ROOT / "tests" / "outside"


def _modules() -> list[Path]:
    found = [*EXTRAS.rglob("*.py"), *OUTSIDE.rglob("*.py")]
    return sorted(p for p in found if "__pycache__" not in p.parts)


def _own(path: Path) -> str:
    """The package an extra may import freely: its own (``ctxgate.ext.html``), or the outside
    package's top name."""
    parts = path.relative_to(ROOT).parts
    if parts[:2] == ("ctxgate", "ext"):
        return ".".join(("ctxgate", "ext", parts[2])) if len(parts) > 3 else "ctxgate.ext"
    return parts[3] if len(parts) > 4 else ""  # tests/outside/<distribution>/<package>/...


def _reaches(path: Path) -> list[str]:
    """Each import of ctxgate, its plugins or another package's module by an absolute name, with
    its line, that is not the face nor the module's own package."""
    own, wrong = _own(path), []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in ("ctxgate", "ctxgate_plugins", "plugins"):
                continue
            if name == "ctxgate.api" or (own and (name == own or name.startswith(own + "."))):
                continue
            wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {name}")
    return wrong


def test_every_extra_imports_ctxgate_only_through_its_face():
    wrong = [line for path in _modules() for line in _reaches(path)]
    assert not wrong, "import these names from ctxgate.api instead:\n" + "\n".join(wrong)


def test_the_face_names_what_it_imports_and_nothing_else():
    """``__all__`` is the face: each name it lists is imported there, each name imported is
    listed, so a name cannot be half public."""
    tree = ast.parse(Path(ctxgate.api.__file__).read_text("utf-8"))
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert sorted(ctxgate.api.__all__) == sorted(imported)
    assert all(hasattr(ctxgate.api, name) for name in ctxgate.api.__all__)


# --- the hooks: typed, documented, grouped, none dropping a second answer


def _specs() -> list[ast.FunctionDef]:
    tree = ast.parse(Path(hookspec.__file__).read_text("utf-8"))
    return [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("ctxgate_")
    ]


def test_every_hook_is_typed_and_each_parameter_documented():
    text = Path(hookspec.__file__).read_text("utf-8")
    assert not re.search(r"\bAny\b", text)
    for node in _specs():
        assert node.returns is not None, node.name
        doc = ast.get_docstring(node) or ""
        for arg in node.args.args:
            assert arg.annotation is not None, f"{node.name}({arg.arg})"
            assert f":param {arg.arg}:" in doc, f"{node.name} says nothing of {arg.arg}"


def test_no_hook_takes_the_first_answer_and_drops_the_rest():
    assert not [
        n.name for n in _specs() for d in n.decorator_list if "firstresult" in ast.unparse(d)
    ]


def test_two_extras_that_each_place_the_model_are_refused_by_name(monkeypatch):
    from ctxgate.run.loading import ModelSpec, Placement, placement

    class Other:
        @hookimpl
        def ctxgate_placement(self, spec: ModelSpec) -> Placement:
            return Placement("another cluster", lambda: 1, lambda served, replicas: None)  # type: ignore[arg-type,return-value]

    pm = manager()
    other = Other()
    pm.register(other)
    try:
        spec = ModelSpec("m", extras={"ray": _ray("head:6379")})
        with pytest.raises(CtxgateError, match="two ctxgate plugins answer ctxgate_placement"):
            placement(spec)
        assert placement(ModelSpec("m")).why == "another cluster"  # one answer: it decides
    finally:
        pm.unregister(other)


def _ray(address: str) -> object:
    from ctxgate.ext.ray.settings import RaySettings

    return RaySettings(address, "GPU")


def test_an_extra_declares_a_hook_that_another_package_answers():
    caller = manager().hook.ctxgate_tracker_kinds
    assert (
        caller.spec is not None and caller.spec.namespace.__name__ == "ctxgate.ext.trackers.plugin"
    )


# --- the architecture doc, held against the code (not against its own generator)

DOC = (ROOT / "docs" / "architecture.md").read_text("utf-8")


def test_the_architecture_doc_lists_every_hook_under_its_phase_with_its_parameters():
    source = Path(hookspec.__file__).read_text("utf-8").splitlines()
    for node in _specs():
        phase = next(
            line.removeprefix("# --- ").rstrip(" -")
            for line in reversed(source[: node.lineno])
            if line.startswith("# --- ")
        )
        params = ", ".join(a.arg for a in node.args.args)
        entry = f"- `{node.name}({params}) ->"
        assert entry in DOC, entry
        assert DOC.index(f"*{phase}*") < DOC.index(entry), f"{node.name} is not under {phase}"


def test_the_architecture_doc_lists_every_extra_with_the_hooks_it_answers():
    from ctxgate.ext import PLUGINS

    pm = manager()
    for plugin in PLUGINS:
        name = plugin.__name__.split(".")[2]
        line = next(x for x in DOC.splitlines() if x.startswith(f"- `{name}`: "))
        module_hooks = line.split("; answers ", 1)[1].split("; its run plugin")[0]
        said = set(re.findall(r"`(ctxgate_\w+)`", module_hooks))
        assert said == {c.name for c in pm.get_hookcallers(plugin) or ()}, name
