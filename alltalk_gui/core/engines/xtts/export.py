"""Export a trained voice as a model folder that AllTalk and coqui-tts load as they load XTTS v2 itself.

The folder (``OUT/NAME``, laid out as AllTalk's ``models/xtts/<name>/``)::

    model.pth           compacted: the base model's HiFi-GAN + the fine-tuned GPT, weights only (no optimizer,
                        no DVAE, no training-only mel front ends); optionally half precision
    config.json         the base model's, unchanged (AllTalk reads its generation defaults from it)
    vocab.json          the base model's tokenizer
    speakers_xtts.pth   the base model's built-in speakers, when it has them (see below for AllTalk)
    dvae.pth            \\ needed only to keep training elsewhere; AllTalk lists a model folder only when
    mel_stats.pth       / both are present, so the AllTalk format always includes them
    wavs/               the reference clips: voice samples to use with the model
    README.md           what this is, the licence, the base model and the training settings
    export_info.json    the same facts for programs

AllTalk (v2) lists a folder under ``models/xtts`` only when it holds all of model.pth, config.json, vocab.json,
speakers_xtts.pth, dvae.pth and mel_stats.pth. When the base model has no ``speakers_xtts.pth`` (only the test
model lacks it), the AllTalk export writes one holding this voice alone, computed from the reference clips
with the fine-tuned model, in the format coqui's ``SpeakerManager`` reads.

Safety: the target must be empty or absent (unless ``overwrite``); free space is checked before anything is
written; everything is written into a hidden temporary folder beside the target, flushed, and renamed into
place at the end, so a crash or a full disk never leaves a half-written model folder. The user's base model and
the training checkpoint are only read.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from alltalk_gui.core import atomic
from alltalk_gui.core.engines.xtts.files import missing_files_message, model_files
from alltalk_gui.core.training.checkpoints import CheckpointInfo
from alltalk_gui.core.voice import publish
from alltalk_gui.core.voice.export import (ExportError, ExportOptions, ExportResult, ProgressCallback, safe_name,
                                          settings_rows, training_settings)

FORMATS = ("alltalk", "coqui")  # AllTalk's models/xtts/<name>/ folder, or a plain coqui-tts model folder
LICENCE = "Coqui Public Model License 1.0.0"
LICENCE_URL = "https://coqui.ai/cpml"
# Keys of a coqui model.pth that inference never uses: the DVAE and the mel front ends of coqui's GPTTrainer.
TRAINING_ONLY_PREFIXES = ("dvae.", "torch_mel_spectrogram_style_encoder.", "torch_mel_spectrogram_dvae.")
# Built by init_gpt_for_inference from the GPT's own weights; XTTS v1 checkpoints stored them, v2 does not.
INFERENCE_COPY_PREFIX = "gpt.gpt_inference."
HEADROOM_BYTES = 16 << 20  # README, JSON and file-system overhead

def compact_state(base_model_dir: str | os.PathLike[str], gpt_weights: str | os.PathLike[str],
                  half: bool = False) -> dict[str, Any]:
    """The inference state dict of the fine-tuned voice: the base model's non-GPT weights (HiFi-GAN, speaker
    encoder, mel stats) with the checkpoint's GPT in place of the base GPT.

    Raises:
        ExportError: the checkpoint's GPT does not have the base model's tensors (another base model).
    """

    from alltalk_gui.core.engines.xtts.files import BaseModelError, read_model_state
    from alltalk_gui.core.engines.xtts.model import gpt_state

    base_model_dir = Path(base_model_dir)
    try:
        # mmap: the real model.pth is 1.8 GB (a Trainer save 5 GB with its optimizer state, never read); its
        # tensors are read from disk as torch.save writes them out.
        base = read_model_state(model_files(base_model_dir).weights)
        tuned = gpt_state(base_model_dir, gpt_weights)  # LoRA adapters merged in
    except BaseModelError as exc:
        raise ExportError(str(exc)) from exc
    state = {k: v for k, v in base.items()
             if not k.startswith(TRAINING_ONLY_PREFIXES) and not k.startswith(INFERENCE_COPY_PREFIX)}
    base_gpt = {k[4:]: v for k, v in state.items() if k.startswith("gpt.")}
    missing, extra = sorted(set(base_gpt) - set(tuned)), sorted(set(tuned) - set(base_gpt))
    if missing or extra:
        first = (missing or extra)[0]
        raise ExportError(
            f"The checkpoint's GPT does not match the base model in {base_model_dir} ({len(missing)} tensors "
            f"missing, {len(extra)} unexpected, e.g. gpt.{first}); it was trained from another base model."
        )
    for key, tensor in tuned.items():
        if tuple(tensor.shape) != tuple(base_gpt[key].shape):
            raise ExportError(f"gpt.{key} has shape {tuple(tensor.shape)} in the checkpoint but "
                              f"{tuple(base_gpt[key].shape)} in the base model in {base_model_dir}.")
        state[f"gpt.{key}"] = tensor
    if half:
        # mel_stats normalises the conditioning spectrogram: tiny, and kept exact.
        state = {k: v.half() if v.is_floating_point() and k != "mel_stats" else v for k, v in state.items()}
    return {k: v.contiguous() for k, v in state.items()}


def _state_bytes(state: dict[str, Any]) -> int:
    return sum(t.numel() * t.element_size() for t in state.values())


def export_target(out_dir: str | os.PathLike[str], options: ExportOptions, project_name: str = "") -> Path:
    """``out_dir/<name>``: the voice's name (the project's when none is given) as a folder name, in either format.

    Raises:
        ExportError: no usable name.
    """
    return Path(out_dir).expanduser().absolute() / safe_name(options.name or project_name)


def export_xtts(checkpoint: CheckpointInfo, out_dir: str | os.PathLike[str], options: ExportOptions,
                 project_name: str = "", progress: ProgressCallback | None = None) -> ExportResult:
    """Write the voice of ``checkpoint`` into ``out_dir/<name>`` (the layout is in the module docstring); the
    arguments and errors are :func:`alltalk_gui.core.voice.export.export_voice`'s, which calls this for XTTS v2."""
    report = progress or (lambda _what, _fraction: None)
    if options.format not in FORMATS:
        raise ExportError(f"Unknown export format '{options.format}'; use {' or '.join(FORMATS)}.")
    target = export_target(out_dir, options, project_name or checkpoint.run)
    out_dir, name = target.parent, target.name
    base = checkpoint.base_model_dir
    files = model_files(base)  # a Trainer folder's files: its own, and what its base model lends (layout.py)
    publish.recover_interrupted(out_dir, name)
    publish.check_target(target, options.overwrite)

    copies = ["config.json", "vocab.json"]
    if options.format == "alltalk" or options.training_files:
        copies += ["dvae.pth", "mel_stats.pth"]
    missing = [n for n in ["model.pth", *copies] if not files.path(n).is_file()]
    if missing:
        if files.is_trainer_folder:
            raise ExportError(missing_files_message(files, missing))
        raise ExportError(f"The base model folder {base} is missing {', '.join(missing)}; the export needs it. "
                          "Point the checkpoint to the right base model or restore the files.")
    has_speakers = files.path("speakers_xtts.pth").is_file()
    if has_speakers:
        copies.append("speakers_xtts.pth")
    references = [Path(p) for p in options.references]
    for ref in references:
        if not ref.is_file():
            raise ExportError(f"The reference clip {ref} does not exist.")
    make_speakers = options.format == "alltalk" and not has_speakers and bool(references)
    warnings: list[str] = []
    if options.format == "alltalk" and not has_speakers and not references:
        warnings.append("The base model has no speakers_xtts.pth and no reference clip was given, so none was "
                        "written: AllTalk lists a model folder only when it has one.")

    report("Reading the weights", 0.05)
    state = compact_state(base, checkpoint.weights, options.half)
    model_bytes = _state_bytes(state)
    needed = (model_bytes + sum(files.path(n).stat().st_size for n in copies)
              + sum(r.stat().st_size for r in references) + HEADROOM_BYTES)
    publish.prepare_output(out_dir, needed)

    with publish.staged_export(target, options.overwrite, needed) as export:
        import torch

        tmp = export.folder
        report("Writing model.pth", 0.2)
        torch.save({"model": state}, tmp / "model.pth")
        model_bytes = (tmp / "model.pth").stat().st_size
        del state
        for i, file in enumerate(copies):
            report(f"Copying {file}", 0.5 + 0.2 * i / len(copies))
            shutil.copy2(files.path(file), tmp / file)
        ref_names = _copy_references(references, tmp / "wavs")
        if make_speakers:
            report("Computing the voice's speaker latents", 0.75)
            _write_speakers(tmp / "speakers_xtts.pth", name, base, checkpoint.weights, references)
        report("Writing README.md", 0.9)
        info = _export_info(checkpoint, options, name, ref_names, make_speakers, has_speakers)
        atomic.write_json(tmp / "export_info.json", info)
        atomic.write_text(tmp / "README.md", _readme(info, checkpoint))
    report("Done", 1.0)
    return ExportResult(folder=target, files=export.files, model_bytes=model_bytes, warnings=warnings + export.warnings)


def _copy_references(references: list[Path], folder: Path) -> list[str]:
    """Copy the reference clips as wav files (AllTalk's voice lists show only .wav; others are converted)."""
    from alltalk_gui.core.audio import decode as audio

    names: list[str] = []
    if not references:
        return names
    folder.mkdir()
    for i, ref in enumerate(references, start=1):
        name = f"reference_{i:02d}_{ref.stem}.wav"
        if ref.suffix.lower() == ".wav":
            shutil.copy2(ref, folder / name)
        else:
            try:
                samples, rate = audio.load(ref)
            except audio.AudioError as exc:
                raise ExportError(f"The reference clip {ref.name} cannot be read: {exc}") from exc
            audio.write_wav(folder / name, audio.to_mono(samples), rate)
        names.append(f"wavs/{name}")
    return names


def _write_speakers(path: Path, name: str, base: Path, weights: Path, references: list[Path]) -> None:
    """A coqui ``speakers_xtts.pth`` with one speaker, this voice, as the fine-tuned model hears the references."""
    import torch

    from alltalk_gui.core.engines.xtts.model import SAMPLE_RATE, load_inference_model
    from alltalk_gui.core.voice.references import load_references

    model = load_inference_model(base, weights)
    wav = torch.from_numpy(load_references(references, SAMPLE_RATE)).unsqueeze(0)
    with torch.inference_mode():
        latent = model.get_gpt_cond_latents(wav, SAMPLE_RATE, length=30, chunk_length=6)
        embedding = model.get_speaker_embedding(wav, SAMPLE_RATE)
    # coqui unpacks each entry's values in this order: gpt_cond_latent, speaker_embedding.
    torch.save({name: {"gpt_cond_latent": latent.cpu().contiguous(),
                       "speaker_embedding": embedding.cpu().contiguous()}}, path)


def _export_info(checkpoint: CheckpointInfo, options: ExportOptions, name: str, references: list[str],
                 made_speakers: bool, copied_speakers: bool) -> dict[str, Any]:
    from alltalk_gui import __version__

    base_config: dict[str, Any] = {}
    try:
        base_config = json.loads(model_files(checkpoint.base_model_dir).path("config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    return {
        "name": name,
        "format": options.format,
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "exported_by": f"AllTalk GUI {__version__}",
        "precision": "float16" if options.half else "float32",
        "licence": LICENCE,
        "licence_url": LICENCE_URL,
        "base_model": {"folder": str(checkpoint.base_model_dir),
                       "description": str(base_config.get("run_description") or "XTTS v2")},
        "checkpoint": {"path": str(checkpoint.path), "run": checkpoint.run, "step": checkpoint.step,
                       "epoch": checkpoint.epoch, "eval_loss": checkpoint.eval_loss},
        "training_settings": training_settings(checkpoint),
        "references": references,
        "speakers_xtts": "this voice only (computed at export)" if made_speakers else
                         ("the base model's" if copied_speakers else "none"),
        "training_files": options.format == "alltalk" or options.training_files,
    }


def _readme(info: dict[str, Any], checkpoint: CheckpointInfo) -> str:
    settings = settings_rows(info["training_settings"])
    refs = "\n".join(f"- `{r}`" for r in info["references"]) or "- (none were exported)"
    loss = f", eval loss {checkpoint.eval_loss:.4f}" if checkpoint.eval_loss is not None else ""
    speakers = {
        "this voice only (computed at export)": f"`speakers_xtts.pth` holds one speaker, `{info['name']}`, computed "
                                                "from the reference clips (the base model had none).",
        "the base model's": "`speakers_xtts.pth` is the base model's list of built-in speakers, unchanged.",
        "none": "There is no `speakers_xtts.pth` (the base model has none).",
    }[info["speakers_xtts"]]
    extra = ("`dvae.pth` and `mel_stats.pth` are the base model's; they are needed to keep training this model "
             "(and AllTalk expects them)." if info["training_files"] else
             "`dvae.pth` and `mel_stats.pth` were not exported; copy them from the base model to keep training.")
    return f"""# {info['name']}: a fine-tuned XTTS v2 voice

This folder is a complete XTTS v2 model, fine-tuned on recordings of one speaker with AllTalk GUI
({info['exported_by']}, exported {info['exported_at']}).

## Licence

XTTS v2 and models derived from it, this one included, are under the **{LICENCE}**: {LICENCE_URL}.
Read it before use; among other things it does not allow commercial use. Only use a voice you have the
speaker's permission to copy.

## What it is made of

- Base model: {info['base_model']['description']} (from `{info['base_model']['folder']}`).
- Training checkpoint: run `{checkpoint.run}`, step {checkpoint.step}, epoch {checkpoint.epoch + 1}{loss}.
- `model.pth`: the base model's HiFi-GAN decoder and speaker encoder with the fine-tuned GPT; weights only
  ({info['precision']}), no optimizer state, no DVAE.
- `config.json`, `vocab.json`: the base model's, unchanged.
- {speakers}
- {extra}

## Training settings

| setting | value |
| --- | --- |
{settings}

## Reference clips

Voice samples of the speaker, to give the model as the voice to speak in:

{refs}

## Use it

- **AllTalk**: put this folder into `alltalk_tts/models/xtts/`, choose `xtts - {info['name']}` as the model, and
  copy a reference clip into `alltalk_tts/voices/` (or all of them into
  `alltalk_tts/voices/xtts_multi_voice_sets/{info['name']}/`) and pick it as the voice.
- **coqui-tts** (Python):

```python
from TTS.tts.configs.xtts_config import XttsConfig
from TTS.tts.models.xtts import Xtts

config = XttsConfig()
config.load_json("{info['name']}/config.json")
model = Xtts.init_from_config(config)
model.load_checkpoint(config, checkpoint_dir="{info['name']}")
out = model.synthesize("Hello there.", speaker_wav=["{(info['references'] or ['your_reference.wav'])[0]}"],
                       language="{checkpoint.language or 'en'}")
```
"""
