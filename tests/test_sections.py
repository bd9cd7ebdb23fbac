"""An extra's settings as one piece (``ctxgate.api.Section``): read from its options into the
plan's section, found in any ``extras`` with the defaults where absent, kept in the run's record
only where they differ from the defaults, its slot naming every option."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ctxgate.api import Option, OptionError, Section, whole


@dataclass(frozen=True)
class Knobs:
    shade: str = "red"
    count: int = 3


SHADE = Option("--knob-shade", "a shade", default="red", choices=("red", "blue"))
COUNT = Option("--knob-count", "a count", default=3, parse=whole(1))
SECTION = Section("knobs", Knobs, (SHADE, COUNT), "knobs: two of them")


def given(**values: object):
    return lambda dest: values.get(dest)


def test_the_options_are_read_in_the_records_order():
    assert SECTION.read(given()) == ("knobs", Knobs())
    assert SECTION.read(given(knob_shade="blue", knob_count="7")) == ("knobs", Knobs("blue", 7))


def test_a_bad_value_is_the_options_one_line():
    with pytest.raises(OptionError, match=r"^--knob-count '0' .*: e\.g\. --knob-count 3$"):
        SECTION.read(given(knob_count="0"))


def test_the_section_is_found_or_the_defaults_stand_in():
    assert SECTION.of({"knobs": Knobs("blue")}) == Knobs("blue")
    assert SECTION.of({}) == Knobs()
    assert SECTION.of({"knobs": {"shade": "blue"}}) == Knobs()  # not the record: not believed


def test_the_run_record_holds_only_settings_a_run_changed():
    assert SECTION.record({"knobs": Knobs()}) == {"knobs": None}
    assert SECTION.record({}) == {"knobs": None}
    assert SECTION.record({"knobs": Knobs(count=5)}) == {"knobs": Knobs(count=5)}


def test_the_slot_and_group_name_every_option():
    slot, group = SECTION.slot(), SECTION.group()
    assert (slot.name, slot.level, slot.model) == ("knobs", "run", Knobs)
    assert slot.baseline == "--knob-shade, --knob-count"
    assert group.name == "ctxgate-knobs" and group.options == (SHADE, COUNT) and group.evaluates
