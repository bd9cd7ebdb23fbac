"""Every option a message names is one the command it belongs to accepts: a flag in any string of
the product code (a refusal's fix, a recipe, a next step) is pytest's or a ctxgate verb's, as this
install declares them, or another program's that the message runs (vLLM's server, pip, a project
script), named here with that program."""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

from ctxgate import cli
from tests.conftest import ROOT

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# another program's flags that a message names, with the program
FOREIGN = {
    "--enable-prefix-caching": "vllm serve",
    "--no-enable-prefix-caching": "vllm serve",
    "--enable-prompt-tokens-details": "vllm serve",
    "--enforce-eager": "vllm serve",
    "--generation-config": "vllm serve",
    "--hf-overrides": "vllm serve",
    "--host": "vllm serve",
    "--port": "vllm serve",
    "--max-model-len": "vllm serve",
    "--reasoning-config": "vllm serve",
    "--head": "ray start",
    "--force-reinstall": "pip install",
    "--no-build-isolation": "pip install",
    "--local-dir": "huggingface-cli download",
    "--repo-type": "huggingface-cli download",
    "--junitxml": "pytest (its spelling of --junit-xml)",
}
# a project script's flags that a message names, with the script that declares them
SCRIPTS = {
    "--write": "bench/chance.py",
    "--long-documents": "fixtures/make_helmet_fixtures.py",
}


def _named() -> dict[str, list[str]]:
    """Each flag in a string of ctxgate/ and plugins/, with where it is named."""
    found: dict[str, list[str]] = {}
    for path in sorted([*(ROOT / "ctxgate").rglob("*.py"), *(ROOT / "plugins").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for flag in FLAG.findall(node.value):
                    found.setdefault(flag, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _accepted() -> set[str]:
    """The flags pytest (with ctxgate's plugins and extras) and every ctxgate verb take."""
    helped = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"], capture_output=True, text=True, cwd=ROOT
    ).stdout
    flags = set(FLAG.findall(helped))

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            flags.update(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)

    walk(cli.parser())
    return flags


def test_every_flag_a_message_names_is_one_its_command_takes():
    accepted = _accepted()
    wrong = [
        f"{flag} ({', '.join(where[:3])})"
        for flag, where in _named().items()
        if flag not in accepted and flag not in FOREIGN and flag not in SCRIPTS
    ]
    assert not wrong, "messages name options nothing takes:\n" + "\n".join(wrong)


def test_the_scripts_named_declare_their_flags():
    for flag, script in SCRIPTS.items():
        assert flag in Path(ROOT / script).read_text("utf-8"), f"{script} has no {flag}"
