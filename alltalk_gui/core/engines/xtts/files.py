"""XTTS v2 base-model folder: which files it holds, how they are loaded safely, and how a folder is checked.

A base-model folder (an AllTalk install's ``models/xtts/xttsv2_2.0.3/``, a Hugging Face download, or the tiny
test model from :mod:`alltalk_gui.core.engines.xtts.tiny_model`) holds ``model.pth``, ``config.json``, ``vocab.json``,
``dvae.pth`` and ``mel_stats.pth`` (and optionally ``speakers_xtts.pth``). :func:`validate_base_model` checks all of
them before any training starts and raises :class:`BaseModelError` naming the first file that is missing or does
not fit, so a user never waits for a model to load only to see a stack trace.

Every checkpoint is read with ``torch.load(..., weights_only=True)`` (which cannot run code from the file);
``mmap=True`` keeps validation of the 1.8 GB real ``model.pth`` cheap, since only the shapes are looked at.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

# The engine boundary's error, so the neutral packages catch it without knowing this engine.
from alltalk_gui.core.engine_api.engine import BaseModelError  # noqa: F401  (re-exported)
from alltalk_gui.core.engines.xtts.config_limits import range_errors

BASE_MODEL_SETTING = "base_model_dir"  # the app settings' key of the base-model folder chosen for this engine
REQUIRED_FILES = ("model.pth", "config.json", "vocab.json", "dvae.pth", "mel_stats.pth")
OPTIONAL_FILES = ("speakers_xtts.pth",)
# The same in every fine-tune of XTTS v2 (training never changes them): a fine-tune's folder gets them from its base.
BASE_ONLY_FILES = ("dvae.pth", "mel_stats.pth")


@dataclass(frozen=True)
class DvaeShape:
    """The DVAE architecture read from the shapes in ``dvae.pth`` (coqui hard-codes the real model's)."""

    num_tokens: int
    codebook_dim: int
    hidden_dim: int
    num_resnet_blocks: int
    num_layers: int = 2


@dataclass(frozen=True)
class BaseModelInfo:
    """A validated base-model folder."""

    folder: Path
    gpt_layers: int
    gpt_width: int
    gpt_heads: int
    number_text_tokens: int
    num_audio_tokens: int
    gpt_parameters: int
    dvae: DvaeShape
    has_speakers: bool

    def path(self, name: str) -> Path:
        return self.folder / name

    @property
    def parameters(self) -> int:
        """The size of the part that trains (the GPT), as the engine boundary names it."""
        return self.gpt_parameters


@contextlib.contextmanager
def _checkpoint_globals() -> Iterator[None]:
    """Let weights_only loading accept the config objects pickled inside the original coqui ``model.pth``.

    The official XTTS v2 ``model.pth`` stores an ``XttsConfig`` object next to the weights. coqui's own loader
    handles that by allow-listing the config classes for ``weights_only`` loading (and then *rewrites the file*,
    which we never want for a user's base model); we reuse only its allow-list.
    """
    from TTS.tts.models.xtts import _legacy_safe_globals

    with _legacy_safe_globals():
        yield


def load_checkpoint(path: str | os.PathLike[str], mmap: bool = False) -> Any:
    """``torch.load`` with ``weights_only=True`` on the CPU (safetensors files through safetensors).

    Raises:
        BaseModelError: the file cannot be read or is not a weights-only checkpoint.
    """
    import torch

    path = Path(path)
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path), device="cpu")
        with _checkpoint_globals():
            return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except Exception as exc:  # torch raises a zoo of types for damaged files
        raise BaseModelError(f"{path.name} in {path.parent} cannot be loaded: {_first_line(exc)}") from exc


def model_state_dict(checkpoint: Any, path: Path) -> dict[str, Any]:
    """The state dict inside a coqui ``model.pth`` (``{"model": ..., "config": ...}``) or a bare state dict."""
    state = checkpoint.get("model", checkpoint) if isinstance(checkpoint, dict) else None
    if isinstance(state, dict):
        # coqui's Trainer saves the GPTTrainer, whose Xtts sits under "xtts." (AllTalk's finetune output, and its
        # compacted models/trainedmodel/model.pth keep those names): strip it before looking for the GPT.
        state = {k.removeprefix("xtts.") if isinstance(k, str) else k: v for k, v in state.items()}
    if not isinstance(state, dict) or not any(isinstance(k, str) and k.startswith("gpt.") for k in state):
        raise BaseModelError(f"{path.name} in {path.parent} holds no XTTS GPT weights (no 'gpt.*' entries).")
    return state


def dvae_shape(state: dict[str, Any], path: Path) -> DvaeShape:
    """Read the DVAE architecture from the tensor shapes of ``dvae.pth``."""
    try:
        codebook_dim, num_tokens = state["codebook.embed"].shape
        hidden_dim = state["encoder.0.0.weight"].shape[0]
        blocks = {m.group(1) for k in state if (m := re.match(r"encoder\.(\d+)\.net\.", k))}
        layers = sum(1 for k in state if re.fullmatch(r"encoder\.\d+\.0\.weight", k))
    except (KeyError, AttributeError, ValueError) as exc:
        raise BaseModelError(f"{path.name} in {path.parent} is not an XTTS DVAE checkpoint (missing {exc}).") from exc
    return DvaeShape(int(num_tokens), int(codebook_dim), int(hidden_dim), len(blocks), layers)


def load_xtts_config(folder: str | os.PathLike[str]):
    """Read ``config.json`` into coqui's ``XttsConfig``.

    Raises:
        BaseModelError: missing, not JSON, or not an XTTS config.
    """
    from TTS.tts.configs.xtts_config import XttsConfig

    path = Path(folder) / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BaseModelError(f"config.json is missing from {path.parent}.") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaseModelError(f"config.json in {path.parent} is not readable JSON: {exc}.") from exc
    if not isinstance(data, dict) or data.get("model") != "xtts":
        raise BaseModelError(f"config.json in {path.parent} is not an XTTS config ('model' must be 'xtts').")
    config = XttsConfig()
    errors = range_errors(data.get("model_args", {}), config.model_args)  # before anything is built from them
    if errors:
        raise BaseModelError(f"config.json in {path.parent} is not a usable XTTS config: {'; '.join(errors)}. "
                             "Use the config.json that came with model.pth.")
    try:
        config.from_dict(data)
    except Exception as exc:
        raise BaseModelError(f"config.json in {path.parent} does not fit XTTS: {_first_line(exc)}") from exc
    return config


def load_tokenizer(folder: str | os.PathLike[str]):
    """coqui's ``VoiceBpeTokenizer`` over the folder's ``vocab.json``."""
    from TTS.tts.layers.xtts.tokenizer import VoiceBpeTokenizer

    path = Path(folder) / "vocab.json"
    try:
        tokenizer = VoiceBpeTokenizer(vocab_file=str(path))
    except Exception as exc:
        raise BaseModelError(f"vocab.json in {path.parent} is not a tokenizer file: {_first_line(exc)}") from exc
    for special in ("[START]", "[STOP]", "[UNK]", "[SPACE]"):
        if tokenizer.tokenizer.token_to_id(special) is None:
            raise BaseModelError(f"vocab.json in {path.parent} has no {special} token; it is not an XTTS vocabulary.")
    return tokenizer


def trainer_checkpoints(folder: Path) -> list[str]:
    """The checkpoints coqui's Trainer writes into a training folder (AllTalk's
    ``finetune/tmp-trn/training/XTTS_FT-*/``): ``best_model.pth``, ``best_model_<step>.pth``, ``checkpoint_<step>.pth``."""
    return sorted(p.name for pattern in ("best_model*.pth", "checkpoint_*.pth") for p in folder.glob(pattern))


def missing_files_message(folder: Path, missing: list[str]) -> str:
    """Which files ``folder`` lacks and where a user gets them: a training folder of coqui's Trainer is named as
    such (its checkpoint is not yet a model folder); ``dvae.pth`` and ``mel_stats.pth`` come from the base model."""
    from alltalk_gui.core.engine_api.shared_files import where_to_get

    found = trainer_checkpoints(folder)
    if "model.pth" in missing and found:
        return (f"{folder} is a training folder of coqui's Trainer (as AllTalk's finetune writes under "
                f"finetune/tmp-trn/training/), with {', '.join(found)} but no model.pth. Use the model folder made "
                "from it instead (AllTalk's final step copies the compacted model into models/trainedmodel/), or "
                f"make one: copy {found[0]} into a new folder as model.pth, with this folder's config.json and "
                "vocab.json and the base model's dvae.pth and mel_stats.pth.")
    message = (f"The base-model folder {folder} is missing {', '.join(missing)}. An XTTS v2 base model needs "
               f"{', '.join(REQUIRED_FILES)}.")
    base_only = [name for name in missing if name in BASE_ONLY_FILES]
    if base_only and len(base_only) == len(missing):
        message += " " + where_to_get(base_only, folder, BASE_MODEL_SETTING, "XTTS v2", "xtts")
    return message


def validate_base_model(folder: str | os.PathLike[str]) -> BaseModelInfo:
    """Check that ``folder`` holds a usable XTTS v2 base model, without loading it onto a device.

    Checks, in order: every required file is present and not empty; config.json is an XTTS config; vocab.json
    is an XTTS tokenizer; model.pth loads (weights only) and every GPT tensor has the shape the config and
    vocabulary call for; dvae.pth loads and its codebook matches the GPT's audio tokens; mel_stats.pth holds 80
    values.

    Raises:
        BaseModelError: with a message naming the file at fault.
    """
    import torch

    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise BaseModelError(f"The base-model folder {folder} does not exist.")
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        raise BaseModelError(missing_files_message(folder, missing))
    empty = [name for name in REQUIRED_FILES if (folder / name).stat().st_size == 0]
    if empty:
        raise BaseModelError(f"{', '.join(empty)} in {folder} is empty (an interrupted download?).")

    config = load_xtts_config(folder)
    tokenizer = load_tokenizer(folder)
    args = config.model_args
    vocab_tokens = tokenizer.get_number_tokens()

    model_path = folder / "model.pth"
    state = model_state_dict(load_checkpoint(model_path, mmap=True), model_path)
    gpt_state = {k[4:]: v for k, v in state.items() if k.startswith("gpt.")}
    text_rows = gpt_state.get("text_embedding.weight")
    if text_rows is not None and text_rows.shape[0] != vocab_tokens:
        raise BaseModelError(
            f"vocab.json in {folder} has {vocab_tokens} tokens but model.pth was trained with {text_rows.shape[0]}: "
            "the vocabulary belongs to a different model. Use the vocab.json that came with model.pth."
        )

    from alltalk_gui.core.engines.xtts.gpt import build_gpt

    with torch.device("meta"):
        # Shapes only: the meta device allocates nothing, so this is cheap even for the 441 M parameter GPT.
        expected = build_gpt(config, tokenizer).state_dict()
    missing_keys = sorted(set(expected) - set(gpt_state))
    if missing_keys:
        raise BaseModelError(
            f"model.pth in {folder} lacks {len(missing_keys)} GPT tensors the config calls for "
            f"(first: gpt.{missing_keys[0]}); config.json and model.pth do not belong together."
        )
    for key, tensor in expected.items():
        if tuple(gpt_state[key].shape) != tuple(tensor.shape):
            raise BaseModelError(
                f"model.pth in {folder}: gpt.{key} has shape {tuple(gpt_state[key].shape)} but config.json calls "
                f"for {tuple(tensor.shape)}; config.json and model.pth do not belong together."
            )

    dvae_path = folder / "dvae.pth"
    dvae_state = load_checkpoint(dvae_path, mmap=True)
    if not isinstance(dvae_state, dict):
        raise BaseModelError(f"dvae.pth in {folder} is not a state dict.")
    dvae = dvae_shape(dvae_state, dvae_path)
    if dvae.num_tokens != args.gpt_num_audio_tokens - 2:
        raise BaseModelError(
            f"dvae.pth in {folder} has {dvae.num_tokens} audio codes but config.json expects "
            f"{args.gpt_num_audio_tokens - 2} (gpt_num_audio_tokens - 2); they come from different models."
        )

    mel_path = folder / "mel_stats.pth"
    mel = load_checkpoint(mel_path)
    if not isinstance(mel, torch.Tensor) or tuple(mel.shape) != (80,) or not torch.isfinite(mel).all() or (mel == 0).any():
        raise BaseModelError(f"mel_stats.pth in {folder} must hold 80 finite, non-zero numbers.")

    return BaseModelInfo(
        folder=folder,
        gpt_layers=args.gpt_layers,
        gpt_width=args.gpt_n_model_channels,
        gpt_heads=args.gpt_n_heads,
        number_text_tokens=vocab_tokens,
        num_audio_tokens=args.gpt_num_audio_tokens,
        gpt_parameters=sum(t.numel() for t in expected.values()),
        dvae=dvae,
        has_speakers=(folder / "speakers_xtts.pth").is_file(),
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
