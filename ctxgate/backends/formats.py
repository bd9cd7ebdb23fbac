"""The checkpoint ``--model`` names, resolved once from the folder's own files before anything
loads: a Hugging Face folder, or a folder of a kind an extra knows (``ctxgate_checkpoint_kinds``:
each claims the folders its files make, and locates them into a ``Checkpoint`` with its own part).
``locate`` alone decides the kind; everything after it takes the ``Checkpoint`` it returns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ctxgate.backends.checkpoint import CheckpointError, check_checkpoint
from ctxgate.hooks import flat, hook
from ctxgate.refusal import CtxgateError

HF = "hf"  # the kind of a plain Hugging Face folder, the spine's own


class WrongFlag(CtxgateError, ValueError):
    """A flag that does not fit the checkpoint, or one it needs (a usage error, not a broken
    checkpoint)."""


@dataclass(frozen=True)
class Opening:
    """How the run opens checkpoints: the spine's consents, and the extras' sections of the model's
    spec (``ModelSpec.extras``), where a kind reads its own options."""

    trust_remote_code: bool = False
    ignore_remote_code: bool = False
    allow_pickle: bool = False
    extras: Mapping[str, Any] = field(default_factory=dict)


class CheckpointPart(Protocol):
    """A kind's own part of a located ``Checkpoint``: what the spine asks of a checkpoint that is
    not a plain Hugging Face folder. It travels with the checkpoint (pickled to a cluster's
    replicas)."""

    @property
    def kind(self) -> str:
        """Its kind's name."""
        ...

    @property
    def what(self) -> str:
        """What it is, in a message: "a ... checkpoint"."""
        ...

    @property
    def base(self) -> Path | None:
        """The Hugging Face folder ``from_pretrained`` reads (the base the part applies to, the
        report's base_model); None: the model is built from the config and filled by ``fill``."""
        ...

    @property
    def served_as(self) -> str:
        """What an engine that loads only Hugging Face folders is given instead."""
        ...

    def fingerprint(self) -> dict[str, object]: ...

    def describe(self) -> dict[str, object]:
        """Its fields of the backend's description (the report's ``run.backend``)."""
        ...

    def as_model(self) -> Any:
        """The whole model in memory (fp32), for writing it out as a Hugging Face folder."""
        ...

    def fill(self, model: Any) -> None:
        """The model built from the config (``base`` None): its weights; CheckpointError."""
        ...

    def finish(self, model: Any) -> Any:
        """The model loaded, as it is evaluated (the part applied to it); CheckpointError."""
        ...


class CheckpointKind(Protocol):
    """A kind of checkpoint folder an extra knows (``hookspec.ctxgate_checkpoint_kinds``)."""

    @property
    def name(self) -> str: ...

    @property
    def described(self) -> str:
        """The kind's checkpoints (plural), in the list of what bisect takes."""
        ...

    @property
    def marks(self) -> tuple[str, ...]:
        """Files or folders that make a folder of this kind (named when a folder is none)."""
        ...

    @property
    def configs(self) -> tuple[str, ...]:
        """Config files that make weights beside them a checkpoint."""
        ...

    @property
    def own_weights(self) -> tuple[str, ...]:
        """Its weight files, which ``from_pretrained`` does not read."""
        ...

    def claims(self, folder: Path) -> bool:
        """Whether ``folder``'s files make a checkpoint of this kind (kinds claim no folder
        twice)."""
        ...

    def refuse(self, folder: Path, kind: str | None, how: Opening) -> None:
        """WrongFlag: one of the kind's options given for a folder of another ``kind`` (None:
        none), or one it needs for this folder missing."""
        ...

    def locate(self, folder: Path, how: Opening) -> Checkpoint:
        """The checkpoint it claimed in ``folder``, every piece checked (CheckpointError)."""
        ...

    def written(self, folder: Path) -> bool:
        """Whether the folder it claims holds its weights (what a watcher waits for)."""
        ...

    def unfinished(self, folder: Path, names: list[str]) -> str | None:
        """What a save of this kind cut short left in ``folder`` (holding ``names``), as "X
        without Y", before the spine's config.json and weights; None: nothing of it."""
        ...


def checkpoint_kinds() -> list[CheckpointKind]:
    """The extras' kinds, in their order."""
    return list(flat(hook().ctxgate_checkpoint_kinds()))


@dataclass(frozen=True)
class Checkpoint:
    folder: Path  # what --model names
    config_dir: Path  # whose config.json builds the model (what config overrides change)
    tokenizer_dir: Path
    part: CheckpointPart | None = None  # a kind's own (None: a Hugging Face folder)

    @property
    def kind(self) -> str:
        return self.part.kind if self.part else HF

    @property
    def weights_dir(self) -> Path | None:
        """What ``from_pretrained`` reads; None: the model is built from its config and filled by
        its part."""
        return self.part.base if self.part else self.folder

    def fingerprint(self) -> dict[str, object]:
        from ctxgate.backends.fingerprint import checkpoint_fingerprint

        return self.part.fingerprint() if self.part else checkpoint_fingerprint(str(self.folder))

    def describe(self) -> dict[str, object]:
        return self.part.describe() if self.part else {}

    @property
    def served_as(self) -> str | None:
        """What an engine that loads only Hugging Face folders is given instead of the folder."""
        return self.part.served_as if self.part else None

    def as_model(self) -> Any:
        """The whole model in memory (fp32), for writing it out as a Hugging Face folder."""
        if self.part:
            return self.part.as_model()
        raise TypeError(f"{self.folder} is a Hugging Face folder already: load it as it is")


def _claimant(folder: Path, kinds: list[CheckpointKind]) -> CheckpointKind | None:
    return next((k for k in kinds if k.claims(folder)), None)


def kind_of(folder: Path) -> str | None:
    """The kind of checkpoint ``folder``'s files make, None for none (not yet, or not at all)."""
    claimed = _claimant(folder, checkpoint_kinds())
    if claimed is not None:
        return claimed.name
    return HF if (folder / "config.json").is_file() else None


def locate(
    folder: Path,
    *,
    trust_remote_code: bool = False,
    ignore_remote_code: bool = False,
    allow_pickle: bool = False,
    extras: Mapping[str, Any] | None = None,
) -> Checkpoint:
    """The checkpoint in ``folder``, every piece checked. CheckpointError: a piece is missing or
    broken; WrongFlag: a kind's option (``extras``: the extras' sections) given for another."""
    how = Opening(trust_remote_code, ignore_remote_code, allow_pickle, extras or {})
    kinds = checkpoint_kinds()
    claimed = _claimant(folder, kinds)
    kind = claimed.name if claimed else HF if (folder / "config.json").is_file() else None
    for each in kinds:
        each.refuse(folder, kind, how)
    if claimed is not None:
        return claimed.locate(folder, how)
    if kind is None and folder.is_dir():
        inside = sorted(p.name for p in folder.iterdir() if p.is_dir() and kind_of(p) is not None)
        if inside:
            raise CheckpointError(
                f"{folder} is a training run, not a checkpoint: it holds checkpoints "
                f"({', '.join(inside[:3])}, ...); pass one of them (ctxgate watch and ctxgate "
                "bisect take a whole run: docs/training.md)"
            )
    check_checkpoint(
        folder,
        trust_remote_code=trust_remote_code,
        ignore_remote_code=ignore_remote_code,
        allow_pickle=allow_pickle,
    )
    return Checkpoint(folder, folder, folder)


def written(folder: Path) -> bool:
    """Whether ``folder`` holds a checkpoint with its weights (what a watcher waits for)."""
    claimed = _claimant(folder, checkpoint_kinds())
    if claimed is not None:
        return claimed.written(folder)
    return (folder / "config.json").is_file() and has_hf_weights(folder)


def has_hf_weights(folder: Path) -> bool:
    """Weights ``from_pretrained`` reads (Trainer saves them beside a ZeRO-1/2 checkpoint); a
    kind's own (``own_weights``) are not."""
    own = {name for kind in checkpoint_kinds() for name in kind.own_weights}
    found = [*folder.glob("*.safetensors"), *folder.glob("pytorch_model*.bin")]
    return any(p.name not in own for p in found)


def hf_folder(fingerprint: str, root: Path, tokenizer_dir: Path, build: Callable[[], Any]) -> Path:
    """``root/model-<fingerprint>``: a Hugging Face folder of ``build()`` (a checkpoint's
    ``as_model``) for an engine that loads folders, written once, atomically under a lock."""
    import shutil

    from filelock import FileLock

    target = root / f"model-{fingerprint[:16]}"
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / "config.json").is_file():
            return target
        import transformers

        partial = root / f".{target.name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        build().save_pretrained(partial)
        transformers.AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(partial)
        partial.rename(target)
    return target
