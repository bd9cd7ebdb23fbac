"""The shipped tiny reasoning model (fixtures/tiny-thinking-niah: it writes a short <think> block,
then its answer) through the suite: the thought removed before scoring, counted and kept; --thinking
off through its template's switch; a budget too small for its thoughts; and a real vLLM server with
a reasoning parser giving the transformers backend's predictions, sample for sample.

One server for the module, in one xdist worker (scripts/test.sh runs --dist loadfile)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, engine_in_its_server, in_process, suite_here

THINKING = ROOT / "fixtures" / "tiny-thinking-niah"
CASES = ("-k", "niah_single_1", "--lengths", "512", "--samples", "10", "--chat-template", "on")
BUDGETS = (4, 16, 64)  # tokens of thought: every thought cut, some, none


def suite(cwd: Path, *args: str, model: Path = THINKING) -> int:
    """The suite on the reasoning model from ``cwd``, in this process; its exit status."""
    result = suite_here(cwd, *CASES, "--no-cache", *args, model=model)
    assert result.returncode in (0, 1), result.stdout[-3000:]
    return result.returncode


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def compared(path: Path) -> list[tuple]:
    """What two engines must agree on, sample for sample."""
    keys = ("index", "prediction", "score", "thought", "thought_tokens", "thought_end")
    return [tuple(r[k] for k in (*keys, "output_tokens", "finish_reason")) for r in rows(path)]


@pytest.fixture(scope="module")
def hf(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The transformers backend's runs every engine test compares with: the model's default
    (thinking), and a budget of 4 tokens of thought."""
    folder = tmp_path_factory.mktemp("hf")
    runs = {"default": (), "budget": ("--thinking-budget", "4")}
    runs |= {f"budget{n}": ("--thinking-budget", str(n)) for n in BUDGETS[1:]}
    statuses = {
        name: suite(folder, *args, "--report", f"{name}.json", "--junitxml", f"{name}.xml")
        for name, args in runs.items()
    }
    assert statuses["default"] == 0 and statuses["budget"] == 1
    return {name: folder / f"{name}.json" for name in runs}


def test_the_thought_is_removed_before_scoring_counted_and_kept(hf):
    report = json.loads(hf["default"].read_text())
    (case,) = report["cases"]
    assert report["run"]["thinking"] == {
        "mode": "default",
        "budget": None,
        "budget_by": None,
        "start": "<think>",
        "end": "</think>",
        "opened": False,
        "closed": False,
        "template_kwargs": {},
        "answer_prefix": "after the thought",
    }
    thinking = case["thinking"]
    assert thinking["samples"] == 10 and thinking["cut"] == thinking["never_ended"] == 0
    assert 5 <= thinking["tokens_mean"] <= thinking["tokens_max"] < 128
    assert case["score"] >= 70 and case["verdict"] == "pass"
    samples = rows(hf["default"].with_suffix(".predictions.jsonl"))
    for s in samples:
        assert s["thought"] and s["thought_end"] == "model"
        assert "<think>" not in s["prediction"] and "</think>" not in s["prediction"]
        assert s["thought_tokens"] < s["output_tokens"]
    # the cost line counts the thought apart; the report, the Markdown and junit show each case's
    assert report["cost"]["total"]["thinking_tokens"] == sum(s["thought_tokens"] for s in samples)
    markdown = hf["default"].with_suffix(".md").read_text()
    assert "of them thought)" in markdown
    assert (
        "Thinking (--thinking default, thought and answer sharing each task's budget; removed "
        "before scoring; the answer prefix after the thought)" in markdown
    )
    # the prompt ends at the generation prompt; the answer, after the prefix, is a second prefill
    assert report["cost"]["total"]["prompt_tokens"] > sum(s["input_tokens"] for s in samples)
    assert f"| niah_single_1 | {thinking['tokens_mean']:g}/{thinking['tokens_max']} |" in markdown
    properties = {
        p.get("name"): p.get("value")
        for p in ET.parse(hf["default"].with_name("default.xml")).getroot().iter("property")
    }
    assert properties["ctxgate.thinking.niah_single_1-512"].startswith(
        f"{thinking['tokens_mean']:g} thought tokens per sample (max {thinking['tokens_max']})"
    )


def test_a_budget_too_small_forces_every_thought_closed_and_fails_naming_it(hf):
    report = json.loads(hf["budget"].read_text())
    (case,) = report["cases"]
    assert report["run"]["thinking"]["budget"] == 4
    assert report["run"]["thinking"]["budget_by"] == "forcing"  # transformers has no budget
    held = "--thinking-budget 4 tokens of thought beside each task's answer budget, forced;"
    assert held in hf["budget"].with_suffix(".md").read_text()
    assert case["thinking"]["thought_cut"] == 10 and case["verdict"] == "fail"
    assert "raise --thinking-budget above 4" in case["message"]
    cases_gate = next(g for g in report["gates"] if g["name"] == "cases")
    assert cases_gate["verdict"] == "fail" and "cut by a budget" in cases_gate["message"]
    for s in rows(hf["budget"].with_suffix(".predictions.jsonl")):
        # "<think>", a line break and a word, then the marker: all 4. The forced thought ends at
        # the marker forced; a model that thinks again after it writes into its answer's budget,
        # and what follows the last marker is scored
        assert s["thought_end"] == "forced" and s["thought_tokens"] == 4
        assert "</think>" not in s["thought"] + s["prediction"]
    # the prompts are the plain run's: the thought comes on top of the length
    default = json.loads(hf["default"].read_text())["cases"][0]
    assert case["data_sha256"] == default["data_sha256"]


def local(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The suite on the reasoning model through transformers, in this process."""
    return in_process(
        pytester, f"--model={THINKING}", *CASES, "-p", "no:cacheprovider", "--no-cache", *args
    )


def test_thinking_off_sets_the_templates_switch_and_no_thought_is_written(pytester, hf):
    result = local(pytester, "--thinking", "off", "--report", "off.json")
    assert result.ret == 0, "\n".join(result.outlines[-30:])
    report = json.loads((pytester.path / "off.json").read_text())
    (case,) = report["cases"]
    assert report["run"]["thinking"]["template_kwargs"] == {"enable_thinking": False}
    assert case["thinking"] is None and case["score"] >= 70
    default = json.loads(hf["default"].read_text())["cases"][0]
    assert case["data_sha256"] != default["data_sha256"]  # its prompts close an empty thought
    assert case["output_tokens"] < default["output_tokens"]
    assert all(s["thought"] is None for s in rows(pytester.path / "off.predictions.jsonl"))


def test_an_end_marker_the_model_never_writes_fails_the_case_and_names_the_marker(pytester):
    """The model closes its thoughts with </think>: told they end at </nothere>, each output opens a
    thought that never closes, so its answer is empty, counted, and the case fails saying why."""
    result = local(pytester, "--think-end", "</nothere>", "--report", "r.json")
    assert result.ret == 1, "\n".join(result.outlines[-30:])
    report = json.loads((pytester.path / "r.json").read_text())
    (case,) = report["cases"]
    assert report["run"]["thinking"]["start"] == "<think>"
    assert case["thinking"]["unclosed"] == case["thinking"]["never_ended"] == 10
    assert case["score"] == 0.0 and case["verdict"] == "fail"
    assert all(s["prediction"] == "" for s in rows(pytester.path / "r.predictions.jsonl"))
    result.stdout.fnmatch_lines(
        ["Gate cases: FAIL - 1 of 1 selected cases had outputs that ended inside an unclosed "
         "thought: *: 10 of 10 outputs ended inside their thought: the model stopped on its own "
         "before writing '</nothere>', *Fix: --think-end '</nothere>' is not what this model ends "
         "its thoughts with*"]
    )  # fmt: skip


def vllm_server(folder: Path, *args: str) -> Iterator[str]:
    """A real vLLM server on the reasoning model with DeepSeek-R1's reasoning parser (it reads
    <think> ... </think>), and ``args``; its URL while it runs."""
    from ctxgate.backends.vllm_server import EngineSpec, VLLMServer, find_python

    parser = ("--reasoning-parser", "deepseek_r1", *args)
    vllm = VLLMServer(
        EngineSpec(find_python(None, [ROOT]), str(THINKING), max_model_len=1024, extra_args=parser),
        folder / "server.log",
    )
    with engine_in_its_server():
        vllm.start()
    try:
        vllm.wait_ready(600)
        yield vllm.url
    finally:
        vllm.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Its chat endpoint renders a user message as the bare text, so the chat API's prompt is the
    transformers run's on the same model with that template."""
    from ctxgate.backends.servers import BARE_CHAT_TEMPLATE

    folder = tmp_path_factory.mktemp("vllm")
    (folder / "bare.jinja").write_text(BARE_CHAT_TEMPLATE)
    yield from vllm_server(folder, "--chat-template", str(folder / "bare.jinja"))


@pytest.fixture(scope="module")
def own_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The model's own chat template, with its enable_thinking switch, rendered by the server."""
    yield from vllm_server(tmp_path_factory.mktemp("vllm-own"))


def served(pytester: pytest.Pytester, url: str, *args: str) -> pytest.RunResult:
    return in_process(
        pytester, f"--model={THINKING}", *CASES, "--backend", "openai", "--base-url", url,
        "-p", "no:cacheprovider", "--no-cache", *args,
    )  # fmt: skip


def test_vllm_gives_the_transformers_thoughts_answers_and_forced_ends(server, hf, pytester):
    """Token ids to /v1/completions: the same outputs, split and forced alike, --budget-forcing
    forcing the budget as on transformers though the server has one of its own."""
    runs = {"default": (), "budget": ("--thinking-budget", "4", "--budget-forcing")}
    for name, args in runs.items():
        result = served(pytester, server, *args, "--report", f"{name}.json")
        assert result.ret == (0 if name == "default" else 1), "\n".join(result.outlines[-30:])
        got = pytester.path / f"{name}.predictions.jsonl"
        assert compared(got) == compared(hf[name].with_suffix(".predictions.jsonl")), name


def test_a_server_with_its_own_thinking_budget_holds_the_thought_to_it(server, hf, pytester):
    """vLLM started with a reasoning parser takes ``thinking_token_budget``: the suite finds that
    out and sends the budget, less the markers, in one request. The engine closes each thought
    where forcing would have, so the thoughts, answers and scores are transformers' with budget
    forcing, at every budget; what differs is that the engine generated the closing marker it
    forced, which forcing appends without generating it."""
    for budget in BUDGETS:
        report = pytester.path / f"engine{budget}.json"
        result = served(pytester, server, "--thinking-budget", str(budget), "--report", str(report))
        assert result.ret in (0, 1), "\n".join(result.outlines[-30:])
        assert json.loads(report.read_text())["run"]["thinking"]["budget_by"] == "engine"
        held = f"{budget} tokens of thought beside each task's answer budget, held by the engine"
        assert held in result.stdout.str()
        engine = compared(report.with_suffix(".predictions.jsonl"))
        name = "budget" if budget == 4 else f"budget{budget}"
        forced = compared(hf[name].with_suffix(".predictions.jsonl"))
        # the same thoughts, ended alike, each forced one within its budget, marker counted
        assert [(e[0], *e[3:6]) for e in engine] == [(f[0], *f[3:6]) for f in forced], budget
        assert all(e[4] <= budget for e in engine if e[5] == "forced"), budget
        # forcing continues from the thought's ids as generated, as the engine does: the same
        # answers and scores too
        assert [e[:6] + e[7:] for e in engine] == [f[:6] + f[7:] for f in forced], budget
        # the engine generated the closing marker it forced; forcing appends it ungenerated
        cut = [int(f[5] == "forced") for f in forced]
        assert [e[6] - f[6] for e, f in zip(engine, forced)] == cut, budget


def test_a_chat_api_with_a_reasoning_parser_gives_the_same_split(server, pytester, tmp_path):
    """/v1/chat/completions with vLLM's reasoning parser: the thought arrives in ``reasoning``,
    the answer in ``content``, split as the suite splits transformers' output for the same prompt
    (a bare template on both sides, so that the prompts are the same). RULER's answer prefix, which
    a chat API cannot put after the thought, is left out, and the report says so. A thinking budget
    is the server's own."""
    from ctxgate.backends.servers import BARE_CHAT_TEMPLATE

    bare = tmp_path / "bare-model"
    bare.mkdir()
    for f in THINKING.iterdir():
        (bare / f.name).write_bytes(f.read_bytes())
    (bare / "chat_template.jinja").write_text(BARE_CHAT_TEMPLATE)
    assert suite(tmp_path, "--report", "hf.json", model=bare) in (0, 1)
    result = served(pytester, server, "--endpoint-api", "chat", "--report", "chat.json")
    assert result.ret in (0, 1), "\n".join(result.outlines[-30:])
    chat = compared(pytester.path / "chat.predictions.jsonl")
    local = compared(tmp_path / "hf.predictions.jsonl")
    # A bare prompt has no assistant turn, so the model may write before it opens its thought, or
    # open none: the parser drops what came before the opening marker, which the suite keeps in
    # the thought, and files an output with no marker as thought, which the suite scores as the
    # answer (docs/decisions.md, "A thought that never ends leaves no answer")
    for c, h in zip(chat, local):
        if h[3] is None:
            assert (c[3], c[1]) == (h[1].strip(), ""), (c, h)
        else:
            assert (c[3], c[5]) == (h[3].split("<think>")[-1].lstrip(), h[5]), (c, h)
    assert any(h[3] and "<think>" not in h[3] for h in local)  # some opened it at once
    run = json.loads((pytester.path / "chat.json").read_text())["run"]
    assert run["thinking"]["answer_prefix"] == "left out"
    result.stdout.fnmatch_lines(["*the answer prefix left out, as a chat API cannot continue*"])
    # a budget a chat API takes only as the server's own: held by the engine, each thought it cut
    # within it (the bare prompt's outputs open too few thoughts at once to compare with forcing)
    result = served(pytester, server, "--endpoint-api", "chat", "--thinking-budget", "4")
    assert result.ret in (0, 1), "\n".join(result.outlines[-30:])
    result.stdout.fnmatch_lines(
        ["*4 tokens of thought beside each task's answer budget, held by the engine*"]
    )


@pytest.fixture(scope="module")
def browser():
    from tests.browsing import launch

    yield from launch()


def test_the_html_report_shows_each_thought_beside_its_answer(hf, browser, tmp_path):
    """In a real browser: the run's facts say how it thought, and a case's samples each keep the
    thought, folded, beside the answer that was scored."""
    from tests.browsing import Opened

    opened = Opened(browser, hf["default"].with_suffix(".html"), tmp_path)
    page = opened.page
    facts = page.locator("dl.facts").inner_text()
    assert "--thinking default, thought and answer sharing each task's budget" in facts
    page.locator('a[href="#case/niah_single_1/512"]').first.click()
    page.wait_for_selector("#drill:not([hidden]) table.samples")
    thinking = json.loads(hf["default"].read_text())["cases"][0]["thinking"]
    assert (
        f"thought {thinking['tokens_mean']:g} tokens per sample (max {thinking['tokens_max']}), "
        "cut 0 thoughts, 0 answers, 0 never ended"
    ) in page.locator(".case-facts").inner_text()
    summaries = page.locator("table.samples details summary").all_inner_texts()
    samples = rows(hf["default"].with_suffix(".predictions.jsonl"))
    assert sorted(summaries) == sorted(
        f"thought: {s['thought_tokens']} tokens, ended by model" for s in samples
    )
    opened.clean()


def test_the_thinking_switch_reaches_a_chat_servers_own_template(own_template, pytester):
    """--endpoint-api chat: the server renders the model's own template with the run's
    ``chat_template_kwargs``. With thinking off its prompts close an empty thought, and the model
    answers as it was trained to (R1's parser files such an answer, with no closing marker, as
    thought: the suite knows the prompt closed it). With thinking on, RULER's answer prefix is
    left out (a chat API cannot put it after the thought), and the model thinks first."""
    found = {}
    for mode in ("on", "off"):
        report = pytester.path / f"{mode}.json"
        result = served(
            pytester, own_template, "--endpoint-api", "chat", "--thinking", mode,
            "--report", str(report),
        )  # fmt: skip
        assert result.ret == 0, "\n".join(result.outlines[-30:])
        run = json.loads(report.read_text())["run"]
        assert run["thinking"]["template_kwargs"] == {"enable_thinking": mode == "on"}
        assert run["thinking"]["closed"] == (mode == "off")
        found[mode] = rows(report.with_suffix(".predictions.jsonl"))
    # the server rendered each prompt otherwise: the switch reached its template. With thinking
    # on, the prompt ends at the generation prompt and the model thinks first
    assert all(s["thought"] and s["thought_end"] for s in found["on"])
    assert all(s["thought"] is None and s["prediction"] for s in found["off"])
