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

plus, from :func:`export_checkpoint` (what the app's Export runs), ``README.md`` (licence, base model,
checkpoint, settings, how to use it) and ``export_info.json`` (the same for programs).

Everything is written into a hidden staging folder beside the target and renamed into place at the end
(:mod:`alltalk_gui.core.voice.publish`, shared with XTTS v2's export: an existing target is moved aside first
and removed after), so a crash never leaves a half-written model folder.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core import atomic
from alltalk_gui.core.engines.f5 import download
from alltalk_gui.core.engines.f5.files import ARCH_FILE, VOCAB_FILE, VOCOS_DIR, VOCOS_FILES, arch_document, write_vocab
from alltalk_gui.core.voice import publish
from alltalk_gui.core.voice.export import (ExportError, ExportOptions, ExportResult, safe_name,
                                          settings_rows, training_settings)

ALLTALK_PATTERN = "*tts_v*"
HEADROOM_BYTES = 16 << 20  # README, JSON, vocabulary and file-system overhead


class F5ExportError(ExportError):
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
    warnings: list[str]


def alltalk_name(voice: str) -> str:
    """A folder name AllTalk lists: ``f5tts_v1_<voice>`` unless ``voice`` already matches ``*tts_v*``.

    Raises:
        F5ExportError: nothing usable is left of the name.
    """
    try:
        cleaned = safe_name(voice)  # the one rule for export folder names
    except ExportError as exc:
        raise F5ExportError(str(exc)) from None
    return cleaned if fnmatch.fnmatch(cleaned, ALLTALK_PATTERN) else f"f5tts_v1_{cleaned}"


def export_target(out_dir: str | os.PathLike[str], options: ExportOptions, project_name: str = "") -> Path:
    """``out_dir/<name>``: for AllTalk a name it lists (:func:`alltalk_name`), else the voice's name as a folder.

    Raises:
        ExportError: no usable name.
    """
    voice = options.name or project_name
    name = alltalk_name(voice) if options.format == "alltalk" else safe_name(voice)
    return Path(out_dir).expanduser().absolute() / name


def export_f5(state: dict[str, Any], vocab: list[str], arch: dict[str, Any], vocoder_dir: str | os.PathLike[str],
              target: str | os.PathLike[str], step: int = 0, references: tuple[ReferenceVoice, ...] = (),
              overwrite: bool = False, alltalk: bool = True, extra_files: dict[str, str] | None = None,
              needed: int | None = None) -> F5ExportResult:
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
        extra_files: text files to write beside the weights (name -> content), e.g. README.md.
        needed: about how many bytes the folder takes, for the message when a write fails.
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
    weights = f"model_{int(step)}.safetensors"
    with publish.staged_export(target, overwrite, needed, error=F5ExportError) as export:
        tmp = export.folder
        save_file({k: v.contiguous() for k, v in state.items()}, str(tmp / weights))
        write_vocab(tmp / VOCAB_FILE, vocab)
        import yaml

        atomic.write_text(tmp / ARCH_FILE, yaml.safe_dump(arch_document(arch, target.name), sort_keys=False))
        (tmp / VOCOS_DIR).mkdir()
        for name in VOCOS_FILES:
            shutil.copy2(vocoder_dir / name, tmp / VOCOS_DIR / name)
        _write_references(tmp / "voices", references)
        for name, text in (extra_files or {}).items():
            atomic.write_text(tmp / name, text)
    return F5ExportResult(folder=target, weights=target / weights, files=export.files, warnings=export.warnings)


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


# -- a training checkpoint, as the app's Export writes it --------------------------------------------------------

def export_checkpoint(checkpoint, out_dir: str | os.PathLike[str], options: ExportOptions, *, project_name: str = "",
                      progress: Callable[[str, float], None] | None = None) -> ExportResult:
    """Write the voice of an F5 training checkpoint into ``out_dir/<name>``: :func:`export_f5` with the run's
    model (LoRA merged, EMA when the run kept one, its grown vocabulary), the reference clips with their exact
    transcripts, a README and ``export_info.json``. For ``alltalk`` the name is made one AllTalk lists
    (:func:`alltalk_name`). Arguments and errors are :func:`alltalk_gui.core.voice.export.export_voice`'s.
    """
    from alltalk_gui.core.engines.f5.tuned import tuned_cfm
    from alltalk_gui.core.engines.f5.model import export_state
    from alltalk_gui.core.engine_api.engine import BaseModelError
    from alltalk_gui.core.voice.references import ReferenceClipError, reference_text

    report = progress or (lambda _what, _fraction: None)
    target = export_target(out_dir, options, project_name or checkpoint.run)
    out_dir, name = target.parent, target.name
    base = checkpoint.base_model_dir
    references = []
    for i, path in enumerate(Path(p) for p in options.references):
        if not path.is_file():
            raise F5ExportError(f"The reference clip {path} does not exist.")
        try:
            text = " ".join(options.reference_texts.get(str(path), "").split()) or reference_text(path)
        except ReferenceClipError as exc:
            raise F5ExportError(str(exc)) from exc
        references.append(ReferenceVoice(f"{name}_{i + 1}" if len(options.references) > 1 else name, path, text))
    report("Reading the weights", 0.05)
    try:
        model = tuned_cfm(base, checkpoint.path)
    except BaseModelError as exc:
        raise F5ExportError(str(exc)) from exc
    state = export_state(model.cfm)
    if options.half:
        state = {k: v.half() if v.is_floating_point() else v for k, v in state.items()}
    needed = (sum(t.numel() * t.element_size() for t in state.values()) + HEADROOM_BYTES
              + sum((base / VOCOS_DIR / n).stat().st_size for n in VOCOS_FILES if (base / VOCOS_DIR / n).is_file())
              + sum(r.wav.stat().st_size for r in references))
    publish.prepare_output(out_dir, needed)
    info = _export_info(checkpoint, options, name, model, [r.name for r in references])
    report(f"Writing model_{model.step}.safetensors", 0.3)
    result = export_f5(state, model.vocab, model.arch, base / VOCOS_DIR, out_dir / name, step=model.step,
                       references=tuple(references), overwrite=options.overwrite,
                       alltalk=options.format == "alltalk",
                       extra_files={"README.md": _readme(info), "export_info.json": json.dumps(info, indent=2) + "\n"},
                       needed=needed)
    report("Done", 1.0)
    return ExportResult(folder=result.folder, files=result.files, model_bytes=result.weights.stat().st_size,
                        warnings=result.warnings)


def _export_info(checkpoint, options: ExportOptions, name: str, model, references: list[str]) -> dict[str, Any]:
    from alltalk_gui import __version__

    return {
        "name": name, "format": options.format, "engine": "f5",
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "exported_by": f"AllTalk GUI {__version__}",
        "precision": "float16" if options.half else "float32",
        "weights": f"model_{model.step}.safetensors", "weights_are_ema": model.ema,
        "vocabulary": {"tokens": len(model.vocab)},
        "licence": "CC BY-NC 4.0 (F5-TTS v1 Base weights); Vocos: MIT", "licence_url": download.LICENCE_URL,
        "base_model": {"folder": str(checkpoint.base_model_dir)},
        "checkpoint": {"path": str(checkpoint.path), "run": checkpoint.run, "step": checkpoint.step,
                       "epoch": checkpoint.epoch, "eval_loss": checkpoint.eval_loss},
        "training_settings": training_settings(checkpoint),
        "references": [f"voices/{r}.wav" for r in references],
    }


def _readme(info: dict[str, Any]) -> str:
    settings = settings_rows(info["training_settings"])
    refs = "\n".join(f"- `{r}` with its transcript in `{r[:-4]}.reference.txt`" for r in info["references"]) \
        or "- (none were exported: F5-TTS needs a clip of the voice and its exact transcript to speak)"
    ckpt = info["checkpoint"]
    loss = f", eval loss {ckpt['eval_loss']:.4f}" if ckpt["eval_loss"] is not None else ""
    weights = info["weights"]
    ref = info["references"][0] if info["references"] else "voices/your_clip.wav"
    return f"""# {info['name']}: a fine-tuned F5-TTS v1 voice

This folder is a complete F5-TTS model, fine-tuned on recordings of one speaker with AllTalk GUI
({info['exported_by']}, exported {info['exported_at']}).

## Licence

F5-TTS v1 Base's weights, and models fine-tuned from them such as this one, are under **Creative Commons
Attribution-NonCommercial 4.0** ({info['licence_url']}): no commercial use. The Vocos vocoder in `vocos/` is MIT.
Only use a voice you have the speaker's permission to copy.

## What it is made of

- `{weights}`: the fine-tuned weights under `ema_model.*` ({info['precision']}{', the EMA of the training' if info['weights_are_ema'] else ''}),
  from run `{ckpt['run']}`, step {ckpt['step']}, epoch {ckpt['epoch'] + 1}{loss}.
- `vocab.txt`: the vocabulary ({info['vocabulary']['tokens']} tokens) the model reads.
- `model_cfg.yaml`: the architecture, in f5-tts's config layout.
- `vocos/`: the vocoder (charactr/vocos-mel-24khz).

## Training settings

| setting | value |
| --- | --- |
{settings}

## Reference clips

F5-TTS speaks by continuing a clip of the voice, so it needs a clip and exactly what is said in it:

{refs}

## Use it

- **AllTalk v2**: put this folder into `alltalk_tts/models/f5tts/` (AllTalk lists folders named like
  `*tts_v*`), choose it as the F5-TTS model, and use a clip from `voices/` with its `.reference.txt`.
- **f5-tts**: `f5-tts_infer-cli -p {weights} -v vocab.txt --model_cfg model_cfg.yaml -r {ref}
  -s "<the clip's transcript>" -t "Hello there."`. It downloads the Vocos vocoder; with
  `--load_vocoder_from_local` it reads it from `../checkpoints/vocos-mel-24khz` instead (copy `vocos/` there).
"""
