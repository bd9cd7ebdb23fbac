"""A reasoning model's thought: the template switch and markers found on real tokenizers, the split
of every output into thought and answer, budget forcing, and the record and gate of what was cut."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ctxgate.backends.base import Generation, GenerationParams, Request
from ctxgate.ext.thinking.forcing import AfterThought, BudgetForcing, EngineBudget, forcing
from ctxgate.ext.thinking.formats import MARKERS, Thinking, ThinkingError, ThoughtFormat, prepare
from ctxgate.ext.thinking.lines import cut_failure, unclosed_failure
from ctxgate.ext.thinking.plugin import THINK_END
from ctxgate.ext.thinking.reading import thinking_record
from ctxgate.gate.verdicts import cases_gate
from ctxgate.records.case import CaseRecord, SampleOutcome
from ctxgate.run.flags import OptionError
from ctxgate.tokens.tokenizers import HFTokenizer
from tests import test_endpoint_faults as faults
from tests.conftest import ROOT, TINY

# Qwen3's shape: a ChatML template whose generation prompt closes an empty thought when
# enable_thinking is false
QWEN_STYLE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and "
    "enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)
# DeepSeek-R1's: no switch, and the generation prompt opens the thought
R1_STYLE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
)
# gpt-oss's: a reasoning level in the system message, and an analysis channel before the final one
GPT_OSS_STYLE = (
    "<|start|>system<|message|>Reasoning: {{ reasoning_effort | default('medium') }}<|end|>"
    "{% for m in messages %}{% if m['role'] == 'assistant' %}<|start|>assistant<|channel|>final"
    "<|message|>{{ m['content'] }}<|end|>{% else %}<|start|>{{ m['role'] }}<|message|>"
    "{{ m['content'] }}<|end|>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|start|>assistant{% endif %}"
)
server = faults.server  # the loopback OpenAI-compatible server, a fixture
GPT_OSS_SPECIALS = ["<|start|>", "<|message|>", "<|end|>", "<|channel|>"]


def tokenizer(hf_tokenizer, template: str | None, added=(), special=()) -> HFTokenizer:
    """A private copy of the shipped tokenizer with ``template`` and the family's tokens."""
    from transformers import PreTrainedTokenizerFast

    copy = PreTrainedTokenizerFast(
        tokenizer_object=type(hf_tokenizer.backend_tokenizer).from_str(
            hf_tokenizer.backend_tokenizer.to_str()
        ),
        eos_token=hf_tokenizer.eos_token,
    )
    copy.add_tokens(list(added))
    if special:
        copy.add_special_tokens({"additional_special_tokens": list(special)})
    copy.chat_template = template
    return HFTokenizer(copy)


def test_qwen_style_switch_is_set_and_renders_the_closed_thought(hf_tokenizer):
    tok = tokenizer(hf_tokenizer, QWEN_STYLE, added=("<think>", "</think>"))
    fmt = prepare(Thinking("off"), tok, "qwen-style")
    assert (fmt.start, fmt.end, fmt.opened, fmt.special) == ("<think>", "</think>", False, False)
    assert fmt.closed  # its prompts close an empty thought: a reasoning parser's thought is answer
    assert dict(fmt.template_kwargs) == {"enable_thinking": False}
    assert tok.chat_parts()[1].endswith("<think>\n\n</think>\n\n")  # every prompt renders it
    on = tokenizer(hf_tokenizer, QWEN_STYLE, added=("<think>", "</think>"))
    assert dict(prepare(Thinking("on"), on, "m").template_kwargs) == {"enable_thinking": True}
    assert on.chat_parts()[1].endswith("assistant\n")
    assert prepare(Thinking(), tokenizer(hf_tokenizer, QWEN_STYLE), "m").template_kwargs == ()


def test_r1_style_opens_the_thought_and_cannot_turn_it_off(hf_tokenizer):
    tok = tokenizer(hf_tokenizer, R1_STYLE, added=("<think>", "</think>"))
    fmt = prepare(Thinking("on"), tok, "r1-style")
    assert fmt.opened and fmt.end == "</think>"
    # the whole output is thought until the marker, without the opening one
    assert fmt.split("so 7.\n</think>\n\n42") == ("so 7.\n", "42", "model", 14)
    assert fmt.split("so 7 and on")[1:3] == ("", "never")
    with pytest.raises(ThinkingError, match=r"^--thinking off: .* no switch for thinking"):
        prepare(Thinking("off"), tokenizer(hf_tokenizer, R1_STYLE, added=("</think>",)), "r1")


def test_gpt_oss_style_reasoning_level_and_its_special_marker(hf_tokenizer):
    tok = tokenizer(hf_tokenizer, GPT_OSS_STYLE, special=GPT_OSS_SPECIALS)
    fmt = prepare(Thinking("low"), tok, "oss")
    assert (fmt.start, fmt.end) == MARKERS[2]
    assert fmt.special  # its channel tokens are special: engines must keep them in the text
    assert dict(fmt.template_kwargs) == {"reasoning_effort": "low"}
    assert "Reasoning: low" in tok.chat_parts()[0]
    text = (
        "<|channel|>analysis<|message|>count<|end|><|start|>assistant<|channel|>final<|message|>9"
    )
    assert fmt.split(text)[1:3] == ("9", "model")
    with pytest.raises(ThinkingError, match="pass --thinking low"):
        prepare(
            Thinking("off"), tokenizer(hf_tokenizer, GPT_OSS_STYLE, special=GPT_OSS_SPECIALS), "o"
        )


def test_a_model_that_does_not_think_is_left_alone_and_refused_thinking(hf_tokenizer):
    fmt = prepare(Thinking(), tokenizer(hf_tokenizer, None), "base")
    assert not fmt.thinks and fmt.split("</think> 42") == (None, "</think> 42", None, 0)
    for asked, flag in (
        (Thinking("on"), "--thinking on"),
        (Thinking(budget=64), "--thinking-budget"),
    ):
        with pytest.raises(ThinkingError) as info:
            prepare(asked, tokenizer(hf_tokenizer, None), "base")
        assert str(info.value).startswith(f"{flag}: base shows no end-of-thought marker")
        assert str(info.value).endswith(
            "pass --think-end TEXT with the text that ends its thought, or drop the option"
        )
    given_end = prepare(Thinking("on", end="ANSWER:"), tokenizer(hf_tokenizer, None), "base")
    assert given_end.split("hmm ANSWER: 42") == ("hmm ", "42", "model", 11)


# marker and output pieces: the families' markers and their prefixes, regular-expression
# characters, whitespace, and text
PIECES = ["<think>", "</think>", "</think", "<", ">", "/", "[", "]", ".*", "\\", "$", "(", "|", " "]
PIECES += ["\n", "x", "42"]
MARKER = st.lists(st.sampled_from(PIECES), max_size=3).map("".join)


@example("<think>", "</think>", ["</think>", "</think>", "42"], False)
@example("<think>", "aa", ["aaa"], False)  # an end marker overlapping itself
@example("<think>", "<think>", ["<think>", "x", "<think>", "42"], True)  # opening = closing
@example("", " ", ["x", " ", "42"], False)  # blank: refused
@given(MARKER, MARKER, st.lists(st.sampled_from(PIECES), max_size=12), st.booleans())
def test_every_output_splits_into_thought_and_answer(start, end, pieces, opened):
    """Whatever the markers and the output: a blank end marker is refused; otherwise the output is
    cut in two at the last closing marker, the thought before it and the answer after it, and the
    answer never holds the marker nor any of the text before it; with no marker the output is all
    thought exactly when a thought was opened, else all answer."""
    text = "".join(pieces)
    try:
        end = THINK_END.read(end)
    except OptionError as refused:
        assert not end.strip() and " is blank: " in str(refused)
        return
    fmt = ThoughtFormat(start=start or None, end=end, opened=opened)
    thought, answer, ended, at = fmt.split(text)
    assert end not in answer
    if end in text:
        assert ended == "model" and at == text.rfind(end) + len(end)
        assert text[at:].lstrip() == answer  # the answer is the text after the cut, nothing else
        before = text[: at - len(end)].lstrip()
        assert thought == (before.removeprefix(start).lstrip() if start else before)
    elif opened or (start and text.lstrip().startswith(start)):
        assert (answer, ended, at) == ("", "never", len(text))
    else:
        assert (thought, answer, ended, at) == (None, text, None, 0)


class Scripted:
    """A backend that answers each prompt from a script keyed by what the prompt ends with: for
    budget forcing's plumbing only (the real engines are test_thinking_e2e.py's)."""

    name, max_positions = "scripted", None

    def __init__(self, tok: HFTokenizer, thoughts: dict[int, str], answer: str) -> None:
        self.tokenizer, self.thoughts, self.answer = tok, thoughts, answer
        self.calls: list[GenerationParams] = []
        self.sent: list[Request] = []

    def generate(self, requests, params):
        self.calls.append(params)
        self.sent += requests
        out = []
        for r in requests:
            if params.stop_strings:  # the thought, up to the budget or its closing marker
                ids = self.tokenizer.encode(self.thoughts[r.index])
                kept = self.tokenizer.decode(ids[: params.max_new_tokens])
                end = kept.find("</think>")
                text = kept[: end + len("</think>")] if end >= 0 else kept
                finish = "stop" if end >= 0 or len(ids) <= params.max_new_tokens else "length"
                out.append(Generation(text, min(len(ids), params.max_new_tokens), finish))
            else:
                out.append(Generation(self.answer, 2, "stop"))
        return out

    def describe(self):
        return {}


def test_budget_forcing_closes_a_long_thought_and_answers_with_the_tasks_budget(hf_tokenizer):
    tok = tokenizer(hf_tokenizer, QWEN_STYLE, added=("<think>", "</think>"))
    fmt = prepare(Thinking("on", budget=6), tok, "m")
    thoughts = {
        0: "<think>ok</think>\n\n",
        1: "<think>\n" + "a b c d e f g h " * 4,
        2: "plain",
    }
    engine = Scripted(tok, thoughts, "42")
    forced = forcing(engine, fmt)
    assert isinstance(forced, BudgetForcing)
    assert isinstance(forcing(engine, replace(fmt, budget=None)), AfterThought)
    assert forcing(engine, replace(fmt, mode="off")) is engine
    assert isinstance(forcing(engine, replace(fmt, budget_by="engine")), EngineBudget)
    params = GenerationParams(128, thinking_budget=6)
    gens = forced.generate([Request((1, 2), index=i) for i in range(3)], params)
    # the thought and its closing marker (one token) fit in the budget; the answer keeps its own
    assert [c.max_new_tokens for c in engine.calls] == [5, 128]
    assert engine.calls[0].stop_strings == ("</think>",)
    closed, cut, plain = gens
    assert closed.text.endswith("</think>42") and not closed.forced
    assert cut.forced and cut.text.endswith("c</think>42")  # the marker alone, as vLLM forces
    assert fmt.split(cut.text)[1] == "42"
    assert plain == Generation("plain", 1, "stop")  # no thought opened, EOS: nothing to force


def test_a_held_answer_prefix_follows_the_thought_the_model_closed(hf_tokenizer):
    """RULER's answer prefix, held out of a thinking model's chat prompt, is put after its thought:
    the answer is a second request continuing the prompt, the thought and the prefix, with what
    the thought left of the task's budget; a thought never closed gets none."""
    from ctxgate.run.facts import prompts
    from ctxgate.run.loading import ModelSpec
    from ctxgate.tasks import get_task
    from ctxgate.tasks.build import build_sample

    tok = tokenizer(hf_tokenizer, QWEN_STYLE, added=("<think>", "</think>"))
    spec, task = ModelSpec(str(TINY), chat_template="on"), get_task("niah_single_1")
    plain, held = (
        build_sample(task, prompts(spec, tok, hold_prefix=hold)[0], 512, 0, 42)
        for hold in (False, True)
    )
    assert (
        held.after_thought == tuple(tok.encode(plain.answer_prefix)) and plain.after_thought == ()
    )
    assert held.text + plain.answer_prefix == plain.text
    assert held.text.endswith("<|im_start|>assistant\n")
    # the prefix counts in the length as where it ended the prompt: the same haystack
    assert len(held.input_ids) + len(held.after_thought) == len(plain.input_ids)
    fmt = replace(prepare(Thinking("on"), tok, "m"), answer_prefix="after the thought")
    engine = Scripted(tok, {0: "<think>ok</think>", 1: "<think>\n" + "a b " * 40}, "42")
    after = held.after_thought
    gens = forcing(engine, fmt).generate(
        [Request((1, 2), index=i, after_thought=after) for i in range(2)], GenerationParams(20)
    )
    first = tok.encode("<think>ok</think>")
    assert [c.max_new_tokens for c in engine.calls] == [20, 20 - len(first)]
    assert engine.sent[2].input_ids == (1, 2, *first, *after)
    assert gens[0].text == "<think>ok</think>42" and gens[0].prompt_tokens == 2 + 2 + len(
        first
    ) + len(after)
    assert gens[1].finish_reason == "length" and "</think>" not in gens[1].text
    # a batch mixing both: the request with a prefix continued, the other one request as before
    engine.calls.clear()
    both = [Request((1, 2), index=0, after_thought=after), Request((1, 2), index=0)]
    mixed = forcing(engine, fmt).generate(both, GenerationParams(20))
    assert [m.text for m in mixed] == ["<think>ok</think>42", "42"]
    assert engine.calls[-1] == GenerationParams(20) and len(engine.calls) == 3
    # a thought that took the whole budget leaves no room: cut, never answered
    engine.calls.clear()
    (whole,) = forcing(engine, fmt).generate(both[:1], GenerationParams(len(first)))
    assert whole.finish_reason == "length" and len(engine.calls) == 1
    # over a chat API the prefix is left out: one request as before
    engine.calls.clear()
    forcing(engine, replace(fmt, answer_prefix="left out")).generate(both[:1], GenerationParams(20))
    assert engine.calls == [GenerationParams(20)]


@pytest.fixture(scope="module")
def held_contexts(hf_tokenizer):
    """A Qwen3-style chat context as the suite builds it, and the same holding the answer prefix."""
    from ctxgate.run.facts import prompts
    from ctxgate.run.loading import ModelSpec

    tok = tokenizer(hf_tokenizer, QWEN_STYLE, added=("<think>", "</think>"))
    spec = ModelSpec(str(TINY), chat_template="on")
    return tuple(prompts(spec, tok, hold_prefix=hold)[0] for hold in (False, True))


@settings(deadline=None)  # the first build at a length tokenizes its haystack
@given(
    st.sampled_from(["niah_single_1", "niah_multikey_1", "niah_multivalue", "vt", "cwe", "fwe"]),
    st.integers(1, 2048),
    st.integers(0, 3),
)
def test_a_held_prefix_keeps_the_length_rule_and_the_haystack_at_every_length(
    held_contexts, task, length, index
):
    """From 1 token up: a prompt whose prefix is held is built where the plain one is, fits in the
    length with its prefix and the answer budget, and is the plain prompt's text less the prefix."""
    from ctxgate.tasks import get_task
    from ctxgate.tasks.base import TaskTooShort
    from ctxgate.tasks.build import build_sample

    spec = get_task(task)
    built = []
    for ctx in held_contexts:
        try:
            built.append(build_sample(spec, ctx, length, index, 42))
        except TaskTooShort:
            built.append(None)
    plain, held = built
    assert (plain is None) == (held is None)
    if plain is None or held is None:
        return
    assert (
        held.after_thought
        and len(held.input_ids) + len(held.after_thought) + spec.tokens_to_generate <= length
    )
    assert held.text + plain.answer_prefix == plain.text


def outcome(i: int, end, finish: str = "stop", tokens: int = 10) -> SampleOutcome:
    return SampleOutcome(
        i, 1.0, "a", "a", ("a",), 100, tokens, finish, "x", thought_tokens=tokens, thought_end=end
    )


def test_the_record_counts_each_cut_and_the_gate_names_the_budget_to_raise():
    samples = [
        outcome(0, "model"),
        outcome(1, "forced", tokens=64),
        outcome(2, "forced", "length", tokens=64),  # both budgets cut it: one sample cut
        outcome(3, "never", "length"),
        outcome(4, None),  # no thought: not counted
    ]
    t = thinking_record(samples, 128, 64)
    assert t is not None
    assert (t.samples, t.tokens_max, t.thought_cut, t.answer_cut, t.never_ended, t.cut) == (
        4,
        64,
        3,
        1,
        1,
        3,
    )
    record = CaseRecord(
        "niah_single_1", "ruler", 512, verdict="fail", thinking=replace(t, max_cut_share=0.1)
    )
    line = cut_failure(record)
    assert line is not None and line.startswith("3 of 4 samples cut by a budget (75% > max 10%)")
    assert "Fix: raise --thinking-budget above 64, or raise [thinking] max_cut_share" in line
    gate = cases_gate([record])
    assert gate.verdict == "fail" and "niah_single_1-512: 3 of 4 samples cut" in gate.message
    shared = thinking_record(samples[3:4], 128, None)
    assert shared is not None
    text = cut_failure(CaseRecord("vt", "ruler", 512, thinking=shared))
    assert (
        text is not None
        and "at the task's 128 tokens" in text
        and "pass --thinking-budget N above 10" in text
    )
    assert (
        cut_failure(CaseRecord("vt", "ruler", 512, thinking=replace(shared, max_cut_share=1.0)))
        is None
    )


class Sprawling:
    """An engine whose thought runs ``words`` words and closes, stays open, or is not written (the
    model answers at once), and whose answer runs ``answer`` words, each cut at the tokens asked
    for; ``opened``: the prompt opened the thought, so the output starts inside it. It keeps each
    prompt's length and the tokens asked for after it. Asked for its own budget, it thinks as
    vLLM's is documented to: the tokens after the last opening marker counted, the prompt's
    included, the closing marker forced at the budget, and the answer in the same request."""

    name, max_positions = "sprawling", None

    def __init__(
        self, tok: HFTokenizer, words: int, thought: str, answer: int, opened: bool
    ) -> None:
        self.tokenizer, self.sent, self.opened = tok, [], opened
        body = "so the key is here " * words + ("\n</think>" if thought == "closes" else "")
        self.thought = "" if thought == "none" else ("" if opened else "<think>\n") + body
        self.answer = "42 " * answer

    def generate(self, requests, params):
        self.sent += [(len(r.input_ids), params.max_new_tokens) for r in requests]
        encode = self.tokenizer.encode
        out = []
        for r in requests:
            if params.by_engine:
                ids, (start,), (end,) = encode(self.thought), encode("<think>"), encode("</think>")
                prompt = list(r.input_ids)
                inside = prompt[::-1].index(start) if start in prompt else 0  # tokens after it
                room = (0 if self.opened else 1) + params.thinking_budget - inside
                if (self.opened or start in ids) and end not in ids[: room + 1]:
                    # past the budget it is closed for the model; short of it, the model stopped
                    ids = ids[:room] + [end] + encode(self.answer) if len(ids) > room else ids
                else:
                    ids += encode(self.answer)
            else:
                ids = encode(self.thought if params.stop_strings else self.answer)
            kept = ids[: params.max_new_tokens]
            finish = "length" if len(ids) > params.max_new_tokens else "stop"
            out.append(Generation(self.tokenizer.decode(kept), len(kept), finish))
        return out

    def describe(self):
        return {}


@pytest.mark.parametrize("by", ["forcing", "engine"])
@given(
    prompt=st.integers(1, 400),
    answer_budget=st.integers(1, 128),
    budget=st.integers(3, 96),
    words=st.integers(0, 40),
    thought=st.sampled_from(["closes", "open", "none"]),
    answer=st.integers(0, 200),
    opened=st.booleans(),
)
def test_a_case_at_length_l_with_a_thinking_budget_holds_at_most_l_plus_its_positions(
    hf_tokenizer, by, prompt, answer_budget, budget, words, thought, answer, opened
):
    """The length contract with a thinking budget N, held by budget forcing or by the engine: the
    prompt and the task's answer budget fit in L as without one, and the thought, both its
    markers included, takes at most N more: no request holds more than L + N positions, and the
    answer kept is at most the task's budget, whatever the thought and the answer, and whether
    the prompt opened the thought or the model did."""
    tok = tokenizer(hf_tokenizer, QWEN_STYLE, added=("<think>", "</think>"))
    fmt = replace(prepare(Thinking(budget=budget), tok, "m"), budget_by=by, opened=opened)
    fmt = replace(fmt, prompt_thought=len(tok.encode("\n")) if opened else 0)  # "<think>\n"
    engine = Sprawling(tok, words, thought, answer, opened)
    ids = tuple(range(prompt)) + (tuple(tok.encode("<think>\n")) if opened else ())
    length = len(ids) + answer_budget  # the prompt as built: input plus answer budget fill L
    params = GenerationParams(answer_budget, thinking_budget=budget, by_engine=by == "engine")
    (gen,) = forcing(engine, fmt).generate([Request(ids)], params)
    assert all(held + asked <= length + budget for held, asked in engine.sent)
    _, _, ended, at = fmt.split(gen.text)
    if ended == "never":
        return  # the model stopped inside its thought: no answer
    assert len(tok.encode(gen.text[:at])) <= budget  # the thought, as the record counts it
    assert len(tok.encode(gen.text[at:])) <= answer_budget
    if thought == "open" and ended == "model":  # the budget closed what the model did not
        assert gen.forced


def test_a_budget_that_leaves_no_room_before_the_closing_marker_is_refused(hf_tokenizer):
    tok = tokenizer(hf_tokenizer, QWEN_STYLE, added=("<think>", "</think>"))
    with pytest.raises(ThinkingError) as info:
        prepare(Thinking(budget=1), tok, "m")
    assert str(info.value) == (
        "--thinking-budget 1 leaves no room for a thought before m's closing marker (1 token(s), "
        "counted in the budget): give --thinking-budget 2 or more"
    )


def test_a_baseline_that_thought_otherwise_is_not_compared_with():
    """A comparison says what it compares: a run with another thinking budget (or none, or held
    by another engine) is no baseline for this one, though its prompts are the same. A report
    from before the holder was recorded forced its budget."""
    from ctxgate.gate.baseline import Baseline, BaselineError
    from ctxgate.records.schema import RunInfo

    fmt = ThoughtFormat(budget=64, start="<think>", end="</think>", budget_by="forcing")
    run = RunInfo("m", None, 42, None, (512,), "on", thinking=fmt.describe())
    Baseline("same.json", run, {}).check_run(run)
    older = {k: v for k, v in fmt.describe().items() if k != "budget_by"}
    Baseline("older.json", replace(run, thinking=older), {}).check_run(run)
    for other in (None, replace(fmt, budget=None), replace(fmt, budget_by="engine")):
        thinking = other.describe() if other else None
        with pytest.raises(BaselineError, match=r"differ in thinking setting \("):
            Baseline("b.json", replace(run, thinking=thinking), {}).check_run(run)


class Server:
    """What the suite asks a server backend about a thinking budget (``Backend``'s optional
    ``own_thinking_budget``)."""

    def __init__(self, chat_api: bool, own: bool) -> None:
        self.chat_api, self.own = chat_api, own

    def own_thinking_budget(self) -> bool:
        return self.own


def test_the_engine_holds_the_budget_where_it_has_one_and_a_chat_api_needs_it(hf_tokenizer):
    from ctxgate.ext.thinking.reading import budget_holder

    tok = tokenizer(hf_tokenizer, QWEN_STYLE, added=("<think>", "</think>"))
    fmt = prepare(Thinking(budget=8), tok, "m")
    assert budget_holder(False, Server(False, True), fmt).budget_by == "engine"
    assert budget_holder(False, Server(True, True), fmt).budget_by == "engine"
    assert budget_holder(True, Server(False, True), fmt).budget_by == ("forcing")
    assert budget_holder(False, Server(False, False), fmt).budget_by == "forcing"
    assert budget_holder(False, object(), fmt).budget_by == "forcing"  # transformers: none
    assert budget_holder(False, Server(False, True), replace(fmt, budget=None)).budget_by is None
    with pytest.raises(ThinkingError, match="give the server those markers, or use --endpoint"):
        budget_holder(False, Server(True, False), fmt)


def test_budget_forcing_through_a_chat_api_is_refused_in_one_line(pytester):
    result = pytester.runpytest(
        "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--endpoint-api", "chat",
        "--thinking-budget", "8", "--budget-forcing",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --budget-forcing with --endpoint-api chat: *completions"])


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ("--think-end", ""),
            "--think-end '' is blank: give the text that ends the thought: e.g. --think-end *",
        ),
        (("--think-end", " \t"), "--think-end ' *' is blank: *"),
        (
            ("--budget-forcing",),
            "--budget-forcing without --thinking-budget: *drop --budget-forcing",
        ),
        (
            ("--thinking", "off", "--thinking-budget", "16"),
            "--thinking-budget 16 with --thinking off: *or pass --thinking on",
        ),
    ],
)
def test_thinking_options_that_cannot_hold_are_refused_in_one_line(pytester, args, line):
    result = pytester.runpytest(f"--model={ROOT / 'fixtures' / 'tiny-thinking-niah'}", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {line}"])


def test_a_given_end_marker_opens_as_the_models_family_or_its_tag_does(hf_tokenizer):
    """A closing marker of no family: an output that opens a thought with the model's own marker
    is all thought until the given one, so never counted as an answer."""
    own = prepare(Thinking(end="</nothere>"), tokenizer(hf_tokenizer, R1_STYLE, ["</think>"]), "r1")
    assert (own.start, own.end) == ("<think>", "</nothere>")
    assert own.split("<think>\nhmm</think>\n42") == ("hmm</think>\n42", "", "never", 22)
    bare = tokenizer(hf_tokenizer, None)
    assert prepare(Thinking(end="</reason>"), bare, "m").start == "<reason>"
    assert prepare(Thinking(end="[/R]"), bare, "m").start == "[R]"
    assert prepare(Thinking(end="ANSWER:"), bare, "m").start is None


def test_outputs_that_end_inside_an_unclosed_thought_fail_their_case_in_one_line():
    outcomes = [outcome(i, "never", "length" if i == 0 else "stop") for i in range(4)]
    record = thinking_record(outcomes, 32, None)
    assert record is not None and (record.never_ended, record.unclosed) == (4, 3)
    own = replace(record, max_cut_share=0.5, end="</think>")
    case = CaseRecord("vt", "ruler", 512, thinking=own)
    line = unclosed_failure(case)
    assert line is not None and line.startswith(
        "3 of 4 outputs ended inside their thought: the model stopped on its own before writing "
        "'</think>', so each answer is empty and scored 0. Fix: the model stops before it answers"
    )
    assert "--think-end" not in line  # none was given: no advice about one
    given = unclosed_failure(replace(case, thinking=replace(own, end="</r>", end_given=True)))
    assert given is not None and given.endswith(
        "Fix: --think-end '</r>' is not what this model ends its thoughts with: pass --think-end "
        "with the text its outputs end their thoughts with, or leave --think-end out to find the "
        "model's own marker"
    )
    assert unclosed_failure(replace(case, thinking=replace(own, max_cut_share=0.75))) is None


@pytest.mark.parametrize(
    ("switch", "top_level"),
    [({"reasoning_effort": "low"}, {"reasoning_effort": "low"}), ({"enable_thinking": False}, {})],
)
def test_a_chat_request_carries_the_thinking_switch_where_its_server_reads_it(
    server, switch, top_level
):
    """A template's switch goes in ``chat_template_kwargs``; gpt-oss's level also in the request's
    own ``reasoning_effort``, the field vLLM's harmony path reads (recorded requests: no gpt-oss
    template runs on a CPU vLLM)."""
    import transformers

    from tests.test_endpoint_malformed import backend

    url, script, stats = server
    chat = backend(url, transformers.AutoTokenizer.from_pretrained(str(TINY)), api="chat")
    chat.tokenizer.template_kwargs = switch
    reply = {"index": 0, "message": {"role": "assistant", "content": "42"}, "finish_reason": "stop"}
    script({"completions": [{"choices": [reply]}]})
    before = len(stats()["fields"])
    chat.generate([Request((1, 2, 3), "vt", 1024)], GenerationParams(4))
    (sent,) = stats()["fields"][before:]
    assert sent["chat_template_kwargs"] == switch
    assert {k: sent[k] for k in sent if k == "reasoning_effort"} == top_level


def test_thinking_off_never_scores_a_thought_the_server_returns_and_names_it(hf_tokenizer):
    """A template that closes an empty thought (Qwen3's, thinking off): a parser that saw no marker
    files the whole answer as thought, and it is the answer; a thought beside an answer is the
    model thinking anyway: recorded, counted, never scored, and the run's note names it."""
    from types import SimpleNamespace

    from ctxgate.ext.thinking.lines import off_line
    from ctxgate.ext.thinking.reading import ThoughtReading

    tok = tokenizer(hf_tokenizer, QWEN_STYLE, ["<think>", "</think>"])
    fmt = prepare(Thinking("off"), tok, "qwen")
    assert fmt.closed
    reading = ThoughtReading(fmt, tok, 0.1)
    assert reading.read(Generation("", 2, "stop", thought="42")) == ("42", {})
    answer, fields = reading.read(Generation("7", 9, "stop", thought="the needle is 42"))
    assert answer == "7" and fields["thought"] == "the needle is 42"
    assert fields["thought_end"] == "model"
    record = thinking_record([outcome(i, "model") for i in range(3)], 32, None)
    cases = [CaseRecord("vt", "ruler", 512, n=3, thinking=record), CaseRecord("cwe", "ruler", 512)]
    report = SimpleNamespace(cases=cases, run=SimpleNamespace(thinking=fmt.describe()))
    assert off_line(report) == (  # type: ignore[arg-type]
        "--thinking off: the model thought anyway in 3 of 3 samples of 1 case(s), each thought "
        "removed before scoring; every answer of 1 case(s) came with one: vt-512"
    )
    report.run.thinking = {"mode": "on"}
    assert off_line(report) is None  # type: ignore[arg-type]
