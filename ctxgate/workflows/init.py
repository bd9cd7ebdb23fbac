"""``ctxgate init``: a team's own repository set up to gate with ctxgate: the suite's commented
``thresholds.toml`` (the spine's tables, then each installed extra's, ``ctxgate_threshold_tables``)
and, with ``--ci``, one CI template where that CI looks for it. Nothing is overwritten unless
``--force``; every file written is printed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ctxgate.gate.thresholds_schema import extra_tables
from ctxgate.records.io import atomic_write_all
from ctxgate.refusal import CtxgateError

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
# --ci choice: (the template in templates/ci, where it goes in the user's repository)
CI = {
    "github": ("github-actions.yml", ".github/workflows/ctxgate.yml"),
    "gitlab": ("gitlab-ci.yml", ".gitlab-ci.yml"),
    "slurm": ("slurm.sbatch", "ci/ctxgate.sbatch"),
    "watch": ("watch.sh", "ci/ctxgate-watch.sh"),
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "init", help="write thresholds.toml (and a CI template) into your repository"
    )
    p.add_argument(
        "folder", nargs="?", default=".", help="the repository to set up (default: here)"
    )
    p.add_argument("--ci", choices=sorted(CI), help="also write this CI template")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    p.set_defaults(fn=main)


def thresholds_text() -> str:
    """The thresholds.toml ``init`` writes: the spine's tables, then each installed extra's."""
    spine = (TEMPLATES / "thresholds.toml").read_text("utf-8")
    return spine + "".join(table.template for table in extra_tables())


def _text(template: Path) -> str:
    return thresholds_text() if template.name == "thresholds.toml" else template.read_text("utf-8")


def main(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    if not folder.is_dir():
        raise CtxgateError(f"{folder} is not a folder: give your repository's folder")
    pairs = [(TEMPLATES / "thresholds.toml", folder / "thresholds.toml")]  # (template, destination)
    if args.ci:
        ci_template, ci_destination = CI[args.ci]
        pairs.append((TEMPLATES / "ci" / ci_template, folder / ci_destination))
    # --force replaces files, never a folder where a file goes nor a file (or a link that leads
    # nowhere) where a folder goes: those are the user's to move
    for _, dest in pairs:
        if dest.is_dir() and not dest.is_symlink():
            raise CtxgateError(
                f"{dest} is a folder, but ctxgate init writes a file there; nothing was written: "
                "move or remove the folder, then run ctxgate init again"
            )
        inside = [folder / p for p in reversed(dest.relative_to(folder).parents)]
        for step in inside:
            if (step.exists() or step.is_symlink()) and not step.is_dir():
                raise CtxgateError(
                    f"{step} is a file, but ctxgate init makes a folder there for {dest}; nothing "
                    "was written: move or rename the file, then run ctxgate init again"
                )
    # a link counts as there, dangling or not: the write replaces the link, never what it points to
    existing = [dest for _, dest in pairs if dest.exists() or dest.is_symlink()]
    if existing and not args.force:
        said = f"{existing[0]} exists; nothing was written. Pass --force to overwrite it"
        print(f"ctxgate init: {said}", file=sys.stderr)
        return 1
    try:
        for _, dest in pairs:
            dest.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_all({dest: _text(t) for t, dest in pairs})  # all of them or none
    except OSError as exc:
        where = exc.filename or folder
        raise CtxgateError(
            f"{where} cannot be written ({exc.strerror or exc}); nothing was written"
        ) from None
    for template, dest in pairs:
        if template.suffix in (".sh", ".sbatch"):
            dest.chmod(0o755)
        print(f"wrote {dest}")
    # one quick case first, so a new setup shows it works before a long run
    print(
        "next, a first check (path/to/ckpt is your checkpoint folder; the thresholds are found "
        "from here up):\n"
        "  pytest --model path/to/ckpt -k niah_single_1 --lengths 4k --samples 10\n"
        "then the whole suite:\n"
        "  pytest --model path/to/ckpt -n 8"
    )
    return 0
