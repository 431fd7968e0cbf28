"""Export a trained F5-TTS model as AllTalk v2's F5 folder or as a plain F5 folder.

AllTalk v2 (``models/f5tts/<name>/``, listed only when ``<name>`` matches ``*tts_v*``)::

    model_<step>.safetensors    the weights under ema_model.* (AllTalk loads them as EMA weights)
    vocab.txt                   the vocabulary the model was trained with (extended, if it was)
    vocos/config.yaml           the vocoder, copied from the base folder
    vocos/pytorch_model.bin
    voices/<x>.wav              optional reference clip, with its exact transcript in
    voices/<x>.reference.txt    (F5 needs both to speak)
    model_cfg.yaml              the architecture, in f5-tts's config layout

The plain F5 folder has the same files; ``f5-tts_infer-cli -p model_<step>.safetensors -v vocab.txt
--model_cfg model_cfg.yaml`` loads it (``--model_cfg`` is needed only for a non-v1-Base architecture such as
the tiny test model; AllTalk always assumes v1 Base).

Everything is written into a hidden temporary folder beside the target and renamed into place at the end (an
existing target is moved aside first and removed after), so a crash never leaves a half-written model folder.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core import atomic
from alltalk_gui.core.engines.f5.files import ARCH_FILE, VOCAB_FILE, VOCOS_DIR, VOCOS_FILES, arch_document, write_vocab

ALLTALK_PATTERN = "*tts_v*"


class F5ExportError(RuntimeError):
    """The export cannot be made; nothing was written (or what was written has been removed)."""


@dataclass(frozen=True)
class ReferenceVoice:
    """A reference clip and its exact transcript, exported as ``voices/<name>.wav`` + ``<name>.reference.txt``."""

    name: str
    wav: Path
    text: str


@dataclass(frozen=True)
class F5ExportResult:
    folder: Path
    weights: Path
    files: list[str]


def alltalk_name(voice: str) -> str:
    """A folder name AllTalk lists: ``f5tts_v1_<voice>`` unless ``voice`` already matches ``*tts_v*``.

    Raises:
        F5ExportError: nothing usable is left of the name.
    """
    cleaned = re.sub(r"[^\w\-]+", "_", voice.strip()).strip("._")[:80]
    if not cleaned:
        raise F5ExportError(f"'{voice}' cannot be used as a folder name; use letters, digits, '-' or '_'.")
    return cleaned if fnmatch.fnmatch(cleaned, ALLTALK_PATTERN) else f"f5tts_v1_{cleaned}"


def export_f5(state: dict[str, Any], vocab: list[str], arch: dict[str, Any], vocoder_dir: str | os.PathLike[str],
              target: str | os.PathLike[str], step: int = 0, references: tuple[ReferenceVoice, ...] = (),
              overwrite: bool = False, alltalk: bool = True) -> F5ExportResult:
    """Write an F5 model folder at ``target``.

    Args:
        state: the weights as :func:`alltalk_gui.core.engines.f5.model.export_state` returns them (``ema_model.*``).
        vocab: the vocabulary the weights were trained with (its length + 1 = the text embedding's rows).
        arch: the DiT architecture (``model_cfg.yaml``'s ``model.arch``).
        vocoder_dir: a folder with Vocos's ``config.yaml`` and ``pytorch_model.bin`` (copied).
        target: the folder to create; for AllTalk, ``.../models/f5tts/<name>`` with ``<name>`` matching
            ``*tts_v*`` (see :func:`alltalk_name`).
        step: the training step, used in the file name ``model_<step>.safetensors``.
        references: reference clips to include under ``voices/``.
        overwrite: replace a non-empty target.
        alltalk: check the AllTalk naming rule.
    Raises:
        F5ExportError: a bad name, an occupied target, a missing vocoder file, or a write failure (undone).
    """
    from safetensors.torch import save_file

    target = Path(target)
    if alltalk and not fnmatch.fnmatch(target.name, ALLTALK_PATTERN):
        raise F5ExportError(f"AllTalk lists F5 models only in folders named like {ALLTALK_PATTERN} "
                            f"(e.g. {alltalk_name(target.name)}); {target.name} would not be listed.")
    embed = state.get("ema_model.transformer.text_embed.text_embed.weight")
    if embed is None or embed.shape[0] != len(vocab) + 1:
        raise F5ExportError("the weights and the vocabulary do not belong together (text embedding rows "
                            f"{None if embed is None else embed.shape[0]}, vocabulary {len(vocab)} + 1)")
    vocoder_dir = Path(vocoder_dir)
    for name in VOCOS_FILES:
        if not (vocoder_dir / name).is_file():
            raise F5ExportError(f"The vocoder file {vocoder_dir / name} is missing.")
    if target.exists() and (not target.is_dir() or (any(target.iterdir()) and not overwrite)):
        raise F5ExportError(f"{target} already exists and is not empty; choose another name or allow overwriting.")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.export-", dir=target.parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; AllTalk may run as another user
    weights = f"model_{int(step)}.safetensors"
    try:
        save_file({k: v.contiguous() for k, v in state.items()}, str(tmp / weights))
        write_vocab(tmp / VOCAB_FILE, vocab)
        import yaml

        atomic.write_text(tmp / ARCH_FILE, yaml.safe_dump(arch_document(arch, target.name), sort_keys=False))
        (tmp / VOCOS_DIR).mkdir()
        for name in VOCOS_FILES:
            shutil.copy2(vocoder_dir / name, tmp / VOCOS_DIR / name)
        _write_references(tmp / "voices", references)
        for path in tmp.rglob("*"):
            if path.is_file():
                os.chmod(path, 0o644)
                atomic._fsync_file(path)
        _publish(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise F5ExportError(f"The export to {target} failed and was undone: {exc}") from exc
        raise
    files = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
    return F5ExportResult(folder=target, weights=target / weights, files=files)


def _write_references(folder: Path, references: tuple[ReferenceVoice, ...]) -> None:
    from alltalk_gui.core.audio.decode import load, to_mono, write_wav

    for ref in references:
        if not ref.text.strip():
            raise F5ExportError(f"The reference clip {ref.wav.name} needs its exact transcript: F5 cannot use it "
                                "without one.")
        name = alltalk_name(ref.name).removeprefix("f5tts_v1_")
        folder.mkdir(exist_ok=True)
        samples, rate = load(ref.wav)
        write_wav(folder / f"{name}.wav", to_mono(samples), rate)
        atomic.write_text(folder / f"{name}.reference.txt", ref.text.strip() + "\n")


def _publish(tmp: Path, target: Path) -> None:
    """Rename the finished folder into place; at every moment ``target`` is the old folder or the whole new one."""
    if target.exists():
        aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        os.rmdir(aside)
        os.rename(target, aside)
        try:
            os.rename(tmp, target)
        except OSError:
            os.rename(aside, target)
            raise
        shutil.rmtree(aside, ignore_errors=True)
    else:
        os.rename(tmp, target)
    atomic._fsync_dir(target.parent)
