"""Writes the code's maps in docs/architecture.md: the spine's hooks (``ctxgate/hookspec.py``) by
the run's phases, each with its signature and the first sentence of its docstring, and the hooks an
extra declares; the extras (``ctxgate/ext/``), each with its docstring's and the hooks it answers,
as the plugin manager has them; every module of ``ctxgate/`` on its floor (the floors
``tests/test_layout.py`` enforces) and every plugin, each with the first sentence of its
docstring. The test command runs ``--check``, so the maps cannot fall behind the code.

python scripts/architecture.py [--check]
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
START, END = (
    "<!-- module map: written by scripts/architecture.py -->",
    "<!-- end of the module map -->",
)
HOOKS_START, HOOKS_END = (
    "<!-- hooks and extras: written by scripts/architecture.py -->",
    "<!-- end of the hooks and extras -->",
)


def first_sentence(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    found = re.search(r"^(.+?[.:;])(\s|$)", paragraph)
    return (found.group(1) if found else paragraph).rstrip(":;")


def module_of(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def module_map() -> str:
    sys.path.insert(0, str(ROOT))
    from tests.test_layout import FLOORS, floor_of

    files = subprocess.run(
        ["git", "ls-files", "ctxgate", "plugins"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    modules = sorted(f for f in files if f.endswith(".py"))
    lines = [START, ""]
    for level, (name, _) in reversed(list(enumerate(FLOORS))):
        lines += [f"**{name}**", ""]
        for path in (
            p for p in modules if p.startswith("ctxgate/") and floor_of(module_of(p)) == level
        ):
            lines.append(f"- `{path.removeprefix('ctxgate/')}`: {first_sentence(ROOT / path)}")
        lines.append("")
    lines += [
        "**the pytest plugins** (`plugins/`, installed as `ctxgate_plugins`; on the report floor)",
        "",
    ]
    for path in (p for p in modules if p.startswith("plugins/")):
        lines.append(f"- `{path}`: {first_sentence(ROOT / path)}")
    return "\n".join([*lines, "", END])


def _functions(path: Path) -> list[ast.FunctionDef]:
    return [n for n in ast.parse(path.read_text("utf-8")).body if isinstance(n, ast.FunctionDef)]


def _said(node: ast.FunctionDef) -> str:
    paragraph = " ".join((ast.get_docstring(node) or "").split("\n\n")[0].split())
    found = re.search(r"^(.+?\.)(\s|$)", paragraph)
    return found.group(1) if found else paragraph


def _phases() -> list[tuple[str, list[ast.FunctionDef]]]:
    """hookspec.py's hooks under the phase comment (``# --- The plan: ...``) each follows."""
    source = (ROOT / "ctxgate" / "hookspec.py").read_text("utf-8")
    starts = {
        i + 1: line.removeprefix("# --- ").rstrip(" -")
        for i, line in enumerate(source.splitlines())
        if line.startswith("# --- ")
    }
    phases: list[tuple[str, list[ast.FunctionDef]]] = []
    for node in _functions(ROOT / "ctxgate" / "hookspec.py"):
        heading = max((at for at in starts if at < node.lineno), default=None)
        if heading is None or not node.name.startswith("ctxgate_"):
            continue
        if not phases or phases[-1][0] != starts[heading]:
            phases.append((starts[heading], []))
        phases[-1][1].append(node)
    return phases


def _signature(node: ast.FunctionDef) -> str:
    params = ", ".join(a.arg for a in node.args.args)
    returns = ast.unparse(node.returns) if node.returns else "None"
    return f"{node.name}({params}) -> {returns}"


def hooks_map() -> str:
    """The hooks by the run's phases, each with its signature and first sentence; the hooks an
    extra declares; then each extra with its first sentence and the hooks it answers."""
    sys.path.insert(0, str(ROOT))
    from ctxgate.ext import PLUGINS
    from ctxgate.hooks import manager

    lines = [HOOKS_START, "", "**The hooks** (`ctxgate/hookspec.py`), by the run's phases", ""]
    for phase, nodes in _phases():
        lines += [f"*{phase}*", ""]
        lines += [f"- `{_signature(n)}`: {_said(n)}" for n in nodes]
        lines.append("")
    lines += ["**Hooks an extra declares**, for other packages to answer", ""]
    for plugin in PLUGINS:
        path = Path(plugin.__file__)
        for node in _functions(path):
            if any(ast.unparse(d) == "hookspec" for d in node.decorator_list):
                extra = path.parent.name
                lines.append(f"- `{_signature(node)}` (`{extra}`): {_said(node)}")
    lines += ["", "**The extras** (`ctxgate/ext/`, in the order they answer)", ""]
    pm = manager()
    for plugin in PLUGINS:
        folder = Path(plugin.__file__).parent
        order = [n.name for _, nodes in _phases() for n in nodes]
        called = {c.name for c in pm.get_hookcallers(plugin) or ()}
        answers = sorted(called, key=lambda h: (order.index(h) if h in order else len(order), h))
        said = f"- `{folder.name}`: {first_sentence(folder / '__init__.py')}; answers "
        said += ", ".join(f"`{h}`" for h in answers)
        for name, hooks in _run_plugins(folder):
            said += f"; its run plugin `{name}` answers " + ", ".join(f"`{h}`" for h in hooks)
        lines.append(said)
    return "\n".join([*lines, "", HOOKS_END])


def _run_plugins(folder: Path) -> list[tuple[str, list[str]]]:
    """The classes of an extra whose methods answer ctxgate's hooks (its run plugins), each with
    those hooks."""
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.parse(path.read_text("utf-8")).body:
            if not isinstance(node, ast.ClassDef):
                continue
            hooks = [
                f.name
                for f in node.body
                if isinstance(f, ast.FunctionDef)
                and any(ast.unparse(d).startswith("hookimpl") for d in f.decorator_list)
            ]
            if hooks:
                found.append((node.name, hooks))
    return found


def _between(text: str, start: str, end: str, made: str) -> str:
    head, rest = text.split(start, 1)
    return head + made + rest.split(end, 1)[1]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--check", action="store_true", help="exit 1 when the map in the doc differs from the code"
    )
    args = ap.parse_args()
    text = DOC.read_text("utf-8")
    for start, end in ((START, END), (HOOKS_START, HOOKS_END)):
        if start not in text or end not in text:
            print(
                f"{DOC} has no map between {start!r} and {end!r}: add the two lines",
                file=sys.stderr,
            )
            return 2
    updated = _between(text, START, END, module_map())
    updated = _between(updated, HOOKS_START, HOOKS_END, hooks_map())
    if args.check:
        same = updated == text
        state = "is up to date" if same else "differs from the code"
        print(f"{DOC}: the module map {state}")
        return 0 if same else 1
    DOC.write_text(updated, "utf-8")
    print(f"wrote the module map in {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
