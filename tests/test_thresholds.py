import pytest

from ctxgate.gate.thresholds import ThresholdsError, load_thresholds, parse_thresholds
from ctxgate.tasks import task_names
from tests.conftest import call_ctxgate

GOOD = """
[defaults]
floor = 10
confidence = 0.9

[effective_length]
threshold = 80.0

[session]
min_effective_length = "1k"

[[floor]]
task = "niah_*"
floor = 50

[[floor]]
task = "niah_single_1"
length = "<=1k"
floor = 90
"""


def parse(text: str):
    return parse_thresholds(text, "t.toml", task_names())


def test_later_rules_win_and_lengths_compare():
    t = parse(GOOD)
    assert t.floor_for("vt", 512) == 10
    assert t.floor_for("niah_multikey_2", 512) == 50
    assert t.floor_for("niah_single_1", 1024) == 90
    assert t.floor_for("niah_single_1", 2048) == 50
    assert t.min_effective_length == 1024 and t.effective_threshold == 80.0 and t.confidence == 0.9


@pytest.mark.parametrize(
    ("text", "key", "fix"),
    [
        ("[defaults]\nflor = 3\n", "defaults.flor", "use one of floor"),
        ("[[floor]]\ntask = 'niah_singel_1'\nfloor = 3\n", "floor[0].task", "niah_single_1"),
        ("[[floor]]\ntask = 'vt'\nlength = 'big'\nfloor = 3\n", "floor[0].length", "<=32k"),
        ("[[floor]]\ntask = 'vt'\nfloor = 300\n", "floor[0].floor", "floor ="),
        ("[[floor]]\ntask = 'vt'\n", "floor[0].floor", "add floor"),
        ("[session]\nmin_effective_length = 'lots'\n", "session.min_effective_length", "32k"),
        ("[defaults]\nrule = 'lenient'\n", "defaults.rule", '"upper"'),
        ("[defaults\n", "not valid TOML", "Fix"),
    ],
)
def test_errors_name_file_key_and_fix(text, key, fix):
    with pytest.raises(ThresholdsError) as err:
        parse(text)
    message = str(err.value)
    assert message.startswith("t.toml") and key in message and fix in message


def test_missing_file_says_how_to_fix(tmp_path):
    with pytest.raises(ThresholdsError, match="pass --thresholds PATH"):
        load_thresholds(tmp_path / "nope.toml", task_names())


def test_shipped_thresholds_file_is_valid():
    from tests.conftest import ROOT

    t = load_thresholds(ROOT / "thresholds.toml", task_names())
    assert t.effective_threshold == 85.6


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("defaults", "floor"),
        ("defaults", "confidence"),
        ("effective_length", "threshold"),
        ("regression", "tolerance"),
        ("regression", "confidence"),
        ("judge", "max_failure_rate"),
    ],
)
def test_the_suggested_fix_is_itself_valid(section, key):
    import re

    with pytest.raises(ThresholdsError) as err:
        parse(f"[{section}]\n{key} = 1000.5\n")
    suggestion = re.search(rf"write e\.g\. ({key} = [0-9.]+)$", str(err.value))
    assert suggestion, str(err.value)
    parse(f"[{section}]\n{suggestion.group(1)}\n")  # the line the message offers parses


def test_an_out_of_range_confidence_suggests_a_confidence():
    with pytest.raises(
        ThresholdsError,
        match=r"1\.5 is not a number in \[0\.5, 0\.999\]. Fix: write e\.g\. "
        r"confidence = 0\.95$",
    ):
        parse("[defaults]\nconfidence = 1.5\n")


def test_the_shipped_file_and_every_example_in_it_parse(tmp_path):
    """The shipped thresholds.toml as it is, and with each commented example uncommented: what a
    user copies from it must be what the parser reads."""
    import re
    from pathlib import Path

    from ctxgate.gate.thresholds import load_or_default
    from ctxgate.tasks.registry import task_names

    shipped = Path(__file__).resolve().parent.parent / "thresholds.toml"
    assert load_or_default(shipped, task_names()).rule == "upper"
    text = shipped.read_text()
    examples = re.sub(r"(?m)^# (?=\[|\w+ = )", "", text)
    assert examples != text
    edited = tmp_path / "thresholds.toml"
    edited.write_text(examples)
    loaded = load_or_default(edited, task_names())
    assert len(loaded.floors) == 3 and loaded.tolerance_for("niah_single_1", 65536) == 5


def test_a_folder_given_as_the_thresholds_file_names_the_fix_that_works(tmp_path):
    import re
    import shlex

    with pytest.raises(
        ThresholdsError,
        match=r"is a folder: pass a thresholds file, or write .* with `ctxgate init",
    ) as empty:
        load_thresholds(tmp_path, [])
    (command,) = re.findall(r"`([^`]+)`", str(empty.value))
    word, *args = shlex.split(command)
    assert word == "ctxgate" and call_ctxgate(*args).returncode == 0
    with pytest.raises(
        ThresholdsError, match=f"e.g. --thresholds {re.escape(str(tmp_path / 'thresholds.toml'))}$"
    ):
        load_thresholds(tmp_path, [])
    assert load_thresholds(tmp_path / "thresholds.toml", []).path


def test_the_verbs_find_thresholds_as_pytest_does_from_a_subfolder(tmp_path, monkeypatch):
    from ctxgate.gate.thresholds import thresholds_here
    from ctxgate.tasks.registry import task_names

    (tmp_path / ".git").mkdir()
    (tmp_path / "thresholds.toml").write_text("[regression]\ntolerance = 7.0\n")
    (tmp_path / "runs" / "exp1").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "runs" / "exp1")
    assert thresholds_here(None, task_names()).tolerance == 7.0
    (tmp_path / "runs" / ".git").mkdir()  # a repository of its own below: its top ends the search
    assert thresholds_here(None, task_names()).tolerance == 2.0
