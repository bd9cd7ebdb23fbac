"""``ctxgate``: the command line. Each verb's parser and code live in its workflow module
(``ctxgate/workflows/``); this module lists the verbs, adds ``tasks`` and ``schema``, and passes
the arguments after ``--`` through. Building the parser imports no heavy library."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence

from ctxgate.hooks import flat, hook, installed
from ctxgate.refusal import CtxgateError
from ctxgate.tasks.registry import all_tasks
from ctxgate.workflows import (
    data,
    diff,
    init,
    rejudge,
    rescore,
)

DESCRIPTION = (
    "ctxgate's command line: rescore, judge, compare (with each other or the papers' numbers) "
    "or draw (HTML) stored runs, bisect or watch a training run's checkpoints, list tasks, "
    "print the report schema. bisect loads each checkpoint it probes and watch runs pytest on "
    "each new one; no other verb loads the model under test (`judge --nli-model` loads its "
    "NLI checkpoint)."
)


def _tasks(args: argparse.Namespace) -> int:
    for t in all_tasks():
        print(
            f"{t.name:<18}{t.suite:<8}{t.category:<13}{t.metric.name:<19}"
            f"gen={t.tokens_to_generate:<5}n={t.default_samples:<5}{t.description}"
        )
    return 0


def _schema(args: argparse.Namespace) -> int:
    from ctxgate.records.io import report_schema

    print(json.dumps(report_schema(args.predictions), indent=1))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ctxgate", description=DESCRIPTION)
    sub = p.add_subparsers(dest="command", required=True)
    # help lists the verbs in this order
    for verb in (rescore, diff):
        verb.add_parser(sub)
    sub.add_parser("tasks", help="list the registered tasks").set_defaults(fn=_tasks)
    data.add_parser(sub)
    schema = sub.add_parser("schema", help="print the report's JSON schema")
    schema.add_argument(
        "--predictions", action="store_true", help="that of a .predictions.jsonl line instead"
    )
    schema.set_defaults(fn=_schema)
    for verb in (rejudge, init, *flat(hook().ctxgate_verbs())):
        verb.add_parser(sub)
    return p


def unknown_verb(verb: str, verbs: Sequence[str]) -> str:
    """A verb neither ctxgate nor an installed extra declares, in one line with the fix."""
    from ctxgate.values import did_you_mean

    extras = ", ".join(installed()) or "none"
    return (
        f"{verb!r} is a verb of neither ctxgate nor an installed extra{did_you_mean(verb, verbs)} "
        f"(extras installed: {extras}; verbs: {', '.join(verbs)}): install the package that "
        "provides it, or see ctxgate --help"
    )


def _without(argv: Sequence[str], dropped: Sequence[str]) -> list[str]:
    """``argv`` less the ``dropped`` words, each once, in order."""
    rest, out = list(dropped), []
    for word in argv:
        if rest and word == rest[0]:
            rest.pop(0)
        else:
            out.append(word)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Arguments after the first ``--`` go to the verb (``ctxgate watch ... -- PYTEST ARGS``). Every
    failure ends here as one line ``ctxgate VERB: message``: exit 2 for a refusal, 4 for a usage
    error (a thresholds file pytest would refuse too), else 3."""
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, passthrough = argv[:at], argv[at + 1 :]
    try:
        p = parser()
    except CtxgateError as exc:  # an outside plugin that cannot take part
        print(f"ctxgate: {exc.line}", file=sys.stderr)
        return exc.exit_status
    verbs = [v for a in p._actions if isinstance(a, argparse._SubParsersAction) for v in a.choices]
    if argv and not argv[0].startswith("-") and argv[0] not in verbs:
        print(f"ctxgate: {unknown_verb(argv[0], verbs)}", file=sys.stderr)
        return 2
    args, unknown = p.parse_known_args(argv)
    if unknown:
        hint = (
            f"; pytest arguments go after --: ctxgate {shlex.join(_without(argv, unknown))} -- "
            f"{shlex.join(unknown)}"
            if args.command == "watch"
            else ""
        )
        p.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    if passthrough and not hasattr(args, "pytest_args"):
        p.error(f"ctxgate {args.command} takes no arguments after --")
    if passthrough:
        args.pytest_args = passthrough
    try:
        return int(args.fn(args))
    except KeyboardInterrupt:
        print(f"ctxgate {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last word on any failure
        if os.environ.get("CTXGATE_DEBUG", "") not in ("", "0"):
            raise
        verb = " ".join(filter(None, (args.command, getattr(args, "data_command", None))))
        print(f"ctxgate {verb}: {one_line(exc)}", file=sys.stderr)
        if isinstance(exc, CtxgateError):
            return exc.exit_status
        return 2 if isinstance(exc, (OSError, ValueError)) else 3


# what to do about an OSError, by errno (ENOENT, EACCES, ENOSPC, EROFS)
_OS_FIXES = {
    2: "check the path",
    13: "check the permissions",
    28: "free some space",
    30: "write somewhere writable",
}


def one_line(exc: BaseException) -> str:
    """A refusal's own message; else what failed, on which file, and how to see more."""
    if isinstance(exc, CtxgateError):
        return exc.line
    if isinstance(exc, OSError) and exc.filename:
        fix = _OS_FIXES.get(exc.errno or 0, "check the file")
        return f"{exc.filename}: {exc.strerror or str(exc)}: {fix} and run it again"
    text = " ".join(str(exc).split()) or "no message"
    return f"{text} ({type(exc).__name__}; set CTXGATE_DEBUG=1 to see the traceback)"


if __name__ == "__main__":
    sys.exit(main())
