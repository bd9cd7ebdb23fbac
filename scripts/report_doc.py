"""Writes the field tables of docs/report.md from the report's JSON Schema (``ctxgate schema``,
derived from the records in ``ctxgate/records/``): every record of ``run.json`` and of a
``.predictions.jsonl`` line, each field with its type and the description its docstring gives. A
field without a description is an error. The test command runs ``--check``, so the page cannot fall
behind the schema.

python scripts/report_doc.py [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "report.md"
START, END = (
    "<!-- report fields: written by scripts/report_doc.py -->",
    "<!-- end of the report fields -->",
)


def text(doc: str) -> str:
    """A docstring as one Markdown line: reST literals as code, pipes escaped for a table cell."""
    return " ".join(doc.split()).replace("``", "`").replace("|", "\\|")


def kind(prop: dict[str, Any]) -> str:
    """A property's type in words, records linked to their tables."""
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in prop:  # the values of several literal types as one list
        values = [
            v for p in prop["anyOf"] for v in p.get("enum", [p["const"]] if "const" in p else [])
        ]
        rest = [kind(p) for p in prop["anyOf"] if "enum" not in p and "const" not in p]
        return " or ".join(([kind({"enum": values})] if values else []) + rest)
    if "const" in prop or "enum" in prop:
        return ", ".join(f"`{json.dumps(v)}`" for v in prop.get("enum", [prop.get("const")]))
    if prop.get("type") == "array":
        if "prefixItems" in prop:
            return "[" + ", ".join(kind(p) for p in prop["prefixItems"]) + "]"
        return f"list of {kind(prop['items'])}"
    if prop.get("type") == "object":
        each = prop.get("additionalProperties")
        return f"object of {kind(each)}" if isinstance(each, dict) else "object"
    return str(prop.get("type", "any"))


def records(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, path, record schema) for the root and every record it reaches, in the order a reader
    meets them; ``[]`` in a path is each item of a list, ``*`` each value of an object."""
    defs = schema.get("$defs", {})
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    paths: dict[str, list[str]] = {}

    def refs(prop: dict[str, Any], path: str) -> list[tuple[str, str]]:
        if "$ref" in prop:
            return [(prop["$ref"].rsplit("/", 1)[1], path)]
        inner = [(p, path) for p in prop.get("anyOf", [])]
        if isinstance(prop.get("items"), dict):
            inner.append((prop["items"], f"{path}[]"))
        if isinstance(prop.get("additionalProperties"), dict):
            inner.append((prop["additionalProperties"], f"{path}.*"))
        return [r for p, at in inner for r in refs(p, at)]

    def visit(name: str, path: str, record: dict[str, Any]) -> None:
        paths.setdefault(name, []).append(path)
        if name in found:
            return
        found[name] = (path, record)
        for field, prop in record["properties"].items():
            for ref, at in refs(prop, f"{path}.{field}".lstrip(".")):
                visit(ref, at, defs[ref])

    visit(schema["title"], "", schema)
    return [
        (name, ", ".join(f"`{p}`" for p in paths[name] if p), record)
        for name, (_, record) in found.items()
    ]


def tables(schema: dict[str, Any], title: str) -> tuple[list[str], list[str]]:
    """The Markdown of one schema's records, and the fields that have no description."""
    lines, undescribed = [], []
    for name, paths, record in records(schema):
        path = paths.split(", ")[0].strip("`") if paths else ""
        heading = title if not paths else name
        lines += [f"### {heading}", ""]
        about = text(record.get("description", ""))
        if paths or about:
            intro = " ".join(x for x in (f"At {paths}." if paths else "", about) if x)
            lines += [textwrap.fill(intro, 120, break_long_words=False, break_on_hyphens=False), ""]
        lines += ["| key | type | description |", "|---|---|---|"]
        for field, prop in record["properties"].items():
            if not prop.get("description"):
                undescribed.append(f"{name}.{field}")
            key = f"{path}.{field}" if path else field
            lines.append(f"| `{key}` | {kind(prop)} | {text(prop.get('description', ''))} |")
        lines.append("")
    return lines, undescribed


def fields() -> tuple[str, list[str]]:
    sys.path.insert(0, str(ROOT))
    from ctxgate.records.io import report_schema

    report, missing = tables(report_schema(), "Report")
    line, missing_too = tables(report_schema(predictions=True), "Prediction")
    body = [
        START,
        "",
        "## `run.json`",
        "",
        "`[]` in a key stands for each item of a list, `*` for each value of an object.",
        "",
        *report,
        "## `run.predictions.jsonl`",
        "",
        "One line per sample, a `Prediction` record.",
        "",
        *line,
        END,
    ]
    return "\n".join(body), missing + missing_too


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="exit 1 when the tables in the doc differ from the schema",
    )
    args = ap.parse_args()
    written, missing = fields()
    if missing:
        print(
            f"give these fields a docstring in ctxgate/records/: {', '.join(missing)}",
            file=sys.stderr,
        )
        return 1
    text_now = DOC.read_text("utf-8")
    if START not in text_now or END not in text_now:
        print(
            f"{DOC} has no field tables between {START!r} and {END!r}: add the two lines",
            file=sys.stderr,
        )
        return 2
    head, rest = text_now.split(START, 1)
    updated = head + written + rest.split(END, 1)[1]
    if args.check:
        same = updated == text_now
        state = "are up to date" if same else "differ from the schema"
        print(f"{DOC}: the field tables {state}")
        return 0 if same else 1
    DOC.write_text(updated, "utf-8")
    print(f"wrote the field tables in {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
