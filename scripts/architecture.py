"""Writes the module map in docs/architecture.md from the code: every module of ``ctxgate/`` on its
floor (the floors ``tests/test_layout.py`` enforces) and every plugin, each with the first sentence
of its docstring. The test command runs ``--check``, so the map cannot fall behind the code.

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


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--check", action="store_true", help="exit 1 when the map in the doc differs from the code"
    )
    args = ap.parse_args()
    text = DOC.read_text("utf-8")
    if START not in text or END not in text:
        print(
            f"{DOC} has no module map between {START!r} and {END!r}: add the two lines",
            file=sys.stderr,
        )
        return 2
    head, rest = text.split(START, 1)
    updated = head + module_map() + rest.split(END, 1)[1]
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
