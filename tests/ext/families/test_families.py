"""The task families beyond RULER and HELMET as the summaries, gates and reports see them: each
family's mean per length (its official data standing in for its generated tasks), length 0 (the bare
form), and the effective length relative to the model's own short-context score (NoLiMa's rule) and
100-LongBench's LongScore for every summary."""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxgate.gate.session import judge_session, relative_lengths, summary_inputs
from ctxgate.gate.summaries import long_score, relative_effective_length, summary_names
from ctxgate.gate.thresholds import Thresholds, ThresholdsError, parse_thresholds
from ctxgate.records.case import CaseRecord
from ctxgate.records.summary import GroupScore
from ctxgate.report.build import build_report
from ctxgate.report.tables import markdown, terminal
from ctxgate.tasks.base import BuildContext, TaskTooShort
from ctxgate.tasks.build import build_sample
from ctxgate.tasks.registry import all_tasks, get_task, membership, task_names
from ctxgate.tokens.codec import PieceEncoder
from tests.scripted import ByteTokenizer

FAMILIES = ("mrcr", "babilong", "nolima")


def test_each_family_is_a_suite_with_its_own_summary_and_test():
    """A family registers its suite and tasks; the suite's test (``test_mrcr[...]``) is the
    spine's, one per registered suite, with no file of the family's own."""
    import importlib

    suites = importlib.import_module("tests_longctx.test_suites")
    tasks = membership()
    for family in FAMILIES:
        members = tasks.families[family]
        assert members and all(
            get_task(t).suite == family and not get_task(t).replaces for t in members
        )
        assert family in summary_names()
        test = getattr(suites, f"test_{family}")
        assert [m.args for m in test.pytestmark if m.name == "ctxgate_suite"] == [(family,)]
        # the official data's tasks stand in for the generated ones, never beside them in the mean
        official = [t.name for t in all_tasks(family) if t.replaces]
        assert official and all(tasks.stand_ins[t] in members for t in official)
        assert not set(members) & set(tasks.ruler) and family not in tasks.helmet


def _case(task: str, length: int, score: float | None, verdict: str = "pass") -> CaseRecord:
    spec = get_task(task)
    return CaseRecord(
        task, spec.suite, length, spec.category, spec.metric.name, verdict=verdict, score=score
    )  # type: ignore[arg-type]


def test_a_family_is_the_mean_of_its_members_and_its_official_data_stands_in_where_it_ran():
    family = "babilong"
    members = membership().families[family]
    cases = [_case(t, 1024, 40.0 + 10 * i) for i, t in enumerate(members)]
    verdict = judge_session(cases, Thresholds(path="t"), True)
    group = verdict.by_length["1024"][family]
    assert group.score == pytest.approx(
        sum(40.0 + 10 * i for i in range(len(members))) / len(members), abs=0.01
    )
    assert group.members == members and not group.partial
    official = next(t for t in all_tasks(family) if t.replaces == members[0])
    verdict = judge_session([*cases, _case(official.name, 1024, 100.0)], Thresholds(path="t"), True)
    # the published twin in its generated task's place, the other generated tasks where they were
    assert verdict.by_length["1024"][family].members == (official.name, *members[1:])
    # a family none of whose members ran has no summary; an errored member makes it incomplete
    assert "mrcr" not in verdict.by_length["1024"]
    errored = judge_session([_case(members[0], 2048, None, "error")], Thresholds(path="t"), False)
    assert errored.by_length["2048"][family].incomplete


def test_length_zero_is_the_bare_form_of_the_tasks_that_have_one_and_a_skip_for_the_others():
    ctx = BuildContext(PieceEncoder(ByteTokenizer()), chat=False)
    bare = [t for t in all_tasks() if t.bare]
    assert bare and all(t.suite == "babilong" for t in bare)
    sample = build_sample(bare[0], ctx, 0, 0, 42)
    assert sample.length == 0 and sample.input_ids and sample.answers
    with pytest.raises(TaskTooShort, match="length 0 is the bare form"):
        build_sample(get_task("niah_single_1"), ctx, 0, 0, 42)


def _groups(scores: dict[int, float | None]) -> dict[int, GroupScore]:
    return {
        L: GroupScore(s, ("t",), errored=() if s is not None else ("t",)) for L, s in scores.items()
    }


def test_relative_effective_length_keeps_a_share_of_the_base_at_every_shorter_length():
    # NoLiMa's rule: the base is the mean up to 1K; 85% of it is the bar
    found = relative_effective_length(
        _groups({256: 90.0, 512: 80.0, 1024: 70.0, 2048: 68.0, 4096: 60.0, 8192: 70.0})
    )
    assert found is not None and found.base == 80.0 and found.base_lengths == (256, 512, 1024)
    assert found.value == 2048  # 68 >= 0.85 * 80; 4096 is below, so 8192 does not count
    assert found.per_length[1024] and not found.per_length[4096] and found.per_length[8192]
    # no length up to 1K scored: no base
    assert relative_effective_length(_groups({2048: 50.0})) is None
    # a base length whose member has no score fails there, and is no part of the base
    incomplete = relative_effective_length(_groups({256: 90.0, 512: None, 2048: 90.0}))
    assert incomplete is not None and incomplete.value == 256 and incomplete.incomplete == (512,)


@given(
    st.dictionaries(
        st.integers(min_value=0, max_value=1 << 20),
        st.one_of(st.none(), st.floats(0, 100)),
        min_size=1,
        max_size=12,
    ),
    st.floats(0.01, 1.0),
    st.integers(min_value=0, max_value=1 << 20),
)
def test_the_relative_effective_length_is_a_tested_length_with_every_shorter_one_passing(
    scores, share, up_to
):
    found = relative_effective_length(_groups(scores), share, up_to)
    base_lengths = [L for L, s in scores.items() if L <= up_to and s is not None]
    if not base_lengths or sum(scores[L] or 0 for L in base_lengths) == 0:
        assert found is None
        return
    assert found is not None and found.base_lengths == tuple(sorted(base_lengths))
    assert found.value == 0 or found.value in scores
    for L in sorted(scores):
        if (
            0 < L <= found.value
        ):  # 0 is the bare form's length, and a value of 0 says no longer length is effective
            assert scores[L] is not None and scores[L] >= share * found.base - 0.01
    first_failing = next((L for L in sorted(scores) if not found.per_length[L]), None)
    assert first_failing is None or found.value < first_failing or found.value == first_failing == 0


def test_long_score_is_100_longbenchs_in_percent_against_its_0_8k_bucket():
    # by hand, as 100-LongBench's rank() computes it: base = the 0-8K bucket's score, (2K + 4K) / 2
    # = 70; each length from 8K on: 100 * (score - 70) / 70, rounded to 2 places (-10, -20, +5);
    # LongScore: their mean, -8.33
    found = long_score(_groups({2048: 60.0, 4096: 80.0, 8192: 63.0, 16384: 56.0, 32768: 73.5}))
    assert found is not None and found.base == 70.0 and found.base_lengths == (2048, 4096)
    assert (
        found.per_length == {8192: -10.0, 16384: -20.0, 32768: 5.0}
        and found.value == -8.33
        and found.why is None
    )
    # the bucket holds samples of 2K, 4K and 6K tokens only: 0, 1K and 3K are in no base; a length
    # with an unscored member is in neither
    mixed = long_score(_groups({0: 10.0, 1024: 10.0, 3072: 10.0, 6144: 90.0, 4096: None, 8192: 45}))
    assert mixed is not None and mixed.base_lengths == (6144,) and mixed.per_length == {8192: -50.0}
    # no invented base: without 2K, 4K or 6K (or a length of 8K or more, or with a base of 0) there
    # is no value
    for scores, why in (
        ({1024: 50.0, 8192: 50.0, 16384: 40.0}, "no length of 2K, 4K or 6K, its base"),
        ({512: 50.0, 2048: 40.0}, "no length of 8K or more"),
        ({4096: 0.0, 8192: 10.0}, "a base of 0"),
    ):
        none = long_score(_groups(scores))
        assert none is not None and none.value is None and none.why == why and not none.per_length
    assert long_score(_groups({4096: None})) is None


@given(
    st.dictionaries(
        st.sampled_from([0, 1024, 2048, 3072, 4096, 6144, 8192, 16384, 131072]),
        st.floats(0.5, 100),
        min_size=1,
    )
)
def test_long_score_is_the_mean_relative_change_of_the_lengths_from_8k_against_2k_4k_and_6k(scores):
    found = long_score(_groups(scores))
    assert found is not None
    below = [s for L, s in scores.items() if L in (2048, 4096, 6144)]
    longer = {L: s for L, s in scores.items() if L >= 8192}
    assert found.base_lengths == tuple(sorted(L for L in scores if L in (2048, 4096, 6144)))
    if not below or not longer:
        assert found.value is None and found.why
        return
    base = sum(below) / len(below)
    assert found.per_length == pytest.approx(
        {L: 100 * (s - base) / base for L, s in longer.items()}, abs=0.006
    )
    assert found.value == pytest.approx(sum(found.per_length.values()) / len(longer), abs=0.006)


def test_the_gate_fails_below_its_length_and_without_a_base_names_the_lengths_to_add():
    text = (
        "[relative_effective_length]\nshare = 0.5\n"
        '[relative_effective_length.min_length]\nbabilong = "2k"\n'
    )
    thresholds = parse_thresholds(text, "t.toml", task_names())
    assert thresholds.relative_share == 0.5 and thresholds.relative_min_length == (
        ("babilong", 2048),
    )
    task = membership().families["babilong"][0]
    good = [_case(task, 512, 80.0), _case(task, 2048, 50.0), _case(task, 4096, 10.0)]
    verdict = judge_session(good, thresholds, True)
    gate = next(g for g in verdict.gates if g.name == "min_relative_effective_length.babilong")
    assert gate.verdict == "pass" and "2K >= required 2K" in gate.message
    bad = judge_session([_case(task, 512, 80.0), _case(task, 2048, 30.0)], thresholds, True)
    assert next(g for g in bad.gates if g.name.startswith("min_relative")).verdict == "fail"
    # each cause of no relative effective length, named as itself
    for cases, said in (
        ([_case("niah_single_1", 512, 80.0)], "no babilong case was selected (none of its tasks "),
        ([_case(task, 4096, 80.0)], "babilong has no case at a length up to 1K, the base it is"),
        (
            [_case(task, 512, None, "error"), _case(task, 4096, 80.0)],
            "babilong has no score at a length up to 1K (its cases there scored 0 or did not",
        ),
    ):
        gate = next(
            g for g in judge_session(cases, thresholds, True).gates if g.name.startswith("min_rel")
        )
        assert gate.verdict == "fail" and gate.message.startswith(said), gate.message
        assert "so its relative effective length cannot reach 2K" in gate.message


@pytest.mark.parametrize(
    ("text", "key", "fix"),
    [
        (
            "[relative_effective_length]\nshare = 85\n",
            "relative_effective_length.share",
            "share = 0.85",
        ),
        (
            "[relative_effective_length]\nbase_up_to = 'short'\n",
            "relative_effective_length.base_up_to",
            '"1k"',
        ),
        ("[relative_effective_length]\nbase = 1\n", "relative_effective_length.base", "base_up_to"),
        (
            "[relative_effective_length.min_length]\nnolimma = '8k'\n",
            "relative_effective_length.min_length.nolimma",
            "nolima",
        ),
        ("[relative_effective_length.min_length]\nruler = 'far'\n", "min_length.ruler", '"1k"'),
    ],
)
def test_a_bad_relative_setting_names_its_key_and_the_fix(text, key, fix):
    with pytest.raises(ThresholdsError) as err:
        parse_thresholds(text, "t.toml", task_names())
    assert key in str(err.value) and fix in str(err.value)


def test_the_report_shows_the_absolute_and_the_relative_effective_length_side_by_side():
    from ctxgate.ext.html.page import PageInput, render
    from ctxgate.records.schema import RunInfo

    ruler = membership().ruler
    nolima = membership().families["nolima"][0]
    cases = [_case(t, L, s) for t in ruler for L, s in ((512, 95.0), (1024, 90.0), (2048, 80.0))]
    cases += [_case(nolima, L, s) for L, s in ((512, 90.0), (1024, 80.0), (2048, 40.0))]
    verdict = judge_session(cases, Thresholds(path="t"), True)
    relative = relative_lengths(summary_inputs(cases, verdict.by_length), Thresholds(path="t"))
    assert set(relative) >= {"ruler", "nolima"}
    report = build_report(cases, RunInfo("m", None, 42, 3, (512, 1024, 2048), "task"), verdict)
    for text in (markdown(report), terminal(report)):
        assert (
            "Effective length, RULER avg: absolute 1K (avg > 85.6), relative 2K (>= 85% of 92.5"
            in text
        )
        assert "Effective length, NoLiMa-style avg: absolute —, relative 1K (>= 85% of 85" in text
        assert "NoLiMa-style avg" in text
        # the note on HELMET Recall names RULER's cases in it, never a family's generated tasks
        (recall,) = [line for line in text.splitlines() if "HELMET Recall at" in line]
        assert "niah_multikey_2" in recall and "ctx_" not in recall
        assert "LongScore — (no length of 8K or more)" in text
    page = render(PageInput(report))
    assert 'id="effective"' in page and 'id="nolima"' in page and "LongScore" in page
    # with lengths on both sides of 8K, LongScore has its base and value; a summary with no relative
    # effective length (no length up to 1K) still shows it
    long = [_case(t, L, s) for t in ruler for L, s in ((4096, 80.0), (8192, 60.0), (16384, 40.0))]
    report = build_report(
        long,
        RunInfo("m", None, 42, 3, (4096, 8192, 16384), "task"),
        judge_session(long, Thresholds(path="t"), True),
    )
    assert (
        report.long_score["ruler"].value == -37.5
        and "ruler" not in report.relative_effective_length
    )
    assert (
        "Effective length, RULER avg: absolute 0 (avg > 85.6), relative —; "
        "LongScore -37.50% (base 80, its mean at 4K)" in markdown(report)
    )
    assert "-37.50% (base 80, its mean at 4K)" in render(PageInput(report))


def test_the_suite_runs_the_families_from_length_0_into_every_report_file(real_suite, pytester):
    """The real tiny checkpoint, the fixture data in the published layouts: the bare form at 0 is a
    scored case, the families' means and relative effective lengths reach the JSON, the Markdown and
    the HTML page, and the report reads back (``ctxgate html``)."""

    from ctxgate.cli import main
    from tests.conftest import HELMET_DATA

    data = (
        "--data-dir",
        str(HELMET_DATA),
        "--lengths",
        "0,512,1k",
        "--samples",
        "2",
        "--report",
        "out/r.json",
    )
    result = real_suite("-k", "ctx_babi_qa1 or babilong_qa1 or ctx_nolima or niah_single_1", *data)
    assert result.ret == 0, result.stdout.str()[-3000:]
    report = json.loads((pytester.path / "out" / "r.json").read_text())
    cases = {(c["task"], c["length"]): c for c in report["cases"]}
    assert (
        cases[("ctx_babi_qa1", 0)]["verdict"] == "pass"
        and cases[("ctx_babi_qa1", 0)]["fill_min"] is None
    )
    assert cases[("niah_single_1", 0)]["skip_kind"] == "too_short"
    assert (
        cases[("babilong_qa1", 1024)]["verdict"] == "pass"
    )  # the released 1k set, from the fixture data
    assert {"babilong", "nolima"} <= set(report["by_length"]["1024"]) and "babilong" in report[
        "by_length"
    ]["0"]
    assert report["by_length"]["1024"]["babilong"]["members"] == [
        "babilong_qa1"
    ]  # the released set stands in
    # a family the tiny model scores 0 on up to 1K has no base to keep a share of; RULER's passkey
    # has one
    assert (
        "ruler" in report["relative_effective_length"]
        and "babilong" not in report["relative_effective_length"]
    )
    assert "BABILong-style avg" in (pytester.path / "out" / "r.md").read_text()
    assert 'id="babilong"' in (pytester.path / "out" / "r.html").read_text()
    page = pytester.path / "again.html"
    assert main(["html", str(pytester.path / "out" / "r.json"), "-o", str(page)]) == 0
    assert 'id="effective"' in page.read_text()


def test_a_sequential_run_cannot_gate_a_relative_effective_length(scripted_suite, pytester):
    """A relative effective length compares averages of means; --sequential's early means are
    biased, so the two together are refused before anything runs, naming the table and the fix."""
    pytester.makefile(".toml", thresholds='[relative_effective_length.min_length]\nruler = "1k"\n')
    refused = scripted_suite(
        "r", {"default": 1.0}, "--lengths", "512", "--sequential", "--thresholds", "thresholds.toml"
    )
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*--sequential cannot check [[]relative_effective_length.min_length[]]*Drop*"]
    )


def test_a_family_case_is_gated_against_a_baseline_and_stopped_early_as_any_case(
    scripted_suite, pytester
):
    """The families are cases like RULER's: a drop against a --baseline fails the case and the
    baseline gate, and --sequential stops a clear case early (plumbing: the scripted backend)."""

    select = (
        "-k",
        "ctx_babi_qa4 or ctx_nolima_direct",
        "--lengths",
        "2k",
        "--samples",
        "40",
        "--no-cache",
    )
    assert scripted_suite("good", {"default": 1.0}, *select).ret == 0
    worse = scripted_suite("worse", {"default": 0.2}, *select, "--baseline", "good.json")
    assert worse.ret == 1
    gates = {
        g["name"]: g["verdict"]
        for g in json.loads((pytester.path / "worse.json").read_text())["gates"]
    }
    assert gates["baseline"] == "fail"
    pytester.makefile(".toml", floors='[[floor]]\ntask = "ctx_*"\nfloor = 50\n')
    early = scripted_suite(
        "early", {"default": 1.0}, *select, "--sequential", "--thresholds", "floors.toml"
    )
    assert early.ret == 0
    cases = json.loads((pytester.path / "early.json").read_text())["cases"]
    assert {c["task"]: c["verdict"] for c in cases} == {
        "ctx_babi_qa4": "pass",
        "ctx_nolima_direct": "pass",
    }
    assert all(c["n"] < 40 and c["stop"]["decided"] == "pass" for c in cases)


LENGTHS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


def test_a_summary_counts_only_what_it_scores_above_chance():
    """A BABILong-style family flat at its chance (18.6), and a strong model falling from 98 to 70:
    the first has no relative effective length and no LongScore, the second keeps 85% of what its
    base scores above chance up to 8K."""
    flat = {L: 18.6 + (1.0 if i % 2 else -1.0) for i, L in enumerate(LENGTHS)}
    at_chance = {L: (18.6, s - 8.0) for L, s in flat.items()}  # its interval's low end below
    none = relative_effective_length(_groups(flat), chances=at_chance)
    assert none is not None and none.value == 0 and none.chance == 18.6
    assert none.why == "its base is not above chance: the low end of its interval 10.3 <= 18.6"
    no_score = long_score(_groups(flat), at_chance)
    assert no_score is not None and no_score.value is None
    assert no_score.why == "its base is not above chance: the low end of its interval 10.6 <= 18.6"
    strong = dict(zip(LENGTHS, (98.0, 98.0, 98.0, 96.0, 94.0, 90.0, 85.0, 80.0, 75.0, 70.0)))
    above = {L: (18.6, s - 3.0) for L, s in strong.items()}
    found = relative_effective_length(_groups(strong), chances=above)
    # the base keeps 98 - 18.6 = 79.4 points above chance; 85% of them: a length needs 86.09
    assert found is not None and found.why is None and found.value == 8192
    assert not found.per_length[16384]
    # LongScore on the points above chance: base (96 + 94) / 2 - 18.6 = 76.4; 8K: 90 - 18.6
    score = long_score(_groups(strong), above)
    assert score is not None and score.chance == 18.6
    assert score.per_length[8192] == round(100 * ((90 - 18.6) - 76.4) / 76.4, 2)
    # chance 0 (RULER's needles): the papers' own rules, unchanged
    assert relative_effective_length(_groups(strong), chances={L: (0.0, 50.0) for L in LENGTHS})
    plain = long_score(_groups(strong))
    zero = long_score(_groups(strong), {L: (0.0, 50.0) for L in LENGTHS})
    assert plain is not None and zero is not None and plain.per_length == zero.per_length


def test_a_gate_on_a_summary_at_chance_fails_saying_why():
    thresholds = parse_thresholds(
        '[relative_effective_length.min_length]\nbabilong = "1k"\n', "t.toml", task_names()
    )
    task = "ctx_babi_qa1"  # one of six rooms: 16.7
    chance = get_task(task).chance
    assert chance == pytest.approx(100 / 6)
    cases = [
        CaseRecord(task, "babilong", L, "reasoning", "babilong_match", "pass", score=s, n=24,
                   chance=chance, ci=(s - 12, s + 16))
        for L, s in ((256, 20.83), (512, 12.5), (1024, 16.67), (2048, 16.67))
    ]  # fmt: skip
    verdict = judge_session(cases, thresholds, True)
    gate = next(g for g in verdict.gates if g.name == "min_relative_effective_length.babilong")
    assert gate.verdict == "fail" and gate.message.startswith(
        "babilong has no relative effective length, so it cannot reach 1K: its base is not above "
        "chance"
    )
    relative = verdict.relative_effective_length["babilong"]
    assert relative.why and relative.value == 0


@contextlib.contextmanager
def guessing(guesses: list[str]) -> Iterator[str]:
    """An OpenAI-compatible server on 127.0.0.1 answering each request with one of ``guesses``
    drawn at random (fixtures/completions_server.py), and the suite's options to run on it."""
    from fixtures.completions_server import start

    url, httpd = start()
    try:
        script = json.dumps({"guesses": guesses}).encode()
        urllib.request.urlopen(
            urllib.request.Request(url.rsplit("/v1", 1)[0] + "/_script", data=script)
        ).read()
        yield url
    finally:
        httpd.shutdown()
        httpd.server_close()


def on_server(url: str) -> tuple[str, ...]:
    from fixtures.completions_server import TINY

    served = ("--backend", "openai", "--base-url", url, "--served-model", "tiny")
    return (*served, "--tokenizer", str(TINY), "--no-cache")


def test_a_model_answering_at_random_over_loopback_has_no_relative_effective_length(
    real_suite, pytester
):
    """Each BABILong question answered with a room drawn at random: the family has no relative
    effective length, and the gate on it fails."""
    rooms = ["bathroom", "bedroom", "garden", "hallway", "kitchen", "office"]
    (pytester.path / "t.toml").write_text(
        '[relative_effective_length.min_length]\nbabilong = "1k"\n'
    )
    with guessing([f"The answer is {r}." for r in rooms]) as url:
        result = real_suite(
            *on_server(url), "-k", "ctx_babi_qa1", "--lengths", "1k,2k,4k", "--samples", "24",
            "--thresholds", "t.toml", "--report", "r.json", model=Path("tiny"),
        )  # fmt: skip
    assert result.ret == 1
    report = json.loads((pytester.path / "r.json").read_text())
    scores = [c["score"] for c in report["cases"] if c["verdict"] != "skip"]
    assert all(0 <= s < 50 for s in scores), scores  # about 16.7, one room in six
    relative = report["relative_effective_length"]["babilong"]
    assert relative["value"] == 0 and relative["why"].startswith("its base is not above chance")
    gates = {g["name"]: g for g in report["gates"]}
    assert gates["min_relative_effective_length.babilong"]["verdict"] == "fail"


def test_answers_naming_every_character_score_0_and_the_report_counts_them(
    real_suite, pytester, capsys
):
    """A model that lists all ten of the record's characters: NoLiMa's rule scores it 100, the
    default metric 0, the report counts every such answer, and the rescore its note names gives
    NoLiMa's figure back."""
    from ctxgate.cli import main
    from ctxgate.ext.families.nolima_files import load_project

    everyone = ", ".join(load_project().of_kind(True)[0].characters)
    with guessing([f"It could be {everyone}."]) as url:
        result = real_suite(
            *on_server(url), "-k", "ctx_nolima and not direct", "--lengths", "2k",
            "--samples", "6", "--report", "r.json", model=Path("tiny"),
        )  # fmt: skip
    case = json.loads((pytester.path / "r.json").read_text())["cases"][0]
    assert case["score"] == 0.0 and case["parts"] == {"named_others": 100.0}
    line = (
        "NoLiMa-style: 6 of 6 answers named another of the record's characters, each scored 0 "
        "(NoLiMa's own rule: ctxgate rescore REPORT.predictions.jsonl --metric nolima_contains)"
    )
    result.stdout.fnmatch_lines([f"*{line}*"])
    capsys.readouterr()
    predictions = str(pytester.path / "r.predictions.jsonl")
    assert main(["rescore", predictions, "--metric", "nolima_contains", "--json"]) == 0
    assert "100" in capsys.readouterr().out


def test_a_summary_whose_base_is_at_chance_says_why_it_has_none_in_every_form():
    """A family scoring 0 where a random answer scores 16.7: its relative effective length and its
    LongScore have none, and the JSON, the tables (terminal and Markdown), the junit file and the
    HTML page each say why, in the same words."""
    from ctxgate.ext.html.page import effective_table
    from ctxgate.gate.thresholds import Thresholds
    from ctxgate.records.schema import RunInfo
    from ctxgate.report.build import build_report
    from ctxgate.report.tables import markdown
    from ctxgate_plugins.junit import properties

    lengths = (256, 512, 1024, 2048, 4096, 8192)
    cases = [
        replace(_case("ctx_babi_qa1", L, 0.0), chance=16.67, n=20, ci=(0.0, 16.1)) for L in lengths
    ]
    verdict = judge_session(cases, Thresholds("t"), True)
    report = build_report(cases, RunInfo("m", None, 42, 20, lengths, "task"), verdict)
    relative, long = report.relative_effective_length["babilong"], report.long_score["babilong"]
    assert relative.value == 0 and relative.why and relative.why.startswith("its base is not above")
    assert long.value is None and long.why and long.why.startswith("its base is not above")
    table = markdown(report)
    assert f"relative — ({relative.why}); LongScore — ({long.why})" in table
    props = dict(properties(report))
    assert props["ctxgate.relative_effective_length.babilong"] == f"n/a: {relative.why}"
    assert props["ctxgate.long_score.babilong"] == f"n/a: {long.why}"
    page = effective_table(report)
    assert relative.why.split(":")[0] in page and long.why.split(":")[0] in page
