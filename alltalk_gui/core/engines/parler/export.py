"""Export a Parler-TTS checkpoint as a model folder ``ParlerTTSForConditionalGeneration.from_pretrained`` loads,
with the description to speak it with.

The folder (format ``parler``)::

    config.json, generation_config.json, model.safetensors     Parler's own save_pretrained (LoRA merged)
    tokenizer.json, tokenizer_config.json, special_tokens_map.json (, spiece.model)   the base's Flan-T5 tokenizer
    description.txt       the description the voice was trained with: use it (the speaker's name is in it)
    README.md, export_info.json

The model files are written by the engine's environment (:func:`alltalk_gui.core.engines.parler.worker.write_model`,
in a child process); the rest, the staging and the publishing (:mod:`alltalk_gui.core.voice.publish`: never a
half-written folder, an existing one replaced only with ``overwrite``) happen here.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core import atomic
from alltalk_gui.core.engines.parler import download
from alltalk_gui.core.voice import publish
from alltalk_gui.core.voice.export import (ExportError, ExportOptions, ExportResult, safe_name,
                                          settings_rows, training_settings)

FORMAT = "parler"
DESCRIPTION_FILE = "description.txt"
HEADROOM_BYTES = 64 << 20


def export_target(out_dir: str | os.PathLike[str], options: ExportOptions, project_name: str = "") -> Path:
    """The folder :func:`export_checkpoint` writes: ``out_dir/<name>`` (the name made a safe folder name)."""
    return Path(out_dir).expanduser().absolute() / safe_name(options.name or project_name or "parler_voice")


def export_checkpoint(checkpoint, out_dir: str | os.PathLike[str], options: ExportOptions, *, project_name: str = "",
                      progress: Callable[[str, float], None] | None = None, python: str,
                      description: str = "") -> ExportResult:
    """Write the voice of a Parler training checkpoint into ``out_dir/<name>``.

    ``python``: the engine environment's interpreter (the model files are written there). ``description``: the one
    to ship (the Preview page's, as the user left it); empty: the one the run trained with.
    Arguments and errors otherwise as :func:`alltalk_gui.core.voice.export.export_voice`.
    """
    from alltalk_gui.core.engine_api.engine import EngineError
    from alltalk_gui.core.engine_api.engine_child import call_once
    from alltalk_gui.core.engines.parler.files import validate_base_model
    from alltalk_gui.core.engine_api.engine import BaseModelError

    report = progress or (lambda _what, _fraction: None)
    target = export_target(out_dir, options, project_name or checkpoint.run)
    out_dir, name = target.parent, target.name
    try:
        base = validate_base_model(checkpoint.base_model_dir)
    except BaseModelError as exc:
        raise ExportError(str(exc)) from exc
    needed = base.total_parameters * (2 if options.half else 4) + HEADROOM_BYTES
    publish.prepare_output(out_dir, needed)
    with publish.staged_export(target, options.overwrite, needed) as export:
        tmp = export.folder
        try:
            written = call_once(python, "alltalk_gui.core.engines.parler.worker", "write_model",
                                progress=lambda what, fraction: report(what, 0.1 + 0.7 * fraction),
                                base_model_dir=str(base.folder), checkpoint_dir=str(checkpoint.path), folder=str(tmp),
                                half=options.half)
        except EngineError as exc:  # the engine's child failed (its error, raised again here): nothing is kept
            raise ExportError(f"The export to {target} failed and was undone: {exc}") from exc
        spoken = " ".join(description.split()) or written["description"]
        if not spoken:
            raise ExportError(f"The run of {checkpoint.path} kept no description ({DESCRIPTION_FILE}) and none was "
                              "given: the voice cannot be described.")
        info = _export_info(checkpoint, options, name, base, written["step"], spoken)
        report("Writing the description and README", 0.85)
        atomic.write_text(tmp / DESCRIPTION_FILE, spoken + "\n")
        atomic.write_text(tmp / "README.md", _readme(info))
        atomic.write_text(tmp / "export_info.json", json.dumps(info, indent=2) + "\n")
    warnings = export.warnings
    if options.references:
        warnings.append("Parler-TTS speaks from a description, not from reference clips: the clips were not "
                        "exported.")
    files = export.files
    weights = sum(p.stat().st_size for p in target.glob("model*.safetensors"))
    report("Done", 1.0)
    return ExportResult(folder=target, files=files, model_bytes=weights, warnings=warnings)


def _export_info(checkpoint, options: ExportOptions, name: str, base, step: int, description: str) -> dict[str, Any]:
    from alltalk_gui import __version__

    return {
        "name": name, "format": FORMAT, "engine": "parler",
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "exported_by": f"AllTalk GUI {__version__}",
        "precision": "float16" if options.half else "float32",
        "description": description,
        "base_model": {"folder": str(base.folder), "size": base.title},
        "licence": download.LICENCE_SHORT, "licence_url": download.LICENCE_URL,
        "checkpoint": {"path": str(checkpoint.path), "run": checkpoint.run, "step": step, "epoch": checkpoint.epoch,
                       "eval_loss": checkpoint.eval_loss},
        "training_settings": training_settings(checkpoint),
    }


def _readme(info: dict[str, Any]) -> str:
    settings = settings_rows(info["training_settings"])
    ckpt = info["checkpoint"]
    loss = f", eval loss {ckpt['eval_loss']:.4f}" if ckpt["eval_loss"] is not None else ""
    return f"""# {info['name']}: a fine-tuned Parler-TTS voice

A complete Parler-TTS model ({info['base_model']['size']} fine-tuned on recordings of one speaker with AllTalk GUI,
{info['exported_by']}, exported {info['exported_at']}), from run `{ckpt['run']}`, step {ckpt['step']}, epoch
{ckpt['epoch']}{loss}; weights in {info['precision']}.

## The description

Parler-TTS speaks in the voice a description gives. This one learnt the speaker under the description in
`description.txt`:

> {info['description']}

Use it as it is (the name in it is what the model learnt); change the words about speed, pitch or the recording
to steer it.

## Use it

```python
import soundfile as sf
from parler_tts import ParlerTTSForConditionalGeneration
from transformers import AutoTokenizer

folder = "{info['name']}"
model = ParlerTTSForConditionalGeneration.from_pretrained(folder)
tokenizer = AutoTokenizer.from_pretrained(folder)
description = open(f"{{folder}}/description.txt", encoding="utf-8").read().strip()
ids = tokenizer(description, return_tensors="pt")
prompt = tokenizer("Hello there, how are you today?", return_tensors="pt")
audio = model.generate(input_ids=ids.input_ids, attention_mask=ids.attention_mask,
                       prompt_input_ids=prompt.input_ids, prompt_attention_mask=prompt.attention_mask)
sf.write("out.wav", audio.cpu().numpy().squeeze(), model.config.sampling_rate)
```

It needs `parler-tts` 0.2.3, which pins transformers 4.46.1. English only, as Parler-TTS v1 is.

## Licence

{info['licence']} ({info['licence_url']}). Only use a voice you have the speaker's permission to copy.

## Training settings

| setting | value |
| --- | --- |
{settings}
"""
