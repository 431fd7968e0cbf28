"""XTTS v2 base-model folder: which files it holds, how they are loaded safely, and how a folder is checked.

A base-model folder (an AllTalk install's ``models/xtts/xttsv2_2.0.3/``, a Hugging Face download, or the tiny
test model from :mod:`alltalk_gui.core.engines.xtts.tiny_model`) holds ``model.pth``, ``config.json``, ``vocab.json``,
``dvae.pth`` and ``mel_stats.pth`` (and optionally ``speakers_xtts.pth``). A training folder of coqui's Trainer
(AllTalk's ``finetune/<project>/training/XTTS_FT-*/``) is one too: :mod:`.layout` says where each of its files is
read from. :func:`validate_base_model` checks all of them before any training starts and raises
:class:`BaseModelError` naming the first file that is missing or does not fit, so a user never waits for a model to
load only to see a stack trace.

Every checkpoint is read with ``torch.load(..., weights_only=True)`` (which cannot run code from the file), with
``mmap=True`` for model weights: only the tensors used are read from disk, so checking the 1.8 GB ``model.pth`` is
cheap and a 5 GB Trainer save (weights + AdamW state) costs the weights' memory, not the file's. Of a Trainer save
only the ``"model"`` entry is kept. Besides tensors and plain values, the load accepts coqui's XTTS config classes
(the official ``model.pth`` pickles one) and numpy scalars (a loss some trainers store as ``numpy.float64``); a
file naming anything else is refused with the names, and nothing from it runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

# The engine boundary's error, so the neutral packages catch it without knowing this engine.
from alltalk_gui.core.engine_api.engine import BaseModelError  # noqa: F401  (re-exported)
from alltalk_gui.core.engines.xtts.config_limits import range_errors
from alltalk_gui.core.engines.xtts.layout import (  # noqa: F401  (re-exported: the engine and download use them)
    BASE_MODEL_SETTING, BASE_ONLY_FILES, OPTIONAL_FILES, REQUIRED_FILES, WEIGHTS_FILE, ModelFiles, model_files,
    still_training, trainer_checkpoints, trainer_folder_message, trainer_weights,
)


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
    files: ModelFiles | None = field(default=None, compare=False)  # where each file is read (None: all in folder)

    def path(self, name: str) -> Path:
        return self.files.path(name) if self.files is not None else self.folder / name

    @property
    def parameters(self) -> int:
        """The size of the part that trains (the GPT), as the engine boundary names it."""
        return self.gpt_parameters


def _numpy_scalar_globals() -> list[Any]:
    """numpy scalars as pickles name them (numpy 2's ``numpy._core`` and numpy 1's ``numpy.core``) and the dtypes
    they carry: plain numbers, no code. Nothing else of numpy (arrays, object dtypes' contents) is allowed."""
    import numpy as np

    scalar = (np._core if hasattr(np, "_core") else np.core).multiarray.scalar  # numpy 2, else 1
    dtypes = [type(np.dtype(code)) for code in ("f2", "f4", "f8", "i4", "i8", "u1", "?")]
    return [scalar, (scalar, "numpy.core.multiarray.scalar"), np.dtype, *dtypes]


@contextlib.contextmanager
def _checkpoint_globals() -> Iterator[None]:
    """Let weights_only loading accept the config objects pickled inside the original coqui ``model.pth``, and
    numpy scalars.

    The official XTTS v2 ``model.pth`` stores an ``XttsConfig`` object next to the weights. coqui's own loader
    handles that by allow-listing the config classes for ``weights_only`` loading (and then *rewrites the file*,
    which we never want for a user's base model); we reuse only its allow-list.
    """
    import torch
    from TTS.tts.models.xtts import _legacy_safe_globals

    with _legacy_safe_globals(), torch.serialization.safe_globals(_numpy_scalar_globals()):
        yield


def load_checkpoint(path: str | os.PathLike[str], mmap: bool = False) -> Any:
    """``torch.load`` with ``weights_only=True`` on the CPU (safetensors files through safetensors). ``mmap``:
    tensors stay in the file until used (a file in torch's old, non-zip format is read whole: it cannot be mapped).

    Raises:
        BaseModelError: the file cannot be read, is damaged, or names code a weights-only load does not run.
    """
    import torch

    path = Path(path)
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path), device="cpu")
        with _checkpoint_globals():
            try:
                return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
            except RuntimeError as exc:
                if not mmap or "zipfile" not in str(exc):
                    raise
                return torch.load(path, map_location="cpu", weights_only=True)  # the old format: no mmap
    except pickle.UnpicklingError as exc:
        raise BaseModelError(_unsafe_message(path, exc)) from None
    except Exception as exc:  # torch raises a zoo of types for damaged files
        damaged = " (damaged or incomplete: copied only in part, or still being written?)" \
            if "zip archive" in str(exc) or isinstance(exc, EOFError) else ""
        raise BaseModelError(f"{path.name} in {path.parent} cannot be loaded{damaged}: {_first_line(exc)}") from exc


def _unsafe_message(path: Path, exc: BaseException) -> str:
    """A weights-only load refused ``path``: the globals it names that the app does not allow (found by torch's
    static scan of the pickle: nothing from the file runs), and what to do."""
    import torch

    try:
        with _checkpoint_globals():
            names = torch.serialization.get_unsafe_globals_in_checkpoint(path)
    except Exception:  # a pickle too damaged to scan: torch's own first line says what it met
        names = []
    said = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "") if names else \
        _first_line(exc).removeprefix("Weights only load failed. ")
    return (f"{path.name} in {path.parent} was not loaded: it names {said}, which the app does not run. Model files "
            "are read weights-only (tensors and plain values), so that no file can run code on this computer. Save "
            "the weights alone (torch.save of the state dict), or use the model folder AllTalk's compact step "
            "writes.")


def model_state_dict(checkpoint: Any, path: Path) -> dict[str, Any]:
    """The state dict inside a coqui ``model.pth`` or Trainer save (``{"model": ..., "config": ...}``, only the
    ``"model"`` entry is kept) or a bare state dict."""
    if isinstance(checkpoint, dict) and "model" not in checkpoint and "optimizer" in checkpoint:
        raise BaseModelError(f"{path.name} in {path.parent} holds a training state without model weights (only "
                             f"{', '.join(sorted(map(str, checkpoint))[:6])}).")
    state = checkpoint.get("model", checkpoint) if isinstance(checkpoint, dict) else None
    if isinstance(state, dict):
        # coqui's Trainer saves the GPTTrainer, whose Xtts sits under "xtts." (AllTalk's finetune output, and its
        # compacted models/trainedmodel/model.pth keep those names): strip it before looking for the GPT.
        state = {k.removeprefix("xtts.") if isinstance(k, str) else k: v for k, v in state.items()}
    if not isinstance(state, dict) or not any(isinstance(k, str) and k.startswith("gpt.") for k in state):
        raise BaseModelError(f"{path.name} in {path.parent} holds no XTTS GPT weights (no 'gpt.*' entries).")
    return state


# A save that changed while it was read is read once more after this long: the Trainer's copy of its best model
# (best_model.pth, 5 GB with the optimizer's state) takes a few seconds to write.
RETRY_WAIT_S = 3.0


class _Changed(Exception):
    """The file changed (or went) while it was read; ``cause``: the load's own error, if it failed."""

    def __init__(self, cause: BaseModelError | None = None) -> None:
        super().__init__(str(cause) if cause else "changed while read")
        self.cause = cause


def read_model_state(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The model weights of ``path`` (a ``model.pth``, or a Trainer save with its optimizer state), memory-mapped:
    the tensors are read from disk when used, and the rest of the file (the optimizer's 3.5 GB for the real GPT)
    is never read.

    A consistent snapshot: the file's identity, size and date are the same before and after the read, and a
    Trainer save that fails to load while it is fresh (a partial write) counts as changed. A changed file is read
    once more after :data:`RETRY_WAIT_S` (a Trainer save: the folder's save as :func:`.layout.model_files` then
    picks it; the older ones are deleted as new ones arrive); changed again, it is refused, never returned.

    Raises:
        BaseModelError: see :func:`load_checkpoint` and :func:`model_state_dict`; a file that changed twice while
            read (AllTalk still training in its folder: :meth:`.layout.StillTraining.said`, and what to do).
    """
    path = Path(path)
    try:
        return _unchanged_state(path)
    except _Changed:
        time.sleep(RETRY_WAIT_S)
    if _is_trainer_save(path):
        path = model_files(path.parent).weights
    try:
        return _unchanged_state(path)
    except _Changed as changed:
        raise BaseModelError(_changing_message(path, changed.cause)) from changed.cause


def _unchanged_state(path: Path) -> dict[str, Any]:
    """:func:`model_state_dict` of ``path``'s load, or :class:`_Changed` when the file changed meanwhile."""
    before = _stamp(path)
    if before is None and _is_trainer_save(path):
        raise _Changed()  # deleted since it was chosen: the Trainer keeps only its newest saves
    try:
        state = model_state_dict(load_checkpoint(path, mmap=True), path)
    except BaseModelError as exc:
        if _stamp(path) != before or (_is_trainer_save(path) and still_training(path.parent) is not None):
            raise _Changed(exc) from exc
        raise
    if _stamp(path) != before:
        raise _Changed()
    return state


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """Which file ``path`` is and how it was last written (None: gone)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def _is_trainer_save(path: Path) -> bool:
    return path.name in trainer_checkpoints(path.parent) and not (path.parent / WEIGHTS_FILE).is_file()


def _changing_message(path: Path, cause: BaseModelError | None) -> str:
    """A file that changed both times it was read: AllTalk training in its folder, else something else writing."""
    training = still_training(path.parent) if _is_trainer_save(path) else None
    if training is not None:
        happened = "is still being written" if cause is not None else "changed while it was read"
        return (f"{training.said()}: {path.name} {happened}. Wait for the run to finish or choose a finished run "
                f"(the app read it twice, {RETRY_WAIT_S:.0f} s apart).")
    if cause is not None:
        return str(cause)
    return (f"{path.name} in {path.parent} changed while it was read, twice {RETRY_WAIT_S:.0f} s apart: something is "
            "still writing it. Wait until that is done, then choose it again.")


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

    path = model_files(folder).path("config.json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BaseModelError(f"config.json is missing from {path.parent}.") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BaseModelError(f"config.json in {path.parent} is not readable JSON: {exc}.") from exc
    if not isinstance(data, dict) or data.get("model") != "xtts":
        kind = f"it describes a '{data.get('model')}' model; " if isinstance(data, dict) and data.get("model") else ""
        raise BaseModelError(f"config.json in {path.parent} is not an XTTS config ({kind}'model' must be 'xtts').")
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
    """coqui's ``VoiceBpeTokenizer`` over the folder's ``vocab.json`` (for a Trainer folder without one: its base's)."""
    from TTS.tts.layers.xtts.tokenizer import VoiceBpeTokenizer

    path = model_files(folder).path("vocab.json")
    try:
        tokenizer = VoiceBpeTokenizer(vocab_file=str(path))
    except Exception as exc:
        raise BaseModelError(f"vocab.json in {path.parent} is not a tokenizer file: {_first_line(exc)}") from exc
    for special in ("[START]", "[STOP]", "[UNK]", "[SPACE]"):
        if tokenizer.tokenizer.token_to_id(special) is None:
            raise BaseModelError(f"vocab.json in {path.parent} has no {special} token; it is not an XTTS vocabulary.")
    return tokenizer


def missing_files_message(files: ModelFiles, missing: list[str]) -> str:
    """Which files the folder lacks and where a user gets them: for a training folder of coqui's Trainer, the
    files no base model lends (:func:`.layout.trainer_folder_message`); ``dvae.pth`` and ``mel_stats.pth`` come from
    the base model."""
    from alltalk_gui.core.engine_api.shared_files import where_to_get

    folder = files.folder
    if files.is_trainer_folder:
        return trainer_folder_message(files, missing)
    message = (f"The base-model folder {folder} is missing {', '.join(missing)}. An XTTS v2 base model needs "
               f"{', '.join(REQUIRED_FILES)}.")
    runs = sorted(d.name for d in folder.iterdir() if d.is_dir() and trainer_weights(d) is not None) \
        if folder.is_dir() else []
    if runs:  # AllTalk's finetune/<project>/training/ chosen instead of one of its runs
        return (f"{message} It holds training folders of coqui's Trainer ({', '.join(runs[:3])}"
                f"{f' and {len(runs) - 3} more' if len(runs) > 3 else ''}): choose one of them.")
    base_only = [name for name in missing if name in BASE_ONLY_FILES]
    if base_only and len(base_only) == len(missing):
        message += " " + where_to_get(base_only, folder, BASE_MODEL_SETTING, "XTTS v2", "xtts")
    return message


def validate_base_model(folder: str | os.PathLike[str], *, live_ok: bool = False) -> BaseModelInfo:
    """Check that ``folder`` holds a usable XTTS v2 base model, without loading it onto a device.

    ``live_ok``: accept a training folder that AllTalk is still writing (:func:`.layout.still_training`; a preview
    speaks with its save as it is now, :attr:`ModelFiles.training` says so); without it (a run's base model) such
    a folder is refused: the run would start from weights that change under it.

    Checks, in order: every required file is present (in the folder, or for a Trainer folder where
    :func:`.layout.model_files` finds it) and not empty; config.json is an XTTS config; vocab.json is an XTTS
    tokenizer; the weights load (weights only, memory-mapped) and every GPT tensor has the shape the config and
    vocabulary call for; dvae.pth loads and its codebook matches the GPT's audio tokens; mel_stats.pth holds 80
    values.

    Raises:
        BaseModelError: with a message naming the file at fault.
    """
    import torch

    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise BaseModelError(f"The base-model folder {folder} does not exist.")
    files = model_files(folder)
    missing = files.missing()
    if missing:
        raise BaseModelError(missing_files_message(files, missing))
    if files.training is not None and not live_ok:
        raise BaseModelError(files.training.refusal())
    empty = [where(files, name) for name in REQUIRED_FILES if files.path(name).stat().st_size == 0]
    if empty:
        raise BaseModelError(f"{', '.join(empty)} {'is' if len(empty) == 1 else 'are'} empty (an interrupted "
                             "download or copy?).")

    config = load_xtts_config(folder)
    tokenizer = load_tokenizer(folder)
    args = config.model_args
    vocab_tokens = tokenizer.get_number_tokens()

    weights = files.weights.name
    state = read_model_state(files.weights)
    gpt_state = {k[4:]: v for k, v in state.items() if k.startswith("gpt.")}
    text_rows = gpt_state.get("text_embedding.weight")
    if text_rows is not None and text_rows.shape[0] != vocab_tokens:
        raise BaseModelError(
            f"{where(files, 'vocab.json')} has {vocab_tokens} tokens but {weights} was trained with "
            f"{text_rows.shape[0]}: the vocabulary belongs to a different model. Use the vocab.json that came with "
            f"{weights}."
        )

    from alltalk_gui.core.engines.xtts.gpt import build_gpt

    with torch.device("meta"):
        # Shapes only: the meta device allocates nothing, so this is cheap even for the 441 M parameter GPT.
        expected = build_gpt(config, tokenizer).state_dict()
    missing_keys = sorted(set(expected) - set(gpt_state))
    if missing_keys:
        raise BaseModelError(
            f"{where(files, WEIGHTS_FILE)} lacks {len(missing_keys)} GPT tensors the config calls for "
            f"(first: gpt.{missing_keys[0]}); config.json and {weights} do not belong together."
        )
    for key, tensor in expected.items():
        if tuple(gpt_state[key].shape) != tuple(tensor.shape):
            raise BaseModelError(
                f"{where(files, WEIGHTS_FILE)}: gpt.{key} has shape {tuple(gpt_state[key].shape)} but config.json "
                f"calls for {tuple(tensor.shape)}; config.json and {weights} do not belong together."
            )
    del state, gpt_state  # the memory-mapped file is let go

    dvae_path = files.path("dvae.pth")
    dvae_state = load_checkpoint(dvae_path, mmap=True)
    if not isinstance(dvae_state, dict):
        raise BaseModelError(f"{where(files, 'dvae.pth')} is not a state dict.")
    dvae = dvae_shape(dvae_state, dvae_path)
    if dvae.num_tokens != args.gpt_num_audio_tokens - 2:
        raise BaseModelError(
            f"{where(files, 'dvae.pth')} has {dvae.num_tokens} audio codes but config.json expects "
            f"{args.gpt_num_audio_tokens - 2} (gpt_num_audio_tokens - 2); they come from different models."
        )

    mel = load_checkpoint(files.path("mel_stats.pth"))
    if not isinstance(mel, torch.Tensor) or tuple(mel.shape) != (80,) or not torch.isfinite(mel).all() or (mel == 0).any():
        raise BaseModelError(f"{where(files, 'mel_stats.pth')} must hold 80 finite, non-zero numbers.")

    return BaseModelInfo(
        folder=folder,
        gpt_layers=args.gpt_layers,
        gpt_width=args.gpt_n_model_channels,
        gpt_heads=args.gpt_n_heads,
        number_text_tokens=vocab_tokens,
        num_audio_tokens=args.gpt_num_audio_tokens,
        gpt_parameters=sum(t.numel() for t in expected.values()),
        dvae=dvae,
        has_speakers=files.path("speakers_xtts.pth").is_file(),
        files=files,
    )


def where(files: ModelFiles, name: str) -> str:
    """"dvae.pth in <the folder it is read from>": a file named as the user finds it."""
    path = files.path(name)
    return f"{path.name} in {path.parent}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
