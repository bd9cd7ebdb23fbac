"""``--reference MODEL``: the run against a paper's published numbers for that model (RULER's Table
3 and its appendix, HELMET's Figure 6), or with ``auto`` the model matched by name.
PYTEST_DONT_REWRITE: the reporting plugin imports this module before pytest registers it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from ctxgate.data.published import lookup, resolve, rows_for
from ctxgate.records.schema import Reference, Report
from ctxgate.run.options import REFERENCE

from .options import PLAN_KEY, refusals_are_usage_errors


@dataclass(frozen=True)
class ReferenceSettings:
    model: str | None  # the papers' id, or None: no comparison
    how: str  # how it was chosen, for the header and the report


REFERENCE_KEY = pytest.StashKey[ReferenceSettings]()
_HUB_CACHE = re.compile(r"models--([^/]+?)--([^/]+)")


def pytest_addoption(parser: pytest.Parser) -> None:
    REFERENCE.add_to(parser.getgroup("ctxgate-reference", "ctxgate published scores"))


def candidates(model: str | None) -> list[tuple[str, str]]:
    """Names a checkpoint goes by, with where each was read."""
    if not model:
        return []
    found = [(model, "--model")]
    if hub := _HUB_CACHE.search(model):
        found.append((f"{hub.group(1)}/{hub.group(2)}", "the hub cache folder's name"))
    config = Path(model) / "config.json"
    try:
        named = json.loads(config.read_text("utf-8")).get("_name_or_path")
    except (OSError, ValueError, AttributeError):
        named = None
    if isinstance(named, str) and named:
        found.append((named, f"{config}'s _name_or_path"))
    return found


def _settings(wanted: str, model: str | None) -> ReferenceSettings:
    if wanted.lower() == "off" or model is None:
        return ReferenceSettings(None, "off")
    if wanted.lower() != "auto":
        return ReferenceSettings(
            resolve(wanted, "--reference ", ", or pass --reference off"), "--reference"
        )
    for name, where in candidates(model):  # a name several models go by: the user says which
        found = lookup(
            name, f"--reference auto: {where} ", " with --reference, or pass --reference off"
        )
        if found is not None:
            return ReferenceSettings(found, f"matched by name: {where}")
    return ReferenceSettings(None, "no published model matched")


@refusals_are_usage_errors
def pytest_configure(config: pytest.Config) -> None:
    wanted = str(REFERENCE.read(config.getoption(REFERENCE.dest))).strip()
    config.stash[REFERENCE_KEY] = _settings(wanted, config.stash[PLAN_KEY].model.model or None)


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    ref = config.stash.get(REFERENCE_KEY, None)
    if ref is None or ref.model is None:
        return None
    return [
        f"ctxgate reference: the papers' published numbers for {ref.model} ({ref.how}; "
        "--reference off: none)"
    ]


def published_section(config: pytest.Config, report: Report) -> Reference | None:
    """The report's ``reference`` section, or None without a reference model."""
    from ctxgate.gate.published import compare

    ref = config.stash.get(REFERENCE_KEY, None)
    if ref is None or ref.model is None:
        return None
    return Reference(ref.model, ref.how, tuple(compare(report, rows_for(ref.model))))
