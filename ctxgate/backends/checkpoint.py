"""Find and check a checkpoint before any model is loaded. ``resolve_model`` never goes to the
network (a typo should not wait on hub retries); ``check_checkpoint`` reads only JSON files and
safetensors headers, so a broken checkpoint is one message naming the file and the fix."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from ctxgate.refusal import CtxgateError, byte_order_mark

SAFETENSORS_INDEX = "model.safetensors.index.json"
# the JSON files transformers and PEFT read, each an object
OBJECTS = frozenset(
    "config.json generation_config.json tokenizer_config.json special_tokens_map.json "
    "tokenizer.json added_tokens.json vocab.json adapter_config.json".split()
) | {SAFETENSORS_INDEX}
RESTORE = "restore the file from the training run or the base model"
# what a JSON value of each type is called (``object``: any)
JSON_TYPES = {
    dict: "a JSON object", list: "a JSON array", str: "a JSON string", int: "a JSON number",
    float: "a JSON number", bool: "JSON true or false", type(None): "JSON null", object: "JSON",
}  # fmt: skip
# what transformers builds a tokenizer from (merges.txt only beside vocab.json)
TOKENIZER_FILES = (
    *"tokenizer.json tokenizer.model vocab.json merges.txt".split(),
    *"spiece.model tiktoken.model vocab.txt".split(),
)
BPE = frozenset({"vocab.json", "merges.txt"})


class ModelNotFound(CtxgateError, ValueError):
    """``--model`` names nothing that can be loaded without the network."""


class CheckpointError(CtxgateError, ValueError):
    """The checkpoint folder cannot be loaded as it is; the message names the file and the fix."""


def resolve_model(model: str) -> Path:
    """The folder ``--model`` means: the path itself, or a hub id's snapshot in the local cache."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise ModelNotFound(
            f"--model {model!r} is a file; give the checkpoint folder (the one with config.json)"
        )
    # a path, not a hub id
    if model.startswith(("/", ".", "~")) or model.count("/") > 1 or "\\" in model:
        raise ModelNotFound(
            f"--model {model!r} does not exist: give a checkpoint folder (with config.json) or a "
            "hub id such as org/name"
        )
    from huggingface_hub import constants, try_to_load_from_cache  # a dependency of transformers

    try:
        cached = try_to_load_from_cache(model, "config.json")
    except ValueError:  # not a valid repo id
        cached = None
    if isinstance(cached, str):
        return Path(cached).parent
    raise ModelNotFound(
        f"--model {model!r}: there is no folder of that name in {Path.cwd()}, and no hub model "
        f"{model!r} in the local Hugging Face cache ({constants.HF_HUB_CACHE}). Give the "
        f"checkpoint's folder, or download it first (`hf download {model}`); ctxgate does not "
        "download models during a run"
    )


def check_checkpoint(
    folder: Path,
    *,
    trust_remote_code: bool = False,
    ignore_remote_code: bool = False,
    allow_pickle: bool = False,
) -> None:
    check_json_files(folder)
    _check_config(folder, trust_remote_code, ignore_remote_code)
    _check_weights(folder, allow_pickle)
    check_tokenizer(folder)
    _check_chat_template(folder)


def check_json_files(folder: Path) -> None:
    """Every JSON file a load reads: transformers ignores a generation_config.json it cannot parse
    without a word, and that file decides where generation stops."""
    for path in sorted(folder.glob("*.json")):
        read_json(path, kind=dict if path.name in OBJECTS else object)


def read_json(path: Path, fix: str = RESTORE, kind: type = dict) -> Any:
    """A JSON file of a checkpoint, decoded: the one door for them. Anything that keeps it from
    being a JSON ``kind`` (a folder in its place, unreadable, empty, not UTF-8, not JSON, nested too
    deeply for Python's parser, another top-level type) is a CheckpointError naming the file, what
    is wrong and ``fix``."""
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise CheckpointError(f"{path} is a folder, where a JSON file goes: {fix}") from None
    except FileNotFoundError:
        raise CheckpointError(f"{path} is missing: {fix}") from None
    except OSError as exc:
        raise CheckpointError(
            f"{path} cannot be read ({exc.strerror or exc}); check its permissions"
        ) from None
    return decode_json(raw, str(path), fix, kind)


def decode_json(raw: bytes, where: str, fix: str, kind: type = dict) -> Any:
    """``raw`` as JSON of ``kind`` (object: any); ``where`` names it in the CheckpointError."""
    if not raw.strip():
        raise CheckpointError(f"{where} is empty: {fix}")
    if said := byte_order_mark(raw, where, "JSON", fix):
        raise CheckpointError(said)
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CheckpointError(f"{where}: not UTF-8 text (byte offset {exc.start}): {fix}") from None
    except json.JSONDecodeError as exc:
        raise CheckpointError(
            f"{where}:{exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno}): {fix}"
        ) from None
    except (ValueError, RecursionError) as exc:  # a number of over 4300 digits; deep nesting
        what = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).split(";")[0]
        raise CheckpointError(f"{where}: not readable JSON ({what}): {fix}") from None
    if not isinstance(data, kind):
        raise CheckpointError(
            f"{where} holds {JSON_TYPES[type(data)]}, not {JSON_TYPES[kind]}: {fix}"
        )
    return data


def _check_chat_template(folder: Path) -> None:
    """The chat template (chat_template.jinja, or tokenizer_config.json's) must at least parse."""
    try:
        import jinja2
    except ImportError:  # pragma: no cover - transformers brings it
        return
    sources: list[tuple[Path, str]] = []
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        sources.append((jinja, jinja.read_text(encoding="utf-8", errors="replace")))
    config = folder / "tokenizer_config.json"
    if config.is_file():
        template = read_json(config).get("chat_template")
        if isinstance(template, str):
            sources.append((config, template))
    for path, text in sources:
        try:
            jinja2.Environment().parse(text)
        except jinja2.TemplateSyntaxError as exc:
            where = f"{path}:{exc.lineno}"
            if path.suffix != ".jinja":
                where = f"{path} (chat_template, line {exc.lineno})"
            raise CheckpointError(
                f"{where}: the chat template does not parse ({exc.message}); fix it, or remove it "
                "and pass --chat-template off"
            ) from None


def _check_config(folder: Path, trust_remote_code: bool, ignore_remote_code: bool) -> None:
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise CheckpointError(
            f"{config_path} is missing: --model must be a checkpoint folder with the config.json "
            "saved beside the weights."
        )
    config = read_json(config_path)
    if not (config.get("model_type") or config.get("architectures")):
        raise CheckpointError(
            f"{config_path} names no model_type or architectures: restore config.json from the "
            "training run or the base model"
        )
    auto_map: dict[str, object] = (
        config["auto_map"] if isinstance(config.get("auto_map"), dict) else {}
    )
    # the class a loader asks for: a causal LM under test, a classifier or seq2seq NLI judge
    own = auto_map.get("AutoModelForCausalLM") or next(
        (v for k, v in sorted(auto_map.items()) if k.startswith("AutoModel")), None
    )
    if not own:
        return
    own = own[0] if isinstance(own, list) else own
    if not trust_remote_code and not ignore_remote_code:
        raise CheckpointError(
            f"{config_path}: auto_map names the checkpoint's own model code ({own}), but "
            f"--trust-remote-code is off, so transformers would run its built-in "
            f"{config.get('model_type')!r} class instead, without a word. Pass "
            "--trust-remote-code to run the checkpoint's code, or --ignore-remote-code to "
            "evaluate the built-in class on purpose"
        )
    module = str(own).split("--")[-1].rsplit(".", 1)[0]
    if trust_remote_code and "--" not in str(own) and not (folder / f"{module}.py").is_file():
        raise CheckpointError(
            f"{config_path}: auto_map points at {module}.py, which is not in {folder}; copy the "
            "model code into the checkpoint folder"
        )


def _check_weights(folder: Path, allow_pickle: bool) -> None:
    index = folder / SAFETENSORS_INDEX
    shards = sorted(folder.glob("*.safetensors"))
    if index.is_file():
        weight_map = read_json(index).get("weight_map")
        if not isinstance(weight_map, dict):
            raise CheckpointError(
                f"{index} has no weight_map: restore the index saved with the shards"
            )
        names = sorted(set(weight_map.values()))
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise CheckpointError(
                f"{index} lists {len(names)} shard(s), but {', '.join(missing[:3])} "
                f"{'is' if len(missing) == 1 else 'are'} not in {folder}: the checkpoint was "
                "copied or saved only in part; copy the missing shards"
            )
        shards = [folder / n for n in names]
    for shard in shards:
        check_safetensors(shard)
    if shards:
        return
    pickled = sorted(p.name for p in [*folder.glob("*.bin"), *folder.glob("*.pt")])
    if pickled and not allow_pickle:
        raise CheckpointError(
            f"{folder} has only pickle weights ({', '.join(pickled[:3])}), which can run code when "
            "loaded; convert them to safetensors, or pass --allow-pickle if you trust the "
            "checkpoint"
        )
    if not pickled:
        raise CheckpointError(
            f"{folder} has no weights: expected model.safetensors (or shards with "
            f"{SAFETENSORS_INDEX}); the checkpoint may still be being written"
        )


def check_safetensors(path: Path) -> None:
    """The header must parse and the file be as long as it says (a copy cut short is caught)."""
    size = path.stat().st_size
    fix = "re-copy the file, or save the checkpoint again"
    try:
        with path.open("rb") as f:
            head = f.read(8)
            (header_len,) = struct.unpack("<Q", head) if len(head) == 8 else (None,)
            if header_len is None or header_len > size - 8 or header_len > 100 * 2**20:
                raise CheckpointError(
                    f"{path} is not a safetensors file, or it is cut short ({size} bytes): {fix}"
                )
            raw = f.read(header_len)
    except OSError as exc:
        raise CheckpointError(f"{path} cannot be read ({exc.strerror or exc}): {fix}") from None
    header = decode_json(raw, f"{path}'s safetensors header", fix, kind=object)
    # each tensor: {"dtype", "shape", "data_offsets": [begin, end]}
    tensors = (
        [t for name, t in header.items() if name != "__metadata__"]
        if isinstance(header, dict)
        else [None]
    )
    ends: list[int] = []
    for tensor in tensors:
        pair = tensor.get("data_offsets") if isinstance(tensor, dict) else None
        if not (isinstance(pair, list) and len(pair) == 2 and all(type(x) is int for x in pair)):
            raise CheckpointError(
                f"{path} has a safetensors header that is not a table of tensors: {fix}"
            )
        ends.append(pair[1])
    expected = 8 + header_len + max(ends, default=0)
    if size < expected:
        raise CheckpointError(
            f"{path} is truncated: {size:,} bytes, but its header describes {expected:,}: {fix}"
        )


def tokenizer_files(folder: Path) -> list[str]:
    return [name for name in TOKENIZER_FILES if (folder / name).is_file()]


def check_tokenizer(folder: Path, flag: str = "") -> None:
    """What transformers builds a tokenizer from: tokenizer.json, else a SentencePiece or tiktoken
    model, else a vocabulary (with its merges for BPE). ``flag``: the option that named the folder,
    where it is not the checkpoint's own."""
    given = f"{flag} {folder}: " if flag else ""
    present = set(tokenizer_files(folder) + [p.name for p in folder.glob("*.tiktoken")])
    if "tokenizer.json" in present:
        try:
            read_json(folder / "tokenizer.json", "copy tokenizer.json again from the base model")
        except CheckpointError as exc:
            raise CheckpointError(f"{given}{exc}") from None
        return
    if present - BPE or BPE <= present:
        return
    if present:  # one half of a BPE vocabulary
        (one,) = present
        what = f"has {one} but not {next(iter(BPE - present))}, which BPE needs beside it"
    elif (folder / "tokenizer_config.json").is_file():
        what = "has tokenizer_config.json (which only names the tokenizer's class) but no tokenizer"
    else:
        what = "has no tokenizer"
    raise CheckpointError(
        f"{given}{folder} {what}: transformers builds one from tokenizer.json, tokenizer.model "
        "(SentencePiece) or vocab.json with merges.txt (BPE). Trainers often save them only with "
        "the final checkpoint: copy the tokenizer files of the base model into this folder"
    )
