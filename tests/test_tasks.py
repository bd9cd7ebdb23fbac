"""Every task: the length rule, the fill margin, where the answer sits, determinism.

The length rule: input ids (BOS, chat template, instruction, context, question, answer prefix) plus
the task's generation budget <= L. The fill: the prompt comes within one haystack unit of that
limit; UNIT states the largest unit of each task with the shipped tiny tokenizer (a noise line is 25
tokens, an essay sentence up to 75).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxgate.records.vocabulary import BROKEN, BY_DESIGN, NOT_GIVEN
from ctxgate.refusal import Refusal
from ctxgate.run.samples import build_samples
from ctxgate.sources.errors import DataNotGiven
from ctxgate.tasks import BuildContext, MaterialExhausted, TaskTooShort, all_tasks, get_task
from ctxgate.tasks.build import build_sample
from ctxgate.tokens.codec import PieceEncoder
from ctxgate.tokens.tokenizers import HFTokenizer
from tests.conftest import HELMET_DATA, HOTPOT, SQUAD

# essay tasks: a Wikipedia sentence of up to 50 words (~130 tiny tokens); the others as noted
UNIT = {
    "niah_single_1": 26,
    "niah_single_2": 140,
    "niah_single_3": 140,
    "niah_multikey_1": 140,
    "niah_multikey_2": 30,
    "niah_multikey_3": 75,
    "niah_multivalue": 140,
    "niah_multiquery": 140,
    "vt": 26,
    "cwe": 16,
    "fwe": 32,
    "qa_1": 60,
    "qa_2": 45,
    "json_kv": 80,
    # HELMET applications on the fixture data: a passage, a demo, or (books) nothing: the cut is
    # exact.
    "kilt_nq": 60,
    "kilt_triviaqa": 60,
    "kilt_popqa": 60,
    "kilt_hotpotqa": 80,
    "msmarco_rerank": 40,
    "icl_trec_coarse": 30,
    "icl_trec_fine": 30,
    "icl_banking77": 40,
    "icl_clinic150": 40,
    "icl_nlu": 40,
    "infbench_qa": 1,
    "infbench_mc": 1,
    # judged tasks: documents cut exactly (NarrativeQA, summaries); ALCE fills whole retrieved
    # documents
    "narrativeqa": 1,
    "infbench_sum": 1,
    "multi_lexsum": 1,
    "alce_asqa": 80,
    "alce_qampari": 80,
    # HELMET's RULER files: the context is cut by tokens
    "helmet_multikey_2": 1,
    "helmet_multikey_3": 1,
    "helmet_multivalue": 1,
    # NoLiMa-style: a Wikipedia sentence of the haystack, the longest 196 tiny tokens (nolima: its
    # needle set read from the data folder)
    "ctx_nolima": 200,
    "ctx_nolima_direct": 200,
    "nolima": 200,
    # BABILong-style: a Wikipedia sentence of the haystack; released records are sent whole (the
    # fixtures leave <100)
    "ctx_babi_qa1": 140,
    "ctx_babi_qa2": 140,
    "ctx_babi_qa3": 140,
    "ctx_babi_qa4": 140,
    "ctx_babi_qa5": 140,
    "babilong_qa1": 100,
    "babilong_qa2": 100,
    "babilong_qa3": 100,
    "babilong_qa4": 100,
    "babilong_qa5": 100,
    # MRCR-style: a conversation turn (request, answer, the template between: up to ~143 tiny
    # tokens); OpenAI MRCR's rows are sent whole, never cut, each in its length's bin (L/2, L] as
    # OpenAI bins them: at 4K, half of it
    "ctx_mrcr_2": 150,
    "ctx_mrcr_4": 150,
    "ctx_mrcr_8": 150,
    "mrcr_2needle": 2049,
    "mrcr_4needle": 2049,
    "mrcr_8needle": 2049,
}
# The extras whose folders hold their own build tests (tests/ext/<suite>/: every length built or
# refused, the length rule, fill, determinism): their tasks need data and budgets of their own, so
# the tables below hold the spine's and the families' tasks; the property test takes every task.
OWN_TESTS = ("ruler2", "mrcr2", "graphwalks", "longbench2")
TESTS = Path(__file__).parent
ALL_TASKS = [t.name for t in all_tasks()]
TASKS = [t.name for t in all_tasks() if t.suite not in OWN_TESTS]
FILE_LENGTHS = {
    "helmet_multikey_2": (1024, 2048),
    "helmet_multikey_3": (1024, 2048),
    "helmet_multivalue": (1024, 2048),
    "mrcr_2needle": (4096, 8192),
    "mrcr_4needle": (4096, 8192),
    "mrcr_8needle": (4096, 8192),
}
# the length each task is built at where one length serves every task: OpenAI MRCR's 2048-token
# budget fills 2K
PROBE = {"mrcr_2needle": 4096, "mrcr_4needle": 4096, "mrcr_8needle": 4096}


DATA = {"dir": str(HELMET_DATA)}


@pytest.fixture(autouse=True, scope="module")
def _with_long_documents(helmet_data_long):
    """The fixtures plus long NarrativeQA / Multi-LexSum documents, which HELMET's length selection
    keeps."""
    DATA["dir"] = str(helmet_data_long)


def ctx_for(encoder, chat: bool = False, seed: int = 42) -> BuildContext:
    return BuildContext(
        encoder=encoder,
        chat=chat,
        seed=seed,
        squad_source=str(SQUAD),
        hotpotqa_source=str(HOTPOT),
        data_dir=DATA["dir"],
    )


def test_unit_table_covers_every_task():
    assert set(UNIT) == set(TASKS)
    own = {get_task(t).suite for t in ALL_TASKS} - {get_task(t).suite for t in TASKS}
    assert own == set(OWN_TESTS)
    for suite in own:  # each tests its builds at every length in its own folder
        tests = (Path(__file__).parent / "ext" / suite).glob("test_*.py")
        found = (
            re.search(r"def test_(every|any)_length_builds", f.read_text("utf-8")) for f in tests
        )
        assert any(found), suite


def _by_whether_they_fit() -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(task, length) at 1K, 2K and 4K: those a prompt fits, and those the task refuses (its
    generation budget and fixed parts leave no room for its context, or HELMET's own file for that
    length does not exist)."""
    fits, refused = [], []
    for task in TASKS:
        for length in (1024, 2048, 4096):
            too_short = length in TOO_SHORT.get(task, ())
            no_file = length not in FILE_LENGTHS.get(task, (length,))
            (refused if too_short or no_file else fits).append((task, length))
    return fits, refused


# generating 300-1200 tokens, these leave a 1K prompt no room for one document
TOO_SHORT = {
    "alce_asqa": (1024,),
    "alce_qampari": (1024,),
    "infbench_sum": (1024,),
    # MRCR-style: two worked examples, the needle turns and a 250-token budget take more than 1K
    "ctx_mrcr_2": (1024,),
    "ctx_mrcr_4": (1024,),
    "ctx_mrcr_8": (1024,),
}
FITS, REFUSED = _by_whether_they_fit()


@pytest.mark.parametrize(("task", "length"), FITS)
@pytest.mark.parametrize("chat", [False, True])
def test_length_rule_and_fill(hf_encoder, task, length, chat):
    """Every prompt fits; one that did not use up its data is within one unit of the length, and one
    that did (the tiny fixture data runs out at longer lengths) is not scored unless it is within
    2%."""
    spec = get_task(task)
    ctx = ctx_for(hf_encoder, chat)
    for i in range(3):
        try:
            s = build_sample(spec, ctx, length, i, 42)
        except (
            MaterialExhausted
        ) as exc:  # the fixture data ran out more than 2% short of the length
            assert f"{task} cannot fill length {length}" in str(exc) and exc.fill < 0.98
            return
        used = len(s.input_ids) + spec.tokens_to_generate
        assert used <= length, f"{task}@{length}: {used} tokens"
        if not s.meta.get("pool_exhausted"):
            assert length - used < UNIT[task], (
                f"{task}@{length}: {length - used} tokens left unfilled"
            )
        else:
            assert used >= length * 0.98


@pytest.mark.parametrize(("task", "length"), REFUSED)
def test_a_length_a_task_cannot_fill_is_refused_naming_the_length(hf_encoder, task, length):
    with pytest.raises((TaskTooShort, DataNotGiven), match=f"{length}"):
        build_sample(get_task(task), ctx_for(hf_encoder), length, 0, 42)


@pytest.mark.parametrize("task", TASKS)
def test_decoded_prompt_retokenizes_to_the_same_count(hf_encoder, hf_tokenizer, task):
    s = build_sample(get_task(task), ctx_for(hf_encoder), PROBE.get(task, 2048), 0, 42)
    again = hf_tokenizer(hf_encoder.decode(s.input_ids), add_special_tokens=False)["input_ids"]
    assert abs(len(again) - len(s.input_ids)) <= 2


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    task=st.sampled_from(ALL_TASKS),
    # every length from 0 (the bare form) to 8K; one draw in two below 600, where the fixed parts
    # run out of room
    length=st.one_of(st.integers(0, 600), st.integers(0, 8192)),
    index=st.integers(0, 10_000),
    seed=st.integers(0, 2**31),
    chat=st.booleans(),
    output_in_length=st.booleans(),
)
def test_every_task_at_every_length_builds_a_prompt_within_the_rule_or_refuses(
    hf_encoder, task, length, index, seed, chat, output_in_length
):
    """The length contract, over the whole domain: a prompt whose ids plus the generation budget fit
    the length (the prompt alone, where the task's length is its prompt's), or one of the designed
    refusals carrying its cause; never another exception."""
    spec = replace(get_task(task), output_in_length=output_in_length)
    try:
        s = build_sample(spec, ctx_for(hf_encoder, chat, seed=seed), length, index, seed)
    except Refusal as exc:
        assert exc.cause in (*BY_DESIGN, *NOT_GIVEN, *BROKEN), exc.cause
        assert str(exc) and "\n" not in str(exc), str(exc)  # one line, naming what and the fix
        assert length or exc.cause == "too_short" or spec.bare, (
            exc
        )  # at 0 a task without a bare form is too short
        return
    assert length and len(s.input_ids) + spec.held_in_length <= length or spec.bare and not length
    assert s.answers and all(s.answers)


HELMET_COMPAT = [
    "alce_asqa",
    "alce_qampari",
    "infbench_mc",
    "infbench_qa",
    "infbench_sum",
    "multi_lexsum",
    "narrativeqa",
]


@pytest.fixture(scope="module")
def sp_encoder(sp_tokenizer) -> PieceEncoder:
    return PieceEncoder(HFTokenizer(sp_tokenizer))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    task=st.sampled_from(HELMET_COMPAT),
    length=st.one_of(st.integers(1, 600), st.integers(1, 8192), st.sampled_from([4096, 8192])),
    index=st.integers(0, 10_000),
    chat=st.booleans(),
)
def test_helmet_compat_at_every_length_builds_a_prompt_within_the_rule_or_refuses(
    hf_encoder, sp_encoder, task, length, index, chat
):
    """The same contract for HELMET's own prompts (``--helmet-compat``, pre-cut in a Llama-2-shaped
    tokenizer)."""
    spec = get_task(task)
    ctx = replace(ctx_for(hf_encoder, chat), helmet_compat=True, helmet_encoder=sp_encoder)
    try:
        s = build_sample(spec, ctx, length, index, 42)
    except Refusal as exc:
        assert exc.cause in (*BY_DESIGN, *NOT_GIVEN, *BROKEN), exc.cause
        assert str(exc) and "\n" not in str(exc), str(exc)
        return
    assert len(s.input_ids) + spec.tokens_to_generate <= length
    assert s.answers and all(s.answers)


@pytest.mark.parametrize("task", TASKS)
def test_same_inputs_same_bytes_other_seed_other_data(hf_encoder, task):
    spec = get_task(task)
    i = (
        0 if task in FILE_LENGTHS else 3
    )  # (six records: seeds 42 and 7 happen to put the same one at index 3)
    length = PROBE.get(task, 2048)
    a = build_sample(spec, ctx_for(hf_encoder), length, i, 42)
    b = build_sample(spec, ctx_for(hf_encoder), length, i, 42)
    c = build_sample(spec, ctx_for(hf_encoder, seed=7), length, i, 7)
    assert a.digest() == b.digest()
    if task.startswith(
        "alce_"
    ):  # HELMET's order and demo draws for seed 7 may repeat seed 42's at one index
        others = [build_sample(spec, ctx_for(hf_encoder, seed=7), 2048, j, 7) for j in range(6)]
        mine = [build_sample(spec, ctx_for(hf_encoder), 2048, j, 42) for j in range(6)]
        assert [s.digest() for s in others] != [s.digest() for s in mine]
        return
    assert a.digest() != c.digest()


def test_a_sample_does_not_depend_on_which_others_were_built(hf_encoder):
    spec = get_task("niah_multikey_2")
    alone = build_sample(spec, ctx_for(hf_encoder), 2048, 5, 42)
    batch = build_samples(spec, ctx_for(hf_encoder), 2048, 6, 42)
    assert batch[5].digest() == alone.digest()


NIAH = [t for t in TASKS if t.startswith("niah")]


@pytest.mark.parametrize("task", NIAH)
def test_needles_sit_at_their_recorded_offsets(hf_encoder, task):
    s = build_sample(get_task(task), ctx_for(hf_encoder), 4096, 1, 42)
    for offset, needle in zip(s.meta["needle_offsets"], s.meta["needles"]):
        window = hf_encoder.decode(s.input_ids[offset : offset + 150])
        assert window.lstrip().startswith(needle)
    text = hf_encoder.decode(s.input_ids)
    for answer in s.answers:  # every expected value is in the context, exactly once
        assert text.count(answer) == 1


@pytest.mark.parametrize("task", ["niah_single_2", "niah_multikey_1", "niah_multivalue"])
def test_essay_needles_at_ruler_depths(hf_encoder, task):
    s = build_sample(get_task(task), ctx_for(hf_encoder), 4096, 2, 42)
    offsets = s.meta["needle_offsets"]
    start, end = offsets[0], len(s.input_ids)
    for depth in s.meta["depths"]:
        assert depth in range(0, 101)
    # the needles are ordered by depth and spread over the context as the depths say (within a few
    # sentences)
    assert offsets == sorted(offsets) and start < end


def test_json_kv_target_at_the_depth_its_index_names(hf_encoder):
    for index, depth in enumerate((0.0, 0.2, 0.4, 0.6, 0.8, 1.0)):
        s = build_sample(get_task("json_kv"), ctx_for(hf_encoder), 4096, index, 42)
        assert s.meta["depth"] == depth
        n = s.meta["num_kvs"]
        assert abs(s.meta["position"] - round(depth * (n - 1))) <= 1
        window = hf_encoder.decode(
            s.input_ids[s.meta["target_offset"] : s.meta["target_offset"] + 150]
        )
        assert f'"{s.meta["key"]}": "{s.answers[0]}"' in window
        assert hf_encoder.decode(s.input_ids).rstrip().endswith("Corresponding value:")


def test_vt_chain_in_order_and_answer_names(hf_encoder):
    s = build_sample(get_task("vt"), ctx_for(hf_encoder), 4096, 0, 42)
    text = hf_encoder.decode(s.input_ids)
    positions = [text.rindex(line) for line in s.meta["chain"]]
    assert positions == sorted(positions)
    assert [line.split()[1] for line in s.meta["chain"]] == list(s.answers)
    assert text.count("Memorize and track") == 2  # the one-shot example, then the task


def test_cwe_common_words_are_most_frequent(hf_encoder):
    s = build_sample(get_task("cwe"), ctx_for(hf_encoder), 4096, 0, 42)
    body = hf_encoder.decode(s.input_ids).rsplit("Below is a numbered list", 1)[1]
    counts = {}
    for token in body.split():
        if token.isalpha():
            counts[token] = counts.get(token, 0) + 1
    for word in s.answers:
        assert counts[word] >= s.meta["freq_cw"]


def test_fwe_answers_are_ranks_two_to_four(hf_encoder):
    s = build_sample(get_task("fwe"), ctx_for(hf_encoder), 4096, 0, 42)
    words = (
        hf_encoder.decode(s.input_ids).split("coded words. ", 1)[1].split("\nQuestion")[0].split()
    )
    ranked = sorted(set(words), key=words.count, reverse=True)
    assert ranked[0] == "..." and tuple(ranked[1:4]) == s.answers


@pytest.mark.parametrize("task", ["qa_1", "qa_2"])
def test_qa_gold_documents_present(hf_encoder, task):
    s = build_sample(get_task(task), ctx_for(hf_encoder), 2048, 0, 42)
    text = hf_encoder.decode(s.input_ids)
    for position in s.meta["gold_documents"]:
        assert f"Document {position}:" in text
    assert any(a in text for a in s.answers)


def test_singular_rewrite_for_one_value(hf_encoder):
    s = build_sample(get_task("niah_single_1"), ctx_for(hf_encoder), 1024, 0, 42)
    text = hf_encoder.decode(s.input_ids)
    assert text.startswith("A special magic number is hidden")
    assert "What is the special magic number for" in text and text.endswith(
        "mentioned in the provided text is"
    )
    assert (
        "One of the special magic numbers for" in text
    )  # the needle keeps the plural, as in RULER


def test_too_short_length_is_a_clear_skip(hf_encoder):
    from ctxgate.tasks import TaskTooShort

    with pytest.raises(TaskTooShort, match="choose a longer --lengths"):
        build_sample(get_task("vt"), ctx_for(hf_encoder), 150, 0, 42)


def test_vt_and_cwe_template_bytes_follow_ruler_head(hf_encoder):
    """RULER HEAD: hop lines end with a space, the one-shot example is followed by a blank line;
    CWE's example answer starts one space after the prefix (`are: 1. w`)."""
    import re

    vt = hf_encoder.decode(build_sample(get_task("vt"), ctx_for(hf_encoder), 4096, 0, 42).input_ids)
    assert (
        len(re.findall(r"VAR [A-Z]{5} = VAR [A-Z]{5} \n", vt)) >= 3
    )  # the task's hops (one may end the context)
    assert re.search(r"VAR [A-Z]{3} = VAR [A-Z]{3} \n", vt)  # the example's
    assert re.search(
        r"they are:  [A-Z]{3} [A-Z]{3} [A-Z]{3} [A-Z]{3} [A-Z]{3}\n\nMemorize and track", vt
    )
    cwe = hf_encoder.decode(
        build_sample(get_task("cwe"), ctx_for(hf_encoder), 4096, 0, 42).input_ids
    )
    assert re.search(r"in the list are: 1\. [a-z]+ 2\. [a-z]+", cwe) and "are:1." not in cwe


def _ruler_essay_context(sentences: tuple[str, ...], depths: list[int], needles: list[str]) -> str:
    """RULER HEAD's essay context, by its rule (scripts/data/synthetic/niah.py): the needles, in the
    order drawn, go before the sentences at ``int(n * (depth / 100))`` for the sorted depths; runs
    of sentences and needles are joined by single spaces, empty runs included."""
    n = len(sentences)
    cuts = [0] + sorted(int(n * (d / 100)) for d in depths) + [n]
    parts: list[str] = []
    for i in range(1, len(cuts)):
        parts.append(" ".join(sentences[cuts[i - 1] : cuts[i]]))
        if i - 1 < len(needles):
            parts.append(needles[i - 1])
    return " ".join(parts)


@pytest.mark.parametrize(
    "task",
    ["niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multivalue", "niah_multiquery"],
)
@pytest.mark.parametrize("edge", [0, 100])
def test_a_needle_at_either_end_of_the_essay_is_spaced_as_in_ruler(hf_encoder, task, edge):
    """A needle at depth 0 has a space before it (after the template's newline), one at depth 100 a
    space after it (before the question's newline): RULER joins an empty run of sentences with its
    separator."""
    from ctxgate.data.haystacks import load_essay

    sentences = load_essay().volumes[0].sentences()  # enough for 2K tokens
    for index in range(400):
        s = build_sample(get_task(task), ctx_for(hf_encoder), 2048, index, 42)
        if edge in s.meta["depths"]:
            break
    else:
        pytest.fail(f"no sample of {task} drew depth {edge}")
    text = hf_encoder.decode(s.input_ids)
    context = text.split("afterwards.\n", 1)[1].rsplit("\nWhat ", 1)[0]
    want = _ruler_essay_context(
        sentences[: s.meta["haystack_units"]], s.meta["depths"], s.meta["needles"]
    )
    assert context == want
    assert context.startswith(" One of") if edge == 0 else context.endswith(". ")


def test_ruler_positions_round_as_ruler_does():
    from ctxgate.tasks.niah import empty_runs, ruler_positions

    assert ruler_positions(100, [29]) == [28]  # 100 * 0.29 is 28.999...: RULER's int() gives 28
    assert ruler_positions(300, [41, 0, 100]) == [0, 122, 300]
    assert empty_runs([0, 5, 5, 9], 9) == 2 and empty_runs([0, 3], 9) == 0


def test_no_long_document_names_the_command_that_writes_some(hf_encoder, tmp_path, monkeypatch):
    """The committed fixtures hold no document HELMET's selection keeps: the refusal prints the
    command that writes fixture data with long ones, and the task builds from what it writes."""
    import re
    import shlex
    import subprocess

    ctx = BuildContext(encoder=hf_encoder, chat=False, data_dir=str(HELMET_DATA))
    with pytest.raises(DataNotGiven) as refused:
        build_sample(get_task("multi_lexsum"), ctx, 4096, 0, 42)
    (fix,) = re.findall(r"`([^`]+)`, then --data-dir (\S+)\)", str(refused.value))[:1] or [("", "")]
    command, folder = fix
    assert subprocess.run(shlex.split(command), cwd=tmp_path, capture_output=True).returncode == 0
    written = BuildContext(encoder=hf_encoder, chat=False, data_dir=str(tmp_path / folder))
    assert len(build_sample(get_task("multi_lexsum"), written, 4096, 0, 42).input_ids) + 400 <= 4096


SCORED = [t for t in TASKS if not get_task(t).metric.judged]


@pytest.mark.parametrize("task", SCORED)
def test_the_output_a_metric_calls_right_scores_in_full(hf_encoder, task):
    """What the scripted plumbing backend answers when it answers right (``tests.scripted.right``)
    is an output the task's metric scores 1 on the task's own references, with and without the chat
    template."""
    from ctxgate.metrics.registry import score_prediction
    from tests.scripted import right

    spec = get_task(task)
    length = PROBE.get(task, 2048)
    for chat in (False, True):
        s = build_sample(spec, ctx_for(hf_encoder, chat), length, 0, 42)
        output = right(spec.metric.name, s.answers)
        assert (
            score_prediction(spec.metric.name, output, s.answers, s.answer_prefix, chat=chat)[0]
            == 1.0
        )
