"""How an option is declared and read: its flag, parser, default, choices and help in one record,
and a bad value refused in one line that names the flag, the value and the fix. The options
themselves are ``options.py``'s table and the extras' groups
(``hookspec.ctxgate_option_groups``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ctxgate.hooks import flat, hook
from ctxgate.refusal import CtxgateError


class OptionError(CtxgateError, ValueError):
    """An option's value cannot be used; the message names the option and the fix."""


@dataclass(frozen=True)
class Option:
    """``parse`` turns the text given into the value, raising ValueError with what is wrong (the
    flag, the value and an example are added here); ``example``: the value the fix shows (default:
    ``default``)."""

    flag: str
    help: str
    default: Any = None
    parse: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    action: str | None = None  # store_true | append
    metavar: str | None = None
    aliases: tuple[str, ...] = ()  # other spellings of the flag (the dest is the flag's)
    example: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def add_to(self, target: Any) -> None:
        """Onto a pytest option group (``addoption``) or an argparse parser (``add_argument``): as
        text, parsed by ``read``, so that a bad value is this table's one line, not the parser's
        usage message."""
        metavar = self.metavar or ("{" + ",".join(self.choices) + "}" if self.choices else None)
        keywords = {
            "help": self.help.replace("%(default)s", str(self.default)),
            "action": self.action,
            "metavar": metavar,
        }
        add = target.addoption if hasattr(target, "addoption") else target.add_argument
        add(self.flag, *self.aliases, **{k: v for k, v in keywords.items() if v is not None})

    def read(self, given: Any) -> Any:
        """The value given (None: the default); an append option's values as a tuple."""
        if self.action == "store_true":
            return bool(given)
        if given is None or given == []:
            return self.default
        values = [str(v) for v in (given if self.action == "append" else [given])]
        parsed = [self._one(text) for text in values]
        return tuple(parsed) if self.action == "append" else parsed[0]

    def _one(self, text: str) -> Any:
        example = self.example or (
            self.choices[0] if self.choices and self.default is None else self.default
        )
        if self.choices is not None and text not in self.choices:
            raise OptionError(
                f"{self.flag} {text!r} is not one of {', '.join(self.choices)}: e.g. {self.flag} "
                f"{example}"
            )
        try:
            return self.parse(text) if self.parse is not None else text
        except ValueError as exc:
            raise OptionError(f"{self.flag} {text!r} {exc}: e.g. {self.flag} {example}") from None


# an option's value as pytest or argparse read it, by its dest (None: not given)
Get = Callable[[str], Any]


@dataclass(frozen=True)
class OptionGroup:
    """Options shown together: ``name`` is pytest's group. ``evaluates``: the verbs that evaluate
    a checkpoint outside pytest (``ctxgate bisect``) take them too."""

    name: str
    description: str
    options: tuple[Option, ...]
    evaluates: bool = False


def extra_groups() -> list[OptionGroup]:
    """The extras' rows of the table (``hookspec.ctxgate_option_groups``), in their order. A flag
    no installed package declares is pytest's or argparse's own refusal: unknown."""
    return list(flat(hook().ctxgate_option_groups()))


def read(options: Sequence[Option], get: Get) -> dict[str, Any]:
    """The options' values by dest, each through its parser."""
    return {o.dest: o.read(get(o.dest)) for o in options}


def whole(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise ValueError(f"is not a whole number of {minimum} or more")
        return value

    return parse


def _number(text: str, zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and (value >= 0 if zero else value > 0)):
        raise ValueError("is not a number of 0 or more" if zero else "is not a number above 0")
    return value


positive = partial(_number, zero=False)
not_negative = partial(_number, zero=True)
