"""What a run cost, in every report form, adds up: each case's figures sum to the run's line, and
the plan's generations are those run, those the cache had and those stopping saved. On a run whose
thoughts budget forcing closed (two requests a sample, both prefilled), a run from a warm cache and
a searched run that skipped a length, each in this process on the shipped checkpoints."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from ctxgate.lengths import format_length
from ctxgate.records.cost import Cost
from ctxgate.report.tables import COST_NOTE
from tests.conftest import ROOT

THINKING = ROOT / "fixtures" / "tiny-thinking-niah"
_PLAN = re.compile(
    r"([\d,]+) generations planned: ([\d,]+) run, ([\d,]+) from the cache, ([\d,]+) saved"
    r"(?: \(~([\d,]+) prompt tokens\))?; ([\d,]+) prompt tokens prefilled"
)


def _counts(line: str) -> dict[str, int]:
    """A cost line's numbers (written unrounded, as junit has them)."""
    found = _PLAN.search(line)
    assert found, line
    planned, run, cached, saved, saved_prompt, prompt = (
        int((g or "0").replace(",", "")) for g in found.groups()
    )
    assert planned == run + cached + saved, line
    return {
        "generations": run,
        "cached_generations": cached,
        "saved_generations": saved,
        "saved_prompt_tokens": saved_prompt,
        "prompt_tokens": prompt,
    }


def adds_up(folder: Path, name: str, stdout: str, samples: int) -> dict[str, Any]:
    """The run's cost in the JSON, junit, the terminal, the Markdown and the HTML, checked against
    its cases'; the run's total."""
    report = json.loads((folder / f"{name}.json").read_text())
    costs = {f"{c['task']}-{c['length']}": c["cost"] for c in report["cases"] if c["cost"]}
    total = report["cost"]["total"]
    assert costs and set(total) == {f.name for f in fields(Cost)}
    for key in total:
        assert sum(c[key] for c in costs.values()) == pytest.approx(total[key], abs=0.01), key
    for c in costs.values():  # each case's plan: its sample count
        assert c["generations"] + c["cached_generations"] + c["saved_generations"] == samples
    cached = sum(c["samples_from_cache"] for c in report["cases"])
    assert total["cached_generations"] == cached
    # junit: the run's line and each case's, unrounded, the cases' summing to the run's
    junit = ET.parse(folder / f"{name}.xml").getroot()
    props = {p.get("name"): p.get("value") or "" for p in junit.iter("property")}
    run = _counts(props["ctxgate.cost"])
    per_case = {k: _counts(props[f"ctxgate.cost.{k}"]) for k in costs}
    assert run == {k: total[k] for k in run}
    for k, counts in per_case.items():
        assert counts == {f: costs[k][f] for f in counts}, k
    # the terminal, the Markdown and the HTML: the run's line, each case's cell
    planned = len(costs) * samples
    line = (
        f"Cost: {planned:,} generations planned: {total['generations']:,} run, "
        f"{total['cached_generations']:,} from the cache, {total['saved_generations']:,} saved"
    )
    markdown = (folder / f"{name}.md").read_text()
    page = (folder / f"{name}.html").read_text()
    assert line in stdout and f"- {line}" in markdown and COST_NOTE in stdout
    assert line.removeprefix("Cost: ") in page and 'id="cost"' in page
    # each case's cell in its task's row and its length's column, each length's in all under them
    cells = _cost_table(markdown)
    shown = {(c["task"], c["length"]): c["cost"] for c in report["cases"] if c["cost"]}
    shown |= {("all", int(L)): c for L, c in report["cost"]["by_length"].items()}
    for (task, length), c in shown.items():
        cell = f"{c['generations']}+{c['cached_generations']}+{c['saved_generations']} "
        assert cells[task, format_length(length)].startswith(cell), (task, length)
        assert f"<td>{cell}" in page, (task, length)
    return total


def _cost_table(markdown: str) -> dict[tuple[str, str], str]:
    """The Markdown's cost table: each cell by its row's task and its column's length."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| cost |"))
    head, cells = lines[start].strip("| ").split(" | "), {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        row = line.strip("| ").split(" | ")
        cells |= {(row[0], at): cell for at, cell in zip(head[1:], row[1:])}
    return cells


def test_budget_forcing_counts_both_prefills(real_suite, pytester):
    """Every thought cut at 4 tokens: each sample's second request prefills its prompt again, with
    the thought, and both are counted."""
    result = real_suite(
        "-k", "niah_single_1", "--lengths", "512", "--samples", "10", "--chat-template", "on",
        "--thinking-budget", "4", "--no-cache", "--report", "forced.json",
        "--junitxml", "forced.xml", model=THINKING,
    )  # fmt: skip
    assert result.ret == 1, "\n".join(result.outlines[-30:])  # the budget cuts every thought
    total = adds_up(pytester.path, "forced", result.stdout.str(), 10)
    prompts = [
        json.loads(line)["input_tokens"]
        for line in (pytester.path / "forced.predictions.jsonl").read_text().splitlines()
    ]
    assert total["generations"] == 10 and total["cached_generations"] == 0
    # the prompt twice, then the thought (the budget's 4 tokens, its closing marker in it) and
    # RULER's answer prefix after it (docs/decisions.md), under 40 tokens
    assert 2 * sum(prompts) + 10 * 4 < total["prompt_tokens"] <= 2 * sum(prompts) + 10 * (4 + 40)


def test_a_warm_cache_and_a_search_add_up_to_the_plan(real_suite, pytester):
    """The search (run), the grid it cut short (what the search drew from the cache, the rest run),
    then the search again from the cache: each plan is run + cached + saved."""
    (pytester.path / "thresholds.toml").write_text("[effective_length]\nthreshold = 50\n")
    grid = ("-k", "niah_single_1 or niah_single_2", "--lengths", "512,1k,2k", "--samples", "10")
    grid += ("--cache-dir", "cache")
    search = ("--search-effective-length",)
    runs = {"searched": search, "cached": (), "again": search}
    totals = {}
    for name, args in runs.items():
        result = real_suite(*grid, *args, "--report", f"{name}.json", "--junitxml", f"{name}.xml")
        assert result.ret == 0, "\n".join(result.outlines[-30:])
        totals[name] = adds_up(pytester.path, name, result.stdout.str(), 10)
    plan = ("generations", "cached_generations", "saved_generations")
    # 2K skipped: its 20 saved, the other 40 run; then the grid draws those 40 from the cache
    assert [totals[n][k] for n in runs for k in plan] == [40, 0, 20, 20, 40, 0, 0, 40, 20]
    assert totals["again"]["prompt_tokens"] == 0 < totals["again"]["saved_prompt_tokens"]
