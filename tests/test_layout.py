"""The package's layers: a module imports only from its own floor or lower ones, lazy imports inside
functions included, so the tree keeps the shape docs/architecture.md describes (a judge client that
never imports the runner, a report package that never imports a workflow)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Lowest first. A module belongs to the floor of its longest listed prefix.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "ctxgate",
            "ctxgate.tokens",
            "ctxgate.lengths",
            "ctxgate.seeding",
            "ctxgate.sqlitefile",
            "ctxgate.retrying",
            "ctxgate.memo",
            "ctxgate.steps",
            "ctxgate.stats",
            "ctxgate.records",
        ),
    ),
    ("data and metrics", ("ctxgate.data", "ctxgate.sources", "ctxgate.metrics")),
    ("tasks", ("ctxgate.tasks",)),
    ("engines and judges", ("ctxgate.backends", "ctxgate.judge")),
    ("running a case", ("ctxgate.run",)),
    ("gate", ("ctxgate.gate",)),
    ("report", ("ctxgate.report",)),
    ("workflows", ("ctxgate.workflows",)),
    ("command line", ("ctxgate.cli", "ctxgate.__main__")),
    # the public face: what an extra may use, above every floor it names (ctxgate/api.py)
    ("face", ("ctxgate.api",)),
    # the extras: reached only through the hooks (ctxgate/hookspec.py), imported by no floor below
    ("extras", ("ctxgate.ext",)),
)
TOP_LEVEL = {
    "__init__.py",
    "__main__.py",
    "cli.py",
    "lengths.py",
    "seeding.py",
    "sqlitefile.py",
    "retrying.py",
    "memo.py",
    "steps.py",
    "values.py",
    "hookspec.py",
    "hooks.py",
    "api.py",
    "refusal.py",
}


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


# modules whose imports under ``if TYPE_CHECKING:`` name types only, never run: the hooks' specs,
# which name every type the hooks carry, from the floor the plugin manager stands on
TYPES_ONLY = {"ctxgate/hookspec.py"}


def _typing_blocks(tree: ast.Module) -> set[int]:
    """The ids of the import nodes inside ``if TYPE_CHECKING:`` at the module's top."""
    blocks = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    return {id(node) for block in blocks for node in ast.walk(block)}


def imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) for every import of a ctxgate module, at any depth of the file (a module of
    ``TYPES_ONLY``: but those only its type checker reads)."""
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    tree = ast.parse(path.read_text("utf-8"))
    skipped = _typing_blocks(tree) if str(path.relative_to(root)) in TYPES_ONLY else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: up from this module's package
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            # "from ctxgate.x import y": y may be a module of x; judge by the deepest one that names
            # a module
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


def test_nothing_outside_the_extras_imports_them_and_no_extra_imports_another():
    """An extra reaches the spine only through the hooks; the spine never names one, the pytest
    plugins included, and extras stand beside each other."""
    spine = [*(ROOT / "ctxgate").rglob("*.py"), *PLUGINS.glob("*.py")]
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for path in spine
        if "ext" not in path.relative_to(ROOT).parts[1:2]
        for line, target in imports(path)
        if target.startswith("ctxgate.ext")
    ]
    for path in (ROOT / "ctxgate" / "ext").glob("*/**/*.py"):  # the package's face lists them
        mine = module_name(path).split(".")[:3]
        wrong += [
            f"{path.relative_to(ROOT)}:{line} imports {target}, another extra"
            for line, target in imports(path)
            if target.startswith("ctxgate.ext.") and target.split(".")[:3] != mine
        ]
    assert not wrong, "\n".join(wrong)


def test_the_floor_check_sees_lazy_and_relative_imports(tmp_path):
    """The walk itself: an import inside a function, and a relative one, are both found."""
    fake = tmp_path / "ctxgate" / "judge"
    fake.mkdir(parents=True)
    (tmp_path / "ctxgate" / "run").mkdir()
    (tmp_path / "ctxgate" / "run" / "case.py").write_text("")
    (fake / "client.py").write_text(
        "def f():\n    from ctxgate.run import case\n\nfrom ..run.case import x\n"
    )
    assert sorted((line, floor_of(m)) for line, m in imports(fake / "client.py", tmp_path)) == [
        (2, 4),
        (4, 4),
    ]


def test_the_top_level_holds_only_the_face_and_shared_modules():
    loose = {p.name for p in (ROOT / "ctxgate").glob("*.py")} - TOP_LEVEL
    assert not loose, (
        f"{sorted(loose)} lie loose in ctxgate/: move each into the folder of its concern "
        "(docs/architecture.md says which)"
    )


PLUGINS = ROOT / "plugins"
# The pytest plugins stand on the report floor: they may use every floor up to it, never a workflow
# or the CLI
PLUGIN_FLOOR = next(i for i, (name, _) in enumerate(FLOORS) if name == "report")


def plugin_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in a plugin module, relative ones resolved to
    ``plugins.<name>``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                found += [(node.lineno, f"plugins.{node.module or a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module or ""))
    return found


def test_plugins_use_no_floor_above_the_report():
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {target} ({FLOORS[floor_of(target)][0]})"
        for path in sorted(PLUGINS.glob("*.py"))
        for line, target in plugin_imports(path)
        if target.startswith("ctxgate") and floor_of(target) > PLUGIN_FLOOR
    ]
    assert not wrong, "a plugin imports above the report floor:\n" + "\n".join(wrong)


def test_the_plugins_import_one_another_without_a_cycle():
    graph = {
        path.stem: {t.split(".")[1] for _, t in plugin_imports(path) if t.startswith("plugins.")}
        for path in PLUGINS.glob("*.py")
        if path.stem != "__init__"
    }
    done: set[str] = set()

    def visit(node: str, trail: tuple[str, ...]) -> None:
        assert node not in trail, "plugin import cycle: " + " -> ".join((*trail, node))
        if node not in done:
            for nxt in graph.get(node, ()):
                visit(nxt, (*trail, node))
            done.add(node)

    for name in graph:
        visit(name, ())


def _calls(tree: ast.AST, method: str) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method
    ]


def declared_options(name: str) -> set[str]:
    """The option names (and dests) the plugin module ``plugins.<name>`` adds, through a real
    parser."""
    import importlib

    module = importlib.import_module(f"ctxgate_plugins.{name}")
    hook = getattr(module, "pytest_addoption", None)
    if hook is None:
        return set()
    parser = pytest.Parser(_ispytest=True)
    hook(parser)
    options = [o for group in parser._groups for o in group.options] + list(
        parser._anonymous.options
    )
    return {n for o in options for n in o.names()} | {o.dest for o in options}


def test_each_plugin_reads_only_the_options_it_declares_into_its_own_settings():
    """pytest's pattern: a plugin declares its options and reads them once in its pytest_configure
    into its own settings under its own StashKey; others read the settings, never its options. (``-n
    auto`` is decided before any pytest_configure, so pytest_xdist_auto_num_workers reads raw
    options.)"""
    wrong = []
    for path in sorted(PLUGINS.glob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        declared = declared_options(path.stem)
        early = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef) and n.name.startswith("pytest_xdist")
        ]
        exempt = {id(c) for fn in early for c in _calls(fn, "getoption")}
        for call in _calls(tree, "getoption"):
            flag = (
                call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
            )
            if (
                isinstance(flag, str)
                and flag.startswith("--")
                and flag not in declared
                and id(call) not in exempt
            ):
                wrong.append(
                    f"{path.name}:{call.lineno} reads {flag}, which another plugin declares"
                )
        if declared and "StashKey[" not in path.read_text("utf-8"):
            wrong.append(
                f"{path.name} declares options but keeps no settings under a StashKey of its own"
            )
    assert not wrong, "\n".join(wrong)


def test_the_wheel_lists_every_package():
    """setuptools packages only what pyproject.toml lists (ctxgate_plugins is the plugins/ folder,
    which discovery would not name so): a new subpackage must be added there, or the installed tool
    lacks it."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    setup = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    listed = set(setup["packages"])
    found = {module_name(p.parent) for p in (ROOT / "ctxgate").rglob("__init__.py")} | {
        "ctxgate_plugins"
    }
    # folders of files only (the templates; the suite, mapped from tests_longctx/): packages by
    # their data
    found |= {name for name in setup["package-data"] if name.startswith("ctxgate.templates")}
    found |= {name for name in setup["package-dir"] if name == "ctxgate_plugins.suite"}
    assert listed == found, (
        f"add {sorted(found - listed)} to [tool.setuptools] packages; drop {sorted(listed - found)}"
    )


def test_the_wheel_carries_every_data_file():
    """include-package-data is off (it made setuptools warn of each data folder): the wheel has
    only the files the package-data globs match, so each of the package's files that is not a
    module is matched, or the installed tool lacks it."""
    import subprocess

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    setup = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    assert setup["include-package-data"] is False
    listed = subprocess.run(
        ["git", "ls-files", "ctxgate"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    data = {name for name in listed if not name.endswith(".py")}
    matched = {
        str(path.relative_to(ROOT))
        for package, globs in setup["package-data"].items()
        for pattern in globs
        for path in (ROOT / package.replace(".", "/")).glob(pattern)
    }
    assert data <= matched, f"add a package-data glob for {sorted(data - matched)}"


def test_no_two_packages_depend_on_each_other():
    """Floors allow imports within a floor; packages must still form no cycle (gate and report did,
    through the report's file format, until it moved to ctxgate.records)."""

    def package(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:2]) if len(parts) > 1 else parts[0]

    edges: dict[str, set[str]] = {}
    for path in (ROOT / "ctxgate").rglob("*.py"):
        mine = package(module_name(path))
        for _, target in imports(path):
            if package(target) not in (mine, "ctxgate"):
                edges.setdefault(mine, set()).add(package(target))
    cycles = sorted(
        f"{a} <-> {b}" for a, targets in edges.items() for b in targets if a in edges.get(b, set())
    )
    assert not cycles, cycles


def assert_no_circle(graph: dict[str, set[str]], what: str) -> None:
    """Depth first from every module, names in order: the first circle found is the failure."""
    state: dict[str, str] = {}

    def visit(node: str, trail: tuple[str, ...]) -> None:
        if state.get(node) == "open":
            circle = trail[trail.index(node) :]
            raise AssertionError(f"{what}: " + " -> ".join((*circle, node)))
        if node in state:
            return
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if nxt != node:
                visit(nxt, (*trail, node))
        state[node] = "done"

    for name in sorted(graph):
        visit(name, ())


def test_no_module_of_the_package_imports_itself_through_others():
    """Every import counts, lazy ones in functions too: a lazy import is still a dependency, and a
    circle through one is how run/compose, run/cluster and run/replica once leaned on each other."""
    graph = {
        module_name(path): {t for _, t in imports(path)}
        for path in (ROOT / "ctxgate").rglob("*.py")
    }
    assert_no_circle(graph, "import circle")


def test_each_plugin_module_exists_once_however_it_is_imported(pytestconfig):
    """One import name: the plugin pytest registered (the pytest11 entry point),
    ``ctxgate_plugins.X`` and the folder's own ``plugins.X`` are one module, with one StashKey."""
    import ctxgate_plugins
    from ctxgate_plugins import options

    for name in ctxgate_plugins.MODULES:
        installed = importlib.import_module(f"ctxgate_plugins.{name}")
        assert importlib.import_module(f"plugins.{name}") is installed
        assert pytestconfig.pluginmanager.get_plugin(f"ctxgate_plugins.{name}") is installed
    assert importlib.import_module("plugins") is ctxgate_plugins
    assert importlib.import_module("plugins.options").PLAN_KEY is options.PLAN_KEY


BARE_CLONE = """
import importlib, importlib.metadata, sys
# a checkout that was never installed: no finder knows ctxgate_plugins, and no entry point loads it
# or its extras; ctxgate itself: from the cwd
sys.meta_path = [f for f in sys.meta_path if "_EditableFinder" not in repr(f)]
importlib.metadata.entry_points = lambda **_: []
for name in [n for n in sys.modules if n.split(".")[0] in ("ctxgate_plugins", "plugins")]:
    del sys.modules[name]
import pytest

class Probe:
    def pytest_configure(self, config):
        import plugins.options
        import ctxgate_plugins.options
        plugin = config.pluginmanager.get_plugin("ctxgate_plugins.options")
        print("SAME", plugin is ctxgate_plugins.options is plugins.options)

sys.exit(pytest.main(["-p", "no:ctxgate", "-p", "no:cacheprovider", "--help"], plugins=[Probe()]))
"""


def test_a_bare_checkout_loads_the_plugins_once_by_the_root_conftest():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", BARE_CLONE], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "SAME True" in done.stdout and "--model" in done.stdout
    assert "--thinking-budget" in done.stdout  # an extra's option: the extras found by name
    assert "cannot be rewritten" not in done.stdout + done.stderr


def test_the_module_map_in_the_architecture_doc_is_the_code():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "scripts/architecture.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, (
        done.stdout + done.stderr + " (run: python scripts/architecture.py)"
    )


def test_the_decisions_page_stays_within_its_words():
    """docs/decisions.md is held to 6,000 words so each decision stays findable: tighten an entry's
    prose before adding words."""
    words = len((ROOT / "docs" / "decisions.md").read_text("utf-8").split())
    assert words <= 6000, f"docs/decisions.md has {words} words, over 6000: tighten its entries"


def test_the_model_fixtures_path_goes_down_the_floors():
    """From the fixture to a loaded model no code calls a function on a higher floor than its own:
    the path reads from the top floor down. A decorator's wrapper (``memo``) is not a step of its
    own: it is read through."""
    import sys
    import threading

    from ctxgate.gate.plan import make_plan
    from ctxgate.run.compose import load_model
    from tests.conftest import TINY

    plan = make_plan({"model": str(TINY)}.get, ROOT, gated=False)

    def module(frame):
        name = Path(frame.f_code.co_filename)
        if ROOT not in name.parents or name.parts[len(ROOT.parts)] not in ("ctxgate", "plugins"):
            return None
        return ".".join(name.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")

    def floor(name):
        return PLUGIN_FLOOR if name.startswith("plugins") else floor_of(name)

    visited, upward = set(), set()

    def watch(frame, event, _arg):
        callee = module(frame) if event == "call" else None
        if callee is None or callee.startswith("ctxgate.ext."):
            return  # an extra answers the spine's hooks and protocols: its calls are its own
        visited.add(callee)
        back = frame.f_back
        while back is not None and module(back) in (None, "ctxgate.memo"):
            if back.f_code.co_filename.startswith("<frozen importlib"):
                return  # the import system asks a finder: no module of ours made that call
            back = back.f_back
        caller = module(back) if back is not None else None
        if caller is not None and floor(callee) > floor(caller):
            upward.add(f"{caller} calls {callee}.{frame.f_code.co_name}")

    sys.setprofile(watch)
    threading.setprofile(watch)
    try:
        loaded = load_model(plan.model, None, {})
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    loaded.close()
    assert {"ctxgate.run.compose", "ctxgate.run.facts", "ctxgate.backends.hf"} <= visited
    assert not upward, "a call climbs back up a floor:\n" + "\n".join(sorted(upward))


def test_opening_the_model_decides_nothing_the_facts_do():
    """``open_model`` instantiates what the resolved facts say: no code that resolves a tokenizer,
    a template, a thought format or a fingerprint runs under it, and the session and record it
    returns are the facts' own."""
    import sys
    from dataclasses import replace

    from ctxgate.gate.plan import make_plan
    from ctxgate.run.compose import open_model
    from ctxgate.run.facts import resolve_model
    from ctxgate.run.loading import open_backend
    from tests.conftest import TINY

    plan = make_plan({"model": str(TINY), "no_cache": True}.get, ROOT, gated=False)
    backend = open_backend(plan.model)
    facts = resolve_model(plan.model, backend, {"samples": 1})
    facts = replace(facts, chat="off", record=facts.record | {"model": "as resolved"})
    deciding = ("ctxgate.tokens", "ctxgate.run.facts", "ctxgate.backends", "ctxgate.hooks")
    called = set()

    def watch(frame, event, _arg):
        if event == "call":
            called.add(frame.f_globals.get("__name__", ""))

    sys.setprofile(watch)
    try:
        loaded = open_model(plan.model, backend, facts)
    finally:
        sys.setprofile(None)
    loaded.close()
    assert not {name for name in called if name.startswith(deciding)}
    assert loaded.context is facts.context and loaded.session.reading is facts.reading
    assert loaded.chat_template == "off" and loaded.run_meta["model"] == "as resolved"


# The size of all product code. Modules: ctxgate/ (the extras included), plugins/, bench/ and
# scripts/; each at most 400 lines.
# Functions: ctxgate/ and plugins/; at most 60 lines and 6 parameters (self and cls not counted).
# No line cap on the spine. (bench/ and scripts/ hold command lines whose main functions run
# longer; their modules keep the limit.)
MODULE_LINES = 400
FUNCTION_LINES, FUNCTION_PARAMETERS = 60, 6
BENCH, SCRIPTS = ROOT / "bench", ROOT / "scripts"


def spine_modules() -> list[Path]:
    found = [*(ROOT / "ctxgate").rglob("*.py"), *PLUGINS.glob("*.py")]
    return sorted(p for p in found if (ROOT / "ctxgate" / "ext") not in p.parents)


def package_modules() -> list[Path]:
    """The package, the extras included, and the pytest plugins."""
    return sorted([*(ROOT / "ctxgate").rglob("*.py"), *PLUGINS.glob("*.py")])


def _size_faults(path: Path, functions: bool) -> list[str]:
    """The module's lines over its limit, and (``functions``) each function's lines and
    parameters over theirs."""
    name = str(path.relative_to(ROOT))
    text = path.read_text("utf-8")
    lines = text.count("\n")
    wrong = [f"{name}: {lines} lines, over {MODULE_LINES}: split it by concern"]
    wrong = wrong if lines > MODULE_LINES else []
    if not functions:
        return wrong
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        size = (node.end_lineno or node.lineno) - node.lineno + 1
        a = node.args
        named = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        params = len([x for x in named if x not in ("self", "cls")])
        if size > FUNCTION_LINES:
            wrong.append(f"{name}:{node.lineno} {node.name}: {size} lines, over 60")
        if params > FUNCTION_PARAMETERS:
            wrong.append(
                f"{name}:{node.lineno} {node.name}: {params} parameters, over 6: split it by "
                "concern, or pass a frozen object of the values that mean something together"
            )
    return wrong


def test_the_product_code_stays_within_its_size():
    """Each module's lines; in the package and the plugins, each function's lines and
    parameters."""
    wrong = [line for path in package_modules() for line in _size_faults(path, functions=True)]
    for path in sorted([*BENCH.glob("*.py"), *SCRIPTS.glob("*.py")]):
        wrong += _size_faults(path, functions=False)
    assert not wrong, "\n".join(wrong)


def bench_imports(path: Path, names: set[str]) -> set[str]:
    """The modules of ``names`` (bench/'s) that ``path`` imports, at any depth of the file: in a
    function and under TYPE_CHECKING too; as ``bench.x``, relatively, or as a script's sibling
    (``python bench/x.py`` puts bench/ first on the path)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from bench/ itself
                base = f"bench.{base}" if base else "bench"
            modules = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        for module in modules:
            parts = module.removeprefix("bench.").split(".")
            if parts[0] in names and (module.startswith("bench.") or len(parts) == 1):
                found.add(parts[0])
    return found


def test_no_bench_module_imports_itself_through_others():
    """The benchmarks' scripts share what they share through a module of their own: every import
    counts, lazy and TYPE_CHECKING ones too (bench/gpu.py, gpu_suite.py and gpu_vllm.py once
    imported one another)."""
    names = {path.stem for path in BENCH.glob("*.py")}
    graph = {path.stem: bench_imports(path, names) for path in BENCH.glob("*.py")}
    assert_no_circle(graph, "bench/ import circle")


def test_the_bench_walk_sees_lazy_typing_and_sibling_imports(tmp_path):
    (tmp_path / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bench.b import X\n"
        "def f():\n    import c\n    from bench import d\nfrom . import e\nimport json\n"
    )
    assert bench_imports(tmp_path / "a.py", {"a", "b", "c", "d", "e"}) == {
        "b",
        "c",
        "d",
        "e",
    }


def test_the_extras_words_stay_in_the_extras():
    """A Ray cluster's pool and a reasoning model's techniques (budget forcing's code, the thought
    formats' markers) are extras: outside ctxgate/ext/ their names never appear. The thought and its
    budget are the spine's own (docs/architecture.md, "Reasoning"), its words free to appear."""
    words = re.compile(r"\b(RayPool|ray_resource|BudgetForcing|ThoughtFormat|think_end)\b")
    found = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in spine_modules()
        for line in path.read_text("utf-8").splitlines()
        if words.search(line)
    ]
    assert not found, "\n".join(found)
