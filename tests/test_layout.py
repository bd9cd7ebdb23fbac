"""The package's layers: a module imports only from its own floor or lower ones, lazy imports inside functions
included, so the tree keeps the shape docs/architecture.md describes (a judge client that never imports the
runner, a report package that never imports a workflow)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

# Lowest first. A module belongs to the floor of its longest listed prefix.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "ctxgate",
            "ctxgate.textcodec",
            "ctxgate.lengths",
            "ctxgate.seeding",
            "ctxgate.sqlitefile",
            "ctxgate.retrying",
            "ctxgate.stats",
            "ctxgate.report.io",
            "ctxgate.report.schema",
        ),
    ),
    ("data and metrics", ("ctxgate.data", "ctxgate.sources", "ctxgate.metrics")),
    ("tasks", ("ctxgate.tasks",)),
    ("engines and judges", ("ctxgate.backends", "ctxgate.judge")),
    ("running a case", ("ctxgate.run",)),
    ("gate", ("ctxgate.gate",)),
    ("report", ("ctxgate.report",)),
    ("workflows", ("ctxgate.workflows",)),
    ("command line", ("ctxgate.cli",)),
)
TOP_LEVEL = {"__init__.py", "cli.py", "textcodec.py", "lengths.py", "seeding.py", "sqlitefile.py", "retrying.py"}


def floor_of(module: str) -> int:
    best, level = -1, -1
    for i, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), i
    assert level >= 0, f"{module} is on no floor: add it to FLOORS in {__file__}"
    return level


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) for every import of a ctxgate module, at any depth of the file."""
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: up from this module's package
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            # "from ctxgate.x import y": y may be a module of x; judge by the deepest one that names a module
            for a in node.names:
                full = f"{base}.{a.name}"
                where = root / full.replace(".", "/")
                is_module = where.is_dir() or where.with_suffix(".py").exists()
                found.append((node.lineno, full if is_module else base))
    return [(line, m) for line, m in found if m == "ctxgate" or m.startswith("ctxgate.")]


def test_no_module_imports_from_a_higher_floor():
    wrong = []
    for path in sorted((ROOT / "ctxgate").rglob("*.py")):
        mine = floor_of(module_name(path))
        for line, target in imports(path):
            if floor_of(target) > mine:
                wrong.append(
                    f"{path.relative_to(ROOT)}:{line} ({FLOORS[mine][0]}) imports {target} "
                    f"({FLOORS[floor_of(target)][0]})"
                )
    assert not wrong, "a lower floor imports a higher one:\n" + "\n".join(wrong)


def test_the_floor_check_sees_lazy_and_relative_imports(tmp_path):
    """The walk itself: an import inside a function, and a relative one, are both found."""
    fake = tmp_path / "ctxgate" / "judge"
    fake.mkdir(parents=True)
    (tmp_path / "ctxgate" / "run").mkdir()
    (tmp_path / "ctxgate" / "run" / "case.py").write_text("")
    (fake / "client.py").write_text("def f():\n    from ctxgate.run import case\n\nfrom ..run.case import x\n")
    assert sorted((line, floor_of(m)) for line, m in imports(fake / "client.py", tmp_path)) == [(2, 4), (4, 4)]


def test_the_top_level_holds_only_the_face_and_shared_modules():
    loose = {p.name for p in (ROOT / "ctxgate").glob("*.py")} - TOP_LEVEL
    assert not loose, (
        f"{sorted(loose)} lie loose in ctxgate/: move each into the folder of its concern "
        "(docs/architecture.md says which)"
    )
