"""BABILong: the bAbI story generator, the prompt (byte for byte BABILong's template), the facts
spread through the haystack, the released sets read from a local folder, and BABILong's answer rule.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ctxgate.data.haystacks import load_essay
from ctxgate.ext.families.babi import LOCATIONS, TASKS, Story, make_story
from ctxgate.ext.families.babilong_files import PROMPTS, config_name, format_input, input_tokens
from ctxgate.ext.families.metrics import TASK_LABELS, compare_answers, parse_references, references
from ctxgate.lengths import parse_length
from ctxgate.metrics.registry import score_prediction
from ctxgate.refusal import Refusal
from ctxgate.sources.errors import DataNotGiven, DataUnavailable
from ctxgate.sources.helmet_files import order
from ctxgate.tasks import BuildContext, MaterialExhausted, TaskTooShort, get_task
from ctxgate.tasks.base import Sample
from ctxgate.tasks.build import build_sample

GENERATED = [f"ctx_babi_{t}" for t in TASKS]
OFFICIAL = [f"babilong_{t}" for t in TASKS]
# tiny tokens of the shipped haystack's longest sentence (218), and the token a boundary may add:
# the fill ends within one sentence of the length, whichever sentence comes last
LONGEST_SENTENCE = 219
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# --- the story generator
# ------------------------------------------------------------------------------------------

MOVE = re.compile(r"(\w+) (?:went to|moved to|travelled to|journeyed to|went back to) the (\w+)\.")
TAKE = re.compile(r"(\w+) (?:got|grabbed|picked up|took) the (\w+) there\.")
DROP = re.compile(r"(\w+) (?:dropped|discarded|put down|left) the (\w+)\.")
GIVE = re.compile(r"(\w+) (?:gave|handed|passed) the (\w+) to (\w+)\.")
RELATION = re.compile(r"The (\w+) is (north|south|east|west) of the (\w+)\.")
OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}


def replay(
    facts: tuple[str, ...],
) -> tuple[dict[str, str], dict[str, list[str]], list[tuple[str, str, str]]]:
    """An independent reading of a story: where everyone is, every room each object was in, the
    handovers."""
    where: dict[str, str] = {}
    holder: dict[str, str | None] = {}
    rooms: dict[str, list[str]] = {}
    gives: list[tuple[str, str, str]] = []

    def put(obj: str, room: str) -> None:
        if not rooms.setdefault(obj, []) or rooms[obj][-1] != room:
            rooms[obj].append(room)

    for fact in facts:
        if m := MOVE.fullmatch(fact):
            where[m[1]] = m[2]
            for obj, person in holder.items():
                if person == m[1]:
                    put(obj, m[2])
        elif m := TAKE.fullmatch(fact):
            assert m[2] not in holder or holder[m[2]] is None, (
                fact
            )  # nobody takes what another carries
            assert not rooms.get(m[2]) or rooms[m[2]][-1] == where[m[1]], (
                fact
            )  # nor what lies in another room
            holder[m[2]] = m[1]
            put(m[2], where[m[1]])
        elif m := DROP.fullmatch(fact):
            assert holder.get(m[2]) == m[1], fact
            holder[m[2]] = None
        elif m := GIVE.fullmatch(fact):
            assert holder.get(m[2]) == m[1] and where[m[1]] == where[m[3]], (
                fact
            )  # hands over only what one has
            holder[m[2]] = m[3]
            gives.append((m[1], m[2], m[3]))
        else:
            assert RELATION.fullmatch(fact), fact
    return where, rooms, gives


def answer_of(story: Story) -> str:
    """The story's answer worked out from its sentences alone; every question has exactly one."""
    where, rooms, gives = replay(story.facts)
    q = story.question
    if m := re.fullmatch(r"Where is (\w+)\?", q):
        return where[m[1]]
    if m := re.fullmatch(r"Where is the (\w+)\?", q):
        return rooms[m[1]][-1]
    if m := re.fullmatch(r"Where was the (\w+) before the (\w+)\?", q):
        trail = rooms[m[1]]
        assert trail[-1] == m[2] and trail.count(m[2]) == 1, (trail, q)
        return trail[-2]
    stated = [RELATION.fullmatch(f) for f in story.facts]
    known = {(a, d, b) for a, d, b in (s.groups() for s in stated if s)}
    known |= {(b, OPPOSITE[d], a) for a, d, b in known}
    if m := re.fullmatch(r"What is (\w+) of the (\w+)\?", q):
        (found,) = {a for a, d, b in known if (d, b) == (m[1], m[2])}
        return found
    if m := re.fullmatch(r"What is the (\w+) (\w+) of\?", q):
        (found,) = {b for a, d, b in known if (a, d) == (m[1], m[2])}
        return found
    forms = {
        r"Who gave the (\w+) to (\w+)\?": lambda g, m: (g[1], g[2]) == (m[1], m[2]) and g[0],
        r"Who received the (\w+)\?": lambda g, m: g[1] == m[1] and g[2],
        r"Who did (\w+) give the (\w+) to\?": lambda g, m: (g[0], g[1]) == (m[1], m[2]) and g[2],
        r"What did (\w+) give to (\w+)\?": lambda g, m: (g[0], g[2]) == (m[1], m[2]) and g[1],
        r"Who gave the (\w+)\?": lambda g, m: g[1] == m[1] and g[0],
    }
    for pattern, fits in forms.items():
        if m := re.fullmatch(pattern, q):
            (found,) = [
                a for a in (fits(g, m) for g in gives) if a
            ]  # exactly one handover fits the question
            return found
    raise AssertionError(f"unknown question {q!r}")


@SETTINGS
@given(task=st.sampled_from(TASKS), seed=st.integers(0, 2**63))
def test_every_story_answers_its_question_as_its_sentences_say(task, seed):
    story = make_story(task, random.Random(seed))
    assert story == make_story(task, random.Random(seed))  # a pure function of the stream
    assert story.task == task and story.facts and story.question.endswith("?")
    assert all(f.endswith(".") and f[0].isupper() and "  " not in f for f in story.facts)
    assert story.answer in TASK_LABELS[task]  # BABILong's rule credits only its labels
    assert answer_of(story) == story.answer
    assert list(story.supporting) == sorted(set(story.supporting))
    assert all(0 <= i < len(story.facts) for i in story.supporting)
    expected = {"qa1": 1, "qa2": 2, "qa4": 1, "qa5": 1}
    assert (
        len(story.supporting) == expected[task] if task in expected else len(story.supporting) >= 3
    )


def test_supporting_facts_name_the_answer():
    rng = random.Random(5)
    for task in ("qa1", "qa2", "qa3"):
        for _ in range(50):
            story = make_story(task, rng)
            assert any(story.answer in story.facts[i] for i in story.supporting), story


def test_stories_vary_like_babis():
    rng = random.Random(3)
    sizes = {t: {len(make_story(t, rng).facts) for _ in range(200)} for t in TASKS}
    assert sizes["qa1"] == {2, 4, 6, 8, 10} and sizes["qa4"] == {2}
    assert min(sizes["qa3"]) >= 4 and max(sizes["qa3"]) >= 25 and max(sizes["qa2"]) >= 25
    answers = {make_story("qa1", rng).answer for _ in range(200)}
    assert answers == set(LOCATIONS)


def test_an_unknown_task_is_one_line():
    with pytest.raises(
        ValueError, match="no bAbI story generator for 'qa6': choose one of qa1, qa2"
    ):
        make_story("qa6", random.Random(0))


# --- the prompt
# --------------------------------------------------------------------------------------------------

# sha256 of instruction, examples and post_prompt joined by NUL, as babilong/prompts.py has them at
# booydar/babilong 7a6efee29f5cac03c3c410e6799c80fd2ffe3610
REFERENCE_PROMPTS = {
    "qa1": "a8f339c21e91e403b94482ccbed13a2f4d9cdfb2c62052efe5c382d96127b34a",
    "qa2": "4746d936b2085f4f4158d5a7ed5f183b536da7037f087432039ece906da8be7f",
    "qa3": "894c803f75d1ff99c86f8dbce8d81028bdda2b6158d3970c63f031e6e5897eb4",
    "qa4": "d6b6d71d4369cfa5f7bbbf01f93f236e918c971b936c6cb352d50f2cefe19af9",
    "qa5": "2babb04fcc194a16dd77ae50a1436ae58930ca82ed084efaff2cac2b86ed19f9",
}


# babilong/prompts.py's DEFAULT_TEMPLATE (TASK_TEMPLATE, two newlines, USER_TEMPLATE) and
# get_formatted_input, written out here so that no prompt test compares the builders with the code
# they are built from
REFERENCE_TEMPLATE = (
    "{instruction}\n\n{examples}\n\n{post_prompt}\n\n"
    "<context>\n{context}\n</context>\n\nQuestion: {question}"
)


def reference_input(task: str, context: str, question: str) -> str:
    p = PROMPTS[task]
    filled = REFERENCE_TEMPLATE.format(
        instruction=p.instruction,
        examples=p.examples,
        post_prompt=p.post_prompt,
        context=context.strip(),
        question=question,
    )
    return filled.strip()


@pytest.mark.parametrize("task", TASKS)
def test_prompts_are_babilongs(task):
    p = PROMPTS[task]
    joined = "\x00".join([p.instruction, p.examples, p.post_prompt])
    assert hashlib.sha256(joined.encode("utf-8")).hexdigest() == REFERENCE_PROMPTS[task]


def test_format_input_is_the_reference_template():
    """``DEFAULT_TEMPLATE.format(..., context=context.strip(), ...).strip()``: the released
    questions end with a space, which the final strip removes."""
    p = PROMPTS["qa4"]
    text = format_input(p, "  The office is east of the garden. \n", "What is west of the office? ")
    assert text == (
        f"{p.instruction}\n\n{p.examples}\n\n{p.post_prompt}\n\n<context>\nThe office is east of "
        "the garden.\n"
        "</context>\n\nQuestion: What is west of the office?"
    )
    assert format_input(p, "", "Q?").endswith("<context>\n\n</context>\n\nQuestion: Q?")
    assert text == reference_input(
        "qa4", "  The office is east of the garden. \n", "What is west of the office? "
    )


# --- the generated tasks
# ------------------------------------------------------------------------------------------


def ctx_for(encoder, chat=False, **kw) -> BuildContext:
    return BuildContext(encoder=encoder, chat=chat, **kw)


def context_of(encoder, s: Sample, task: str) -> str:
    """The prompt's text between BABILong's template head and tail, checking both."""
    split = task.rsplit("_", 1)[1]
    text = encoder.decode(s.input_ids)
    head, tail = PROMPTS[split].head(), f"\n</context>\n\nQuestion: {s.meta['question']}"
    assert text.startswith(head) and text.endswith(tail), text[:200]
    return text[len(head) : len(text) - len(tail)]


@SETTINGS
@given(
    task=st.sampled_from(GENERATED),
    length=st.one_of(st.integers(1, 1200), st.integers(1, 8192)),
    index=st.integers(0, 10_000),
    seed=st.integers(0, 2**31),
    chat=st.booleans(),
)
# a long sentence last: the fill ends 143 tokens short, within one sentence of the length
@example(task="ctx_babi_qa1", length=4613, index=9999, seed=521148711, chat=True)
def test_every_length_builds_within_the_rule_and_fills_or_refuses(
    hf_encoder, task, length, index, seed, chat
):
    spec = get_task(task)
    try:
        s = build_sample(spec, ctx_for(hf_encoder, chat, seed=seed), length, index, seed)
    except Refusal as exc:
        assert isinstance(exc, TaskTooShort) and "\n" not in str(exc), exc
        return
    used = len(s.input_ids) + spec.tokens_to_generate
    assert used <= length and length - used < LONGEST_SENTENCE
    assert s.answers[0] in TASK_LABELS[task.rsplit("_", 1)[1]]
    for offset, fact in zip(s.meta["fact_offsets"], s.meta["facts"]):
        assert hf_encoder.decode(s.input_ids[offset : offset + 40]).lstrip().startswith(fact)


def spread(sentences: list[str], facts: list[str], positions: list[int]) -> str:
    """BABILong's placement, written out: each fact before the sentence at its position, in the
    story's order."""
    units: list[str] = []
    told = 0
    for i in range(len(sentences) + 1):
        while told < len(facts) and positions[told] == i:
            units.append(facts[told])
            told += 1
        units.extend(sentences[i : i + 1])
    return " ".join(units)


@pytest.mark.parametrize("task", GENERATED)
def test_facts_spread_through_consecutive_haystack_sentences_in_order(hf_encoder, task):
    """The context is the haystack's sentences from a random one on, each fact before the sentence
    its position names (repeats allowed, the story's order kept), all joined by single spaces:
    BABILong's placement."""
    sentences = load_essay().sentences
    for index in range(3):
        s = build_sample(get_task(task), ctx_for(hf_encoder), 4096, index, 42)
        start, k, positions = (
            s.meta["haystack_start"],
            s.meta["haystack_units"],
            s.meta["fact_positions"],
        )
        assert positions == sorted(positions) and all(0 <= p <= k for p in positions)
        want = spread(list(sentences[start : start + k]), s.meta["facts"], positions)
        assert context_of(hf_encoder, s, task) == want


def test_samples_differ_in_story_and_background_and_repeat_exactly(hf_encoder):
    spec = get_task("ctx_babi_qa2")
    a, b = (build_sample(spec, ctx_for(hf_encoder), 2048, i, 42) for i in (0, 1))
    assert (
        a.meta["haystack_start"] != b.meta["haystack_start"] and a.meta["facts"] != b.meta["facts"]
    )
    assert build_sample(spec, ctx_for(hf_encoder), 2048, 1, 42).digest() == b.digest()
    assert build_sample(spec, ctx_for(hf_encoder, seed=7), 2048, 1, 7).digest() != b.digest()


def test_chat_template_wraps_babilongs_prompt_in_one_user_turn(hf_encoder):
    s = build_sample(get_task("ctx_babi_qa1"), ctx_for(hf_encoder, chat=True), 2048, 0, 42)
    head, tail = hf_encoder.chat_parts()
    text = hf_encoder.decode(s.input_ids)
    assert text.startswith(head + PROMPTS["qa1"].instruction) and text.endswith(
        s.meta["question"] + tail
    )


@pytest.mark.parametrize("task", GENERATED)
def test_length_zero_is_the_bare_story(hf_encoder, task):
    """BABILong's 0k: the facts joined by spaces in the template, no background and no length
    cap."""
    s = build_sample(get_task(task), ctx_for(hf_encoder), 0, 3, 42)
    split = task.rsplit("_", 1)[1]
    assert hf_encoder.decode(s.input_ids) == reference_input(
        split, " ".join(s.meta["facts"]), s.meta["question"]
    )
    for offset, fact in zip(s.meta["fact_offsets"], s.meta["facts"]):
        assert hf_encoder.decode(s.input_ids[offset : offset + 40]).lstrip().startswith(fact)


def test_a_short_haystack_wraps_round_and_then_runs_out(hf_encoder, tmp_path):
    sentences = [f"Background sentence number {i} is here." for i in range(120)]
    essay = tmp_path / "essay.txt"
    essay.write_text(" ".join(sentences))
    ctx = ctx_for(hf_encoder, essay_path=str(essay))
    spec = get_task("ctx_babi_qa4")
    wrapped = 0
    for index in range(20):
        s = build_sample(spec, ctx, 1200, index, 42)
        start, k = s.meta["haystack_start"], s.meta["haystack_units"]
        used = [sentences[(start + i) % 120] for i in range(k)]
        assert len(set(used)) == k  # no sentence twice
        wrapped += start + k > 120
        assert context_of(hf_encoder, s, "ctx_babi_qa4") == spread(
            used, s.meta["facts"], s.meta["fact_positions"]
        )
    assert wrapped
    with pytest.raises(MaterialExhausted, match="ran out"):
        build_sample(spec, ctx, 8192, 0, 42)


def test_a_length_too_short_for_the_template_and_story_is_refused(hf_encoder):
    with pytest.raises(
        TaskTooShort, match="ctx_babi_qa5 cannot be built at length 400: its prompt and the story"
    ):
        build_sample(get_task("ctx_babi_qa5"), ctx_for(hf_encoder), 400, 0, 42)


# --- the released sets
# --------------------------------------------------------------------------------------------

RECORDS = [
    {
        "input": "It was a dark night. Mary went to the kitchen. The wind howled. John moved to "
        "the garden. "
        "Mary travelled to the office. Nobody slept.",
        "question": "Where is Mary? ",
        "target": "office",
    },
    {
        "input": "John journeyed to the hallway. Rain fell all day.",
        "question": "Where is John? ",
        "target": "hallway",
    },
    {
        "input": "  Sandra went to the bedroom. \n",
        "question": "Where is Sandra? ",
        "target": "bedroom",
    },
]


def write_parquet(path: Path, rows: list[dict]) -> None:
    import datasets

    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows).to_parquet(str(path))


@pytest.fixture
def released(tmp_path: Path) -> Path:
    """BABILong's hub layout: qa1's 4k config as parquet, qa2's 0k set as the repository's JSON
    file."""
    write_parquet(tmp_path / "babilong" / "4k" / "qa1-00000-of-00001.parquet", RECORDS)
    (tmp_path / "babilong" / "data" / "qa2").mkdir(parents=True)
    (tmp_path / "babilong" / "data" / "qa2" / "0k.json").write_text(json.dumps(RECORDS[1:]))
    return tmp_path


@pytest.mark.parametrize("chat", [False, True])
def test_released_records_are_sent_whole_in_babilongs_prompt_byte_for_byte(
    hf_encoder, released, chat
):
    spec = get_task("babilong_qa1")
    ctx = ctx_for(hf_encoder, chat, data_dir=str(released))
    head, tail = hf_encoder.chat_parts() if chat else ("", "")
    assert spec.pool_size is not None and spec.pool_size(ctx, 4096) == 3
    # sample i is record order(3, seed)[i]: a run of the set's size takes every record once,
    # whatever the seed
    for i, r in enumerate(order(len(RECORDS), 42)):
        s, record = build_sample(spec, ctx, 4096, i, 42), RECORDS[r]
        want = reference_input("qa1", record["input"], record["question"])
        assert hf_encoder.decode(s.input_ids) == head + want + tail
        assert s.answers == references(record["target"], record["question"], TASK_LABELS["qa1"])


def test_released_sets_in_the_json_and_older_parquet_forms(hf_encoder, released):
    s = build_sample(
        get_task("babilong_qa2"), ctx_for(hf_encoder, data_dir=str(released)), 0, 1, 42
    )
    record = RECORDS[1:][order(2, 42)[1]]
    assert hf_encoder.decode(s.input_ids) == reference_input(
        "qa2", record["input"], record["question"]
    )
    write_parquet(released / "babilong" / "qa3" / "32k-00000-of-00001.parquet", RECORDS[:1])
    s = build_sample(
        get_task("babilong_qa3"), ctx_for(hf_encoder, data_dir=str(released)), 32768, 0, 42
    )
    assert s.meta["data_file"].endswith("qa3/32k-00000-of-00001.parquet")


def test_a_set_split_over_files_is_read_in_name_order(hf_encoder, tmp_path):
    """babilong-1k-samples keeps its 128k sets in two parquet files each: one set, its records in
    name order."""
    folder = tmp_path / "babilong" / "4k"
    write_parquet(folder / "qa1-00001-of-00002.parquet", RECORDS[2:])
    write_parquet(folder / "qa1-00000-of-00002.parquet", RECORDS[:2])
    spec, ctx = get_task("babilong_qa1"), ctx_for(hf_encoder, data_dir=str(tmp_path))
    assert spec.pool_size is not None and spec.pool_size(ctx, 4096) == 3
    built = [build_sample(spec, ctx, 4096, i, 42) for i in range(3)]
    assert [s.answers[0] for s in built] == [RECORDS[r]["target"] for r in order(3, 42)]
    assert (
        built[0].meta["data_file"]
        == f"{folder}/qa1-00000-of-00002.parquet, {folder}/qa1-00001-of-00002.parquet"
    )


def test_lengths_are_named_as_babilong_names_its_sets():
    assert [config_name(n) for n in (0, 1024, 4096, 131072, 1 << 20, 3000)] == [
        "0k",
        "1k",
        "4k",
        "128k",
        "1M",
        None,
    ]


@SETTINGS
@given(length=st.one_of(st.integers(-10, 1 << 22), st.sampled_from([1 << 20, 3 << 20, 512 << 10])))
def test_a_length_has_babilongs_name_exactly_when_it_reads_back_as_that_length(length):
    name = config_name(length)
    if length == 0:
        assert name == "0k"
    elif name is None:
        assert length < 0 or length % 1024
    else:
        assert parse_length(name) == length and re.fullmatch(r"[1-9]\d*[kM]", name)


def test_missing_sets_are_not_given_naming_the_path_and_the_download(hf_encoder, released):
    with pytest.raises(
        DataNotGiven, match=r"babilong_qa1 reads BABILong's 8k set of qa1 .*for length 8192.*"
    ):
        build_sample(
            get_task("babilong_qa1"), ctx_for(hf_encoder, data_dir=str(released)), 8192, 0, 42
        )
    with pytest.raises(
        DataNotGiven, match="huggingface-cli download RMT-team/babilong --repo-type dataset"
    ):
        build_sample(get_task("babilong_qa4"), ctx_for(hf_encoder), 4096, 0, 42)
    with pytest.raises(DataNotGiven, match="length 3000 has none"):
        build_sample(
            get_task("babilong_qa1"), ctx_for(hf_encoder, data_dir=str(released)), 3000, 0, 42
        )


@SETTINGS
@given(
    length=st.one_of(st.integers(1, 8192), st.sampled_from([1024, 2048, 4096, 8192])),
    index=st.integers(0, 99),
)
def test_released_sets_at_every_length_build_within_the_rule_or_refuse(
    hf_encoder, released, length, index
):
    spec = get_task("babilong_qa1")
    try:
        s = build_sample(spec, ctx_for(hf_encoder, data_dir=str(released)), length, index, 42)
    except (DataNotGiven, TaskTooShort) as exc:
        # the budget alone fills the length; else only 4096 has a set here (named 4k), and its
        # records all fit
        refusal = TaskTooShort if length <= spec.tokens_to_generate else DataNotGiven
        assert type(exc) is refusal and length != 4096 and "\n" not in str(exc), exc
        return
    assert length == 4096 and len(s.input_ids) + spec.tokens_to_generate <= length
    assert s.answers[0] == RECORDS[order(3, 42)[index % 3]]["target"]


def test_a_malformed_set_names_the_file_the_record_and_the_field(hf_encoder, tmp_path):
    write_parquet(
        tmp_path / "babilong" / "1k" / "qa5-00000-of-00001.parquet",
        [{"input": "x", "question": "q?"}],
    )
    with pytest.raises(
        DataUnavailable, match=r"qa5-00000-of-00001.parquet: record 1 has no text in target"
    ):
        build_sample(
            get_task("babilong_qa5"), ctx_for(hf_encoder, data_dir=str(tmp_path)), 1024, 0, 42
        )


def test_a_record_longer_than_the_length_is_refused_not_cut(hf_encoder, tmp_path):
    long = [
        {
            "input": "Mary went to the kitchen. " * 400,
            "question": "Where is Mary? ",
            "target": "kitchen",
        }
    ]
    write_parquet(tmp_path / "babilong" / "1k" / "qa1-00000-of-00001.parquet", long)
    with pytest.raises(TaskTooShort, match="record 0 .* is never cut"):
        build_sample(
            get_task("babilong_qa1"), ctx_for(hf_encoder, data_dir=str(tmp_path)), 1024, 0, 42
        )


# --- sets sized as BABILong sized them: inputs of L - 300 GPT-2 tokens
# ---------------------------------------------


def sized_like_babilong(
    tokenizer, task: str, config: str, count: int, longer: dict[int, int] | None = None
) -> list:
    """``count`` records of ``task`` sized as BABILong's ``data/create_tasks.py`` sizes them, with
    ``tokenizer`` in GPT-2's place: a story's facts among consecutive haystack sentences, each
    behind a space, the last sentence cut so that the input is the set's length in decimal thousands
    less 300 tokens (``longer[i]`` more for record i), then decoded and stripped."""
    sentences = load_essay().sentences
    rng = random.Random(f"{task}-{config}")
    rows = []
    for i in range(count):
        story = make_story(task, rng)
        size = input_tokens(config) + (longer or {}).get(i, 0)
        facts = [tokenizer(" " + f, add_special_tokens=False)["input_ids"] for f in story.facts]
        background: list[list[int]] = []
        at = rng.randrange(len(sentences))
        while sum(map(len, facts + background)) < size:
            background.append(
                tokenizer(" " + sentences[at % len(sentences)], add_special_tokens=False)[
                    "input_ids"
                ]
            )
            at += 1
        over = sum(map(len, facts + background)) - size
        background[-1] = background[-1][: len(background[-1]) - over]
        gaps: list[list[list[int]]] = [[] for _ in range(len(background) + 1)]
        for fact, gap in zip(facts, sorted(rng.choices(range(len(background) + 1), k=len(facts)))):
            gaps[gap].append(fact)
        for gap, sentence in zip(gaps, background):
            gap.append(sentence)
        ids = [t for gap in gaps for unit in gap for t in unit]
        assert len(ids) == size
        rows.append(
            {
                "input": tokenizer.decode(ids).strip(),
                "question": story.question + " ",
                "target": story.answer,
            }
        )
    return rows


def write_set(root: Path, split: str, config: str, rows: list) -> str:
    path = root / "babilong" / "data" / split / f"{config}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows))
    return str(root)


def test_a_set_sized_as_babilongs_runs_whole_on_a_tokenizer_as_compact_as_the_one_that_sized_it(
    large_vocab_tokenizer, large_vocab_encoder, tmp_path
):
    """A 1k set leaves 1024 - 700 = 324 tokens for the prompt, the chat template and the 20
    generated: Tekken, which sized the set here as GPT-2 sized BABILong's, reads every record whole,
    chat-wrapped, even qa3's long prompt."""
    for split in ("qa1", "qa3"):
        data_dir = write_set(
            tmp_path, split, "1k", sized_like_babilong(large_vocab_tokenizer, split, "1k", 3)
        )
        ctx = ctx_for(large_vocab_encoder, True, data_dir=data_dir)
        for i, r in enumerate(order(3, 42)):
            s = build_sample(get_task(f"babilong_{split}"), ctx, 1024, i, 42)
            assert s.meta["record"] == r and len(s.input_ids) + 20 <= 1024


def test_a_set_sized_as_babilongs_is_refused_whole_by_a_less_compact_tokenizer(
    large_vocab_tokenizer, hf_encoder, tmp_path
):
    """The shipped tiny tokenizer takes about 1.9 times Tekken's tokens for the same text: no record
    of the set fits, and the refusal says so, with the longest record's size and the task that fills
    any length."""
    data_dir = write_set(
        tmp_path, "qa1", "1k", sized_like_babilong(large_vocab_tokenizer, "qa1", "1k", 3)
    )
    want = (
        r"babilong_qa1 cannot be built at length 1024: 0 of the 3 records of BABILong's 1k set of "
        r"qa1 \(\S+1k\.json\) "
        r"fit it in this tokenizer, and a set runs only where every record does: record [0-2] "
        r"takes 1,[0-9]{3} tokens "
        r"with its prompt and the 20 to generate \(BABILong sized the set's inputs to 700 GPT-2 "
        r"tokens; .*ctx_babi_qa1 "
        r"fills any length in any tokenizer\); choose a longer --lengths value$"
    )
    with pytest.raises(TaskTooShort, match=want) as refused:
        build_sample(get_task("babilong_qa1"), ctx_for(hf_encoder, data_dir=data_dir), 1024, 0, 42)
    assert "\n" not in str(refused.value)


def test_one_record_too_long_refuses_the_set_at_every_sample_before_any_is_generated(
    large_vocab_tokenizer, large_vocab_encoder, tmp_path
):
    """A 4k set whose record is 400 tokens longer than BABILong's 3,700: the case runs neither that
    record nor a subset of the others (the tokenizer would pick it), and its first sample, whose own
    record fits, refuses it."""
    long = order(3, 42)[2]  # the record of the run's last sample
    rows = sized_like_babilong(large_vocab_tokenizer, "qa2", "4k", 3, longer={long: 400})
    ctx = ctx_for(large_vocab_encoder, data_dir=write_set(tmp_path, "qa2", "4k", rows))
    for i in range(3):
        with pytest.raises(
            TaskTooShort, match=rf"2 of the 3 records .* record {long} takes 4,[0-9]{{3}} tokens"
        ):
            build_sample(get_task("babilong_qa2"), ctx, 4096, i, 42)
    del rows[long]  # the others alone fit
    ctx = ctx_for(large_vocab_encoder, data_dir=write_set(tmp_path, "qa2", "4k", rows))
    assert all(
        len(build_sample(get_task("babilong_qa2"), ctx, 4096, i, 42).input_ids) <= 4096 - 20
        for i in (0, 1)
    )


# --- the answer rule
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "output", "question", "task", "right"),
    [
        ("office", "The most recent location of Mary is office.", "Where is Mary? ", "qa1", True),
        ("office", "OFFICE", "Where is Mary?", "qa1", True),
        ("office", "office or kitchen", "Where is Mary?", "qa1", False),  # two labels
        # first sentence
        ("office", "Mary is in the kitchen. Later the office.", "Where is Mary?", "qa1", False),
        ("bathroom", "Before the kitchen the apple was in the "
                     "bathroom.", "Where was the apple before the kitchen?",
         "qa3", True),  # a label the question names never counts
        ("garden", "garden<example>kitchen", "What is north of the office?", "qa4", True),
        ("Fred", "Fred gave the apple", "Who gave the apple?", "qa5", True),
        ("apple", "apple, football", "What did Fred give to Bill?", "qa5", False),
        # the reference's "Question" cut: never
        ("bedroom", "Question: bedroom", "Where is John?", "qa1", True),
        ("", "nothing", "Where is John?", "qa1", False),
    ],
)  # fmt: skip
def test_compare_answers_as_babilong(target, output, question, task, right):
    assert compare_answers(target, output, question, TASK_LABELS[task]) is right
    score, looked_at = score_prediction(
        "babilong_match", output, references(target, question, TASK_LABELS[task])
    )
    assert (
        score == float(right)
        and looked_at == output.strip().lower().split(".")[0].split("<example>")[0]
    )


def test_several_targets_need_each_and_nothing_else():
    labels = ("apple", "football", "milk", "nothing")
    assert compare_answers("apple,milk", "Milk and apple", "What is Daniel carrying?", labels)
    assert not compare_answers(
        "apple,milk", "milk, apple, football", "What is Daniel carrying?", labels
    )
    assert not compare_answers("apple,milk", "milk", "What is Daniel carrying?", labels)


@SETTINGS
@given(task=st.sampled_from(TASKS), seed=st.integers(0, 2**63), other=st.integers(0, 6))
def test_the_answer_scores_and_another_label_beside_it_does_not(task, seed, other):
    story = make_story(task, random.Random(seed))
    labels = TASK_LABELS[task]
    refs = references(story.answer, story.question, labels)
    assert parse_references(refs) == (story.answer, story.question, labels)
    assert score_prediction("babilong_match", f" {story.answer}\n", refs)[0] == 1.0
    extra = labels[other % len(labels)]
    if extra != story.answer and extra.lower() not in story.question.lower():
        assert score_prediction("babilong_match", f"{story.answer} {extra}", refs)[0] == 0.0


def test_malformed_references_are_one_line():
    with pytest.raises(
        ValueError,
        match=r"BABILong needs three references, the target, 'question: \.\.\.' and "
        r"'labels: a \| b'",
    ):
        parse_references(["office"])


def test_every_form_is_declared_for_data_verify(released):
    """The loader finds a set through the declaration ``data verify`` checks, in either form."""
    from ctxgate.ext.families.babilong_files import SETS

    found = {s: [p.relative_to(released).as_posix() for p in SETS[s].every(released)] for s in SETS}
    assert found == {
        "qa1": ["babilong/4k/qa1-00000-of-00001.parquet"],
        "qa2": ["babilong/data/qa2/0k.json"],
        **{s: [] for s in ("qa3", "qa4", "qa5")},
    }
    assert SETS["qa2"].fields == ("input", "question", "target")
