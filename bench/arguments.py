"""The bench scripts' arguments, checked at the argument check: a parser whose refusal is one line,
``<script>: <the option and its value, and what is wrong>: <the fix>``, exit status 2, and the
``type=`` functions that say what a value must be (a count, a number in a range, seconds, lengths
as the suite reads them, task names, a checkpoint folder, a git ref). A bad value is refused before
any work, never a traceback minutes into a run.

Imports no other bench module (each script imports this one); the task registry and the checkpoint
resolver are imported inside the functions that need them.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

from ctxgate.lengths import LengthError, parse_length, parse_lengths

ROOT = Path(__file__).resolve().parent.parent
Refused = argparse.ArgumentTypeError
LENGTH_FIX = "write a token count such as 1024, or binary thousands such as 8k (=8192)"
LENGTHS_FIX = "write a comma list such as 4k,8k,16k"
CHECKPOINT = "a checkpoint folder (the one with config.json), such as fixtures/tiny-llama-niah"
TOKENIZER = "a tokenizer's folder (with tokenizer.json), such as fixtures/tiny-llama-niah"
TASK_FIX = "give one such as niah_single_1 (`ctxgate tasks` lists them)"
TASKS_FIX = "write a comma list such as niah_single_1,vt (`ctxgate tasks` lists them)"

# argparse's own messages, after its "argument OPTION: ", in the form "what is wrong: the fix"
_ABOUT_AN_OPTION = (
    (
        r"invalid choice: (?P<value>.+?) \(choose from (?P<choices>.+)\)",
        "{value} is not one of its choices: choose from {choices}",
    ),
    (r"expected one argument", "is given no value: write one after it"),
    (r"expected (?P<count>.+) arguments?", "is given too few values: write {count} after it"),
    (r"ignored explicit argument (?P<value>.+)", "takes no value, not {value}: write it alone"),
    (r"not allowed with argument (?P<other>.+)", "is not allowed with {other}: give one of them"),
    (r"invalid (?P<kind>\S+) value: (?P<value>.+)", "{value} is not a valid {kind}: see --help"),
)
_ABOUT_THE_LINE = (
    (r"unrecognized arguments: (?P<found>.+)", "unknown arguments {found}: see --help"),
    (
        r"the following arguments are required: (?P<missing>.+)",
        "{missing} not given: give it (see --help)",
    ),
    (
        r"ambiguous option: (?P<option>\S+) could match (?P<matches>.+)",
        "{option} is ambiguous: write one of {matches} in full",
    ),
)


class Parser(argparse.ArgumentParser):
    """A bench script's parser. Its program is the script's file name (``script``: its
    ``__file__``), as ``python bench/x.py`` names it and as a test calling ``main(argv)`` sees it;
    a refusal is one line on stderr and exit status 2, no usage block."""

    def __init__(self, script: str, **kwargs: Any) -> None:
        super().__init__(prog=Path(script).name, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {said(message)}\n")


def builds(script: str, doc: str, one_length: bool = False) -> Parser:
    """The parser of a script that times building a family's samples: the tokenizer, the lengths
    (``one_length``: one ``--length``), the samples per case and the seed, each a run's."""
    ap = Parser(script, description=doc.splitlines()[0])
    ap.add_argument(
        "--tokenizer",
        type=tokenizer_in(ROOT),
        default="fixtures/tiny-llama-niah",
        help="the tokenizer's folder (default %(default)s)",
    )
    if one_length:
        ap.add_argument("--length", type=length, default="128k")
    else:
        ap.add_argument("--lengths", type=lengths, default="128k")
    ap.add_argument("--samples", type=whole(1, example=100), default=100)
    ap.add_argument("--seed", type=integer, default=42)
    return ap


def said(message: str) -> str:
    """argparse's message on one line, its option first: ``argument --pairs: 0 is not ...`` reads
    ``--pairs 0 is not ...``; its own wordings (a choice, a missing value) as ``what: the fix``."""
    message = re.sub(r"\s*\n\s*", " ", message).strip()
    if about := re.fullmatch(r"argument (?P<option>.+?): (?P<rest>.*)", message):
        option, rest = about["option"], about["rest"]
        for pattern, form in _ABOUT_AN_OPTION:
            if found := re.fullmatch(pattern, rest):
                return f"{option} {form.format(**found.groupdict())}"
        return f"{option} {rest}"
    for pattern, form in _ABOUT_THE_LINE:
        if found := re.fullmatch(pattern, message):
            return form.format(**found.groupdict())
    return message


def shown(text: str) -> str:
    """A value as a refusal names it: as written, quoted where empty or spaced."""
    return text if text and not re.search(r"\s", text) else repr(text)


def whole(
    least: int = 1, most: int | None = None, example: int | None = None
) -> Callable[[str], int]:
    """A whole number of at least ``least`` (and at most ``most``): a count of pairs, samples,
    rounds, runs, workers."""
    bound = f"of at least {least}" + ("" if most is None else f" and at most {most}")

    def checked(text: str) -> int:
        value: int | None
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least or (most is not None and value > most):
            give = least if example is None else example
            raise Refused(f"{shown(text)} is not a whole number {bound}: give one such as {give}")
        return value

    return checked


def integer(text: str) -> int:
    """Any whole number (a seed)."""
    try:
        return int(text)
    except ValueError:
        raise Refused(f"{shown(text)} is not a whole number: give one such as 0") from None


def number(low: float, high: float, example: float, closed: bool = False) -> Callable[[str], float]:
    """A number between ``low`` and ``high``: both excluded (an alpha, a confidence) or, where
    ``closed``, both included (a fraction such as a floor)."""
    bound = f"from {low:g} to {high:g}" if closed else f"above {low:g} and below {high:g}"

    def checked(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (low <= value <= high if closed else low < value < high):  # NaN fails both
            raise Refused(f"{shown(text)} is not a number {bound}: give one such as {example:g}")
        return value

    return checked


def seconds(text: str) -> float:
    """A positive number of seconds (a deadline, a timeout)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise Refused(f"{shown(text)} is not a positive number of seconds: give one such as 60")
    return value


def length(text: str) -> int:
    """One length as the suite reads it (``8k`` is 8192), of at least 1 token."""
    try:
        value = parse_length(text)
    except LengthError:
        value = 0
    if value < 1:
        raise Refused(f"{shown(text)} is not a length of at least 1 token: {LENGTH_FIX}")
    return value


def lengths(text: str) -> tuple[int, ...]:
    """A comma list of lengths as the suite's ``--lengths`` reads it: sorted, each once."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise Refused(f"{shown(text)} names no length: {LENGTHS_FIX}")
    for part in parts:
        try:
            length(part)
        except Refused:
            raise Refused(
                f"{shown(text)} holds {shown(part)}, not a length of at least 1 token: "
                f"{LENGTHS_FIX}"
            ) from None
    return parse_lengths(text)


def known_name(text: str, known: Iterable[str], what: str, fix: str) -> str:
    """``text`` if it is one of ``known``, else refused with the nearest names (or ``fix``)."""
    known = list(known)
    if text not in known:
        raise Refused(f"{shown(text)} is not {what}: {_nearest(text, known, fix)}")
    return text


def names(text: str, known: Iterable[str], what: str, fix: str) -> tuple[str, ...]:
    """A comma list of ``what``, each name one of ``known``, in the order written."""
    known = list(known)
    listed = tuple(n.strip() for n in text.split(",") if n.strip())
    if not listed:
        raise Refused(f"{shown(text)} names no {what}: {fix}")
    for name in listed:
        if name not in known:
            raise Refused(
                f"{shown(text)} holds {shown(name)}, not a {what}: {_nearest(name, known, fix)}"
            )
    return listed


def _nearest(name: str, known: list[str], fix: str) -> str:
    near = difflib.get_close_matches(name, known, n=3)
    if not near:
        return fix
    listed = f"{', '.join(near[:-1])} or {near[-1]}" if len(near) > 1 else near[0]
    return f"did you mean {listed}?"


def task(text: str) -> str:
    """The name of a registered task (``ctxgate tasks`` lists them)."""
    from ctxgate.tasks.registry import task_names

    return known_name(text.strip(), task_names(), "a task", TASK_FIX)


def tasks(text: str) -> tuple[str, ...]:
    """A comma list of registered tasks, in the order written."""
    from ctxgate.tasks.registry import task_names

    return names(text, task_names(), "task", TASKS_FIX)


def tasks_or_all(text: str) -> tuple[str, ...]:
    """As ``tasks``; empty: none named (the script's default, e.g. every task)."""
    return tasks(text) if text.strip() else ()


def words(*allowed: str, what: str = "choice") -> Callable[[str], tuple[str, ...]]:
    """A comma list of ``allowed`` words, each a ``what`` (a backend, say)."""

    def checked(text: str) -> tuple[str, ...]:
        return names(text, allowed, what, f"write a comma list of {', '.join(allowed)}")

    return checked


def as_written(check: Callable[[str], object]) -> Callable[[str], str]:
    """``check``'s refusal, then the text as written: for a value the script passes on as it is
    (to the suite's own command line, say) or prints."""

    def checked(text: str) -> str:
        check(text)
        return text

    return checked


def checkpoint(text: str) -> str:
    """A model's folder with its config.json, or a hub id in the local Hugging Face cache, as the
    suite's ``--model`` finds one (``ctxgate.backends.checkpoint.resolve_model``)."""
    return _folder_with(text, ("config.json",), CHECKPOINT, Path.cwd())


def checkpoint_in(base: Path) -> Callable[[str], str]:
    """As ``checkpoint``, a relative folder read from ``base``: for a script that runs the suite
    there (``cwd=ROOT``) and passes the text on as it is."""
    return lambda text: _folder_with(text, ("config.json",), CHECKPOINT, base)


def tokenizer_in(base: Path) -> Callable[[str], str]:
    """A tokenizer's folder (tokenizer.json or tokenizer_config.json), or a cached hub id; a
    relative folder read from ``base``, where the script's workers run."""
    files = ("tokenizer.json", "tokenizer_config.json")
    return lambda text: _folder_with(text, files, TOKENIZER, base)


def _folder_with(text: str, files: tuple[str, ...], what: str, base: Path) -> str:
    path = base / Path(text).expanduser()  # an absolute path stays itself
    if path.is_dir():
        if any((path / name).is_file() for name in files):
            return text
        raise Refused(f"{shown(text)} is a folder without {' or '.join(files)}: give {what}")
    if path.exists():
        raise Refused(f"{shown(text)} is a file: give {what}")
    hub_id = not text.startswith(("/", ".", "~")) and text.count("/") <= 1 and "\\" not in text
    if hub_id and text:
        from ctxgate.backends.checkpoint import ModelNotFound, resolve_model

        try:
            resolve_model(text)
            return text
        except ModelNotFound:
            raise Refused(
                f"{shown(text)} is no folder in {base} and no hub model in the local Hugging Face "
                f"cache: give {what}, or download it first (hf download {text})"
            ) from None
    raise Refused(f"{shown(text)} does not exist: give {what}")


def folder_in(base: Path) -> Callable[[str], str]:
    """A folder that exists (data to read), a relative one read from ``base``, where the script's
    workers run; passed on as written."""

    def checked(text: str) -> str:
        path = base / Path(text).expanduser()
        if not path.is_dir():
            where = "" if Path(text).expanduser().is_absolute() else f" in {base}"
            wrong = "is a file" if path.exists() else f"does not exist{where}"
            raise Refused(f"{shown(text)} {wrong}: give a folder that exists")
        return text

    return checked


def out_folder(text: str) -> Path:
    """A folder to write into, made if missing: anything but a file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise Refused(f"{shown(text)} is a file: give a folder to write into (made if missing)")
    return path


def python_file(text: str) -> str:
    """A python to run (a vLLM environment's)."""
    if not Path(text).expanduser().is_file():
        raise Refused(
            f"{shown(text)} is no file: give a python such as .venv-vllm/bin/python "
            "(scripts/vllm_env.sh makes it)"
        )
    # absolute, as the suite runs from folders of its own; not resolved: a venv's python is a link
    return str(Path(text).expanduser().absolute())


def git_ref(text: str) -> str:
    """A commit of this repository: a hash, a branch, a tag, HEAD~1."""
    command = ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{text}^{{commit}}"]
    try:  # a leading dash would read as one of git's options
        found = (
            not text.startswith("-")
            and subprocess.run(command, capture_output=True).returncode == 0
        )
    except OSError as exc:  # no git to ask
        raise Refused(f"{shown(text)} cannot be looked up ({exc}): install git") from None
    if not found:
        raise Refused(
            f"{shown(text)} is not a commit of this repository: give a git ref such as HEAD~1 "
            "or a commit hash"
        )
    return text
