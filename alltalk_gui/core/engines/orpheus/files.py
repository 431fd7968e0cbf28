"""The Orpheus-TTS base-model folder: what it holds, and how a folder is checked before anything heavy loads.

A base folder is a Hugging Face model folder of Orpheus's Llama, as canopylabs publishes it, with the SNAC codec
it speaks through in ``snac/``::

    config.json                    LlamaForCausalLM, vocabulary 156,940 for Orpheus 3B 0.1
    tokenizer.json, tokenizer_config.json   Llama 3's tokenizer with Orpheus's <custom_token_N> tokens
    model.safetensors              or model-0000k-of-0000n.safetensors + model.safetensors.index.json
    generation_config.json         optional
    snac/config.json, snac/pytorch_model.bin   hubertsiuzdak/snac_24khz

Our exports write the same layout, so an exported voice is itself a base folder. :func:`validate_base_model`
reads only JSON and the safetensors headers (no tensor is loaded): every tensor the configuration calls for
must be there with its shape, the tokenizer must hold Orpheus's special and audio tokens
(:class:`~.tokens.SpecialTokens`), and the codec's codebook must match them. A problem is reported as a
:class:`BaseModelError` naming the file at fault, and every missing file is named at once.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from alltalk_gui.core.engine_api.engine import BaseModelError
from alltalk_gui.core.engines.orpheus.adapter import ADAPTER_CONFIG, AdapterInfo
from alltalk_gui.core.engines.orpheus.codec import CODEC_DIR, CODEC_FILES, CodecFacts, read_codec_facts

BASE_MODEL_SETTING = "orpheus_base_model_dir"  # the app settings' key of the base-model folder chosen for this engine
SOURCE_FILE = ".alltalk_source.json"   # which repository and revision a downloaded folder came from (download.py)
CONFIG_FILE = "config.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
WEIGHTS_FILE = "model.safetensors"
WEIGHTS_INDEX = "model.safetensors.index.json"
GENERATION_CONFIG = "generation_config.json"
# Orpheus 3B was trained on sequences of 8,192 tokens (canopyai/Orpheus-TTS README); its config allows Llama
# 3.2's 131,072, which no clip needs and no training here has seen. A clip and its prompt must fit the smaller.
TRAINED_CONTEXT = 8192
ORPHEUS_3B_PARAMETERS = 3_300_867_072  # config of canopylabs/orpheus-3b-0.1-ft, tied embeddings (counted below)


@dataclass(frozen=True)
class OrpheusModelInfo:
    """A checked base folder."""

    folder: Path
    config: dict[str, Any]          # config.json
    parameters: int                 # of the language model (the codec does not train)
    context: int                    # tokens a training sequence may hold
    codec: CodecFacts
    weights: tuple[Path, ...]
    adapter: AdapterInfo | None = None  # set when the folder chosen was a LoRA adapter of this base

    @property
    def codec_dir(self) -> Path:
        return self.folder / CODEC_DIR


def weight_files(folder: Path) -> tuple[Path, ...]:
    """The safetensors files of ``folder``: the shards its index names, else ``model.safetensors``.

    Raises:
        BaseModelError: no weights, an unreadable index, or shards it names that are missing.
    """
    index = folder / WEIGHTS_INDEX
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, ValueError, KeyError, AttributeError, TypeError) as exc:
            raise BaseModelError(f"{WEIGHTS_INDEX} in {folder} cannot be read: {exc}") from exc
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise BaseModelError(f"The Orpheus model folder {folder} is missing {', '.join(missing)} (named in "
                                 f"{WEIGHTS_INDEX}); the download is incomplete.")
        return tuple(folder / s for s in shards)
    if (folder / WEIGHTS_FILE).is_file():
        return (folder / WEIGHTS_FILE,)
    raise BaseModelError(f"The Orpheus model folder {folder} has no weights ({WEIGHTS_FILE}, or {WEIGHTS_INDEX} "
                         "and its shards).")


def missing_files(folder: Path) -> list[str]:
    """Every file of the layout that ``folder`` lacks (weights apart), for one message naming them all."""
    needed = [CONFIG_FILE, *TOKENIZER_FILES, *(f"{CODEC_DIR}/{n}" for n in CODEC_FILES)]
    missing = [name for name in needed if not (folder / name).is_file()]
    if not weight_files_present(folder):
        missing.append(f"{WEIGHTS_FILE} (or {WEIGHTS_INDEX} with its shards)")
    return missing


def _missing_message(folder: Path, missing: list[str]) -> str:
    """What ``folder`` lacks, said for what it is: a merged fine-tune (Unsloth's save_pretrained_merged) lacks only
    the codec, which is the base model's."""
    from alltalk_gui.core.engine_api.shared_files import where_to_get

    message = f"The Orpheus model folder {folder} is missing {', '.join(missing)}."
    codec = [name for name in missing if name.startswith(f"{CODEC_DIR}/")]
    if codec and len(codec) == len(missing):
        message += " " + where_to_get(codec, folder, BASE_MODEL_SETTING, "Orpheus-TTS", "orpheus")
    return message


def is_adapter_folder(folder: Path) -> bool:
    """A peft adapter folder (its config, and no model weights of its own)."""
    return (folder / ADAPTER_CONFIG).is_file() and not weight_files_present(folder)


def _adapter_on_its_base(folder: Path) -> OrpheusModelInfo:
    """The checked base of the LoRA adapter in ``folder`` (:mod:`.adapter`), with ``adapter`` set: the Orpheus base
    model of the app settings (a whole model, not this or another adapter), the adapter's tensors and tokenizer
    checked against it.

    Raises:
        BaseModelError: the adapter cannot be read, its base is not here, or it does not fit it.
    """
    from alltalk_gui.core.engines.orpheus import adapter

    config = adapter.read_adapter_config(folder)
    shapes = adapter.adapter_shapes(folder)
    base_name = str(config["base_model_name_or_path"]).strip()
    chosen = _base_of_adapter(folder)
    if chosen is None:
        raise BaseModelError(adapter.no_base_message(folder, base_name, chosen_base_folder()))
    try:
        base = validate_base_model(chosen)
    except BaseModelError as exc:
        raise BaseModelError(adapter.no_base_message(folder, base_name, chosen, str(exc))) from exc
    model_shapes = stored_shapes(base.weights)
    if "lm_head.weight" not in model_shapes:  # tied: the embedding's matrix
        model_shapes["lm_head.weight"] = model_shapes["model.embed_tokens.weight"]
    modules, saved, rank = adapter.check_fits(folder, shapes, base.folder, model_shapes, int(base.config["vocab_size"]))
    tokenizer = load_tokenizer(base.folder)
    if (folder / TOKENIZER_FILES[0]).is_file():  # Unsloth saves the tokenizer beside the adapter: the base's?
        own = load_tokenizer(folder)
        try:
            same = special_tokens(folder, base.codec, own) == special_tokens(base.folder, base.codec, tokenizer)
        except BaseModelError:  # it lacks Orpheus's tokens
            same = False
        if not same or len(own) != len(tokenizer):
            raise BaseModelError(adapter.tokenizer_misfit(folder, base.folder, len(own), len(tokenizer)))
    found = adapter.AdapterInfo(folder, base_name, base.folder, rank or int(config.get("r") or 0), modules, saved,
                                downloaded_from(base.folder))
    return replace(base, adapter=found)


def downloaded_from(folder: Path) -> str:
    """The Hub repository a base folder was downloaded from by this app (its ``.alltalk_source.json``), else ""."""
    try:
        repo = json.loads((folder / SOURCE_FILE).read_text(encoding="utf-8"))["repo"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return repo if isinstance(repo, str) else ""


def _base_of_adapter(folder: Path) -> Path | None:
    """The folder an adapter in ``folder`` goes on: the Orpheus base-model folder of the app settings, or the one
    chosen before it when the setting is now the adapter (chosen on the Train page), never missing folders, the
    adapter itself or another adapter."""
    from alltalk_gui.core.engine_api.shared_files import chosen_folders

    return next((chosen for chosen in chosen_folders(BASE_MODEL_SETTING)
                 if chosen.is_dir() and chosen.resolve() != folder.resolve() and not is_adapter_folder(chosen)),
                None)


def config_folder(folder: Path) -> Path:
    """The folder whose config.json, tokenizer and codec a run on ``folder`` uses: ``folder``, or for a LoRA
    adapter its base's (no check, JSON-cheap: the full check is training's)."""
    return (_base_of_adapter(folder) or folder) if is_adapter_folder(folder) else folder


def loaded_shape(folder: str | os.PathLike[str]):
    """The :class:`~.memory_estimate.Shape` of the language model a run on ``folder`` holds: its ``config.json``'s
    (a LoRA adapter's base's, :func:`config_folder`), untied where the adapter carries the embedding or the output
    projection in full (:func:`.adapter.unties_embeddings`: a merge leaves two vocabulary matrices, which every
    profile holds and a full fine-tune trains). From JSON and the adapter's safetensors header only, no torch (the
    Train page asks on its GUI thread); None without a readable ``config.json``. The full check is training's."""
    from alltalk_gui.core.engines.orpheus import adapter
    from alltalk_gui.core.engines.orpheus.memory_estimate import Shape

    if not str(folder):
        return None
    folder = Path(folder).expanduser()
    base = config_folder(folder)
    try:
        shape = Shape.of(json.loads((base / CONFIG_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if base == folder or not shape.tied:
        return shape
    try:
        carried = adapter.carried_in_full(adapter.adapter_shapes(folder))
    except BaseModelError:  # the run's check says why
        return shape
    return shape.untied() if adapter.unties_embeddings(carried) else shape


def chosen_base_folder() -> Path | None:
    """The Orpheus base-model folder of the app settings (None: none, or unreadable settings, which the first-run
    page explains)."""
    from alltalk_gui.core.engine_api.shared_files import setting_folder

    return setting_folder(BASE_MODEL_SETTING)


def weight_files_present(folder: Path) -> bool:
    return (folder / WEIGHTS_INDEX).is_file() or (folder / WEIGHTS_FILE).is_file()


def read_config(folder: Path) -> dict[str, Any]:
    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BaseModelError(f"{CONFIG_FILE} in {folder} cannot be read: {exc}") from exc
    if not isinstance(config, dict) or config.get("model_type") != "llama":
        kind = config.get("model_type") if isinstance(config, dict) else type(config).__name__
        raise BaseModelError(f"{CONFIG_FILE} in {folder} describes a '{kind}' model; Orpheus-TTS is a Llama "
                             "(model_type 'llama').")
    return config


def context_length(config: dict[str, Any]) -> int:
    """Tokens a training sequence may hold: the trained 8,192, or less where the configuration allows less."""
    return min(int(config.get("max_position_embeddings") or TRAINED_CONTEXT), TRAINED_CONTEXT)


def expected_shapes(config: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every weight the configuration calls for, with its shape (built on the meta device: nothing allocated)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.device("meta"):
        model = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in config.items() if k != "transformers_version"}))
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        shapes.pop("lm_head.weight", None)  # the embedding's matrix; the files do not repeat it
    return shapes


def stored_shapes(paths: tuple[Path, ...]) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes from the safetensors headers of ``paths`` (no tensor is read)."""
    from alltalk_gui.core.engines.orpheus.adapter import header_shapes

    shapes: dict[str, tuple[int, ...]] = {}
    for path in paths:
        try:
            shapes.update(header_shapes(path))
        except Exception as exc:  # safetensors raises several types for a damaged file
            raise BaseModelError(f"{path.name} in {path.parent} cannot be read: {exc}") from exc
    return shapes


def load_tokenizer(folder: str | os.PathLike[str]):
    """The folder's tokenizer (transformers, offline).

    Raises:
        BaseModelError: it cannot be loaded.
    """
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as exc:  # tokenizers and transformers raise many types for a damaged file
        raise BaseModelError(f"The tokenizer in {folder} cannot be loaded: {str(exc).splitlines()[0]}") from exc


def special_tokens(folder: str | os.PathLike[str], codec: CodecFacts | None = None, tokenizer: Any = None):
    """The folder's :class:`~.tokens.SpecialTokens` (its tokenizer, with the codec's codebook).

    Raises:
        BaseModelError: the tokenizer lacks a special token or enough audio tokens for the codec.
    """
    from alltalk_gui.core.engines.orpheus.tokens import SpecialTokens, TokenError

    folder = Path(folder)
    codec = codec or read_codec_facts(folder / CODEC_DIR)
    tokenizer = tokenizer or load_tokenizer(folder)
    try:
        return SpecialTokens.from_tokenizer(tokenizer, codec.codebook_size, codec.codes_per_frame)
    except TokenError as exc:
        raise BaseModelError(f"{TOKENIZER_FILES[0]} in {folder}: {exc}") from exc


def validate_base_model(folder: str | os.PathLike[str]) -> OrpheusModelInfo:
    """Check that ``folder`` holds a usable Orpheus-TTS model and its SNAC codec, without loading weights. A LoRA
    adapter folder (Unsloth's, peft's) is checked against its base (:mod:`.adapter`): the answer is the base's, with
    ``adapter`` set.

    Raises:
        BaseModelError: naming every missing file, or the first file that does not fit.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise BaseModelError(f"The Orpheus model folder {folder} does not exist.")
    if is_adapter_folder(folder):
        return _adapter_on_its_base(folder)
    missing = missing_files(folder)
    if missing:
        raise BaseModelError(_missing_message(folder, missing))
    config = read_config(folder)
    codec = read_codec_facts(folder / CODEC_DIR)
    special = special_tokens(folder, codec)
    vocab = int(config.get("vocab_size", 0))
    if vocab < special.audio_end:
        raise BaseModelError(f"{CONFIG_FILE} in {folder} has a vocabulary of {vocab}, but the tokenizer's audio "
                             f"tokens reach {special.audio_end}: the two do not belong together.")
    paths = weight_files(folder)
    expected, stored = expected_shapes(config), stored_shapes(paths)
    absent = sorted(set(expected) - set(stored))
    if absent:
        raise BaseModelError(f"The weights in {folder} lack {len(absent)} tensor(s) {CONFIG_FILE} calls for "
                             f"(first: {absent[0]}); weights and configuration do not belong together.")
    for key, shape in expected.items():
        if stored[key] != shape:
            raise BaseModelError(f"The weights in {folder}: {key} has shape {stored[key]} but {CONFIG_FILE} calls "
                                 f"for {shape}; weights and configuration do not belong together.")
    parameters = sum(_numel(shape) for shape in expected.values())
    return OrpheusModelInfo(folder, config, parameters, context_length(config), codec, paths)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
