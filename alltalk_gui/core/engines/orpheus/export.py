"""Export a trained Orpheus voice: a Hugging Face model folder (LoRA merged), or the LoRA adapter alone.

``orpheus`` - a folder transformers and Orpheus's own code load as they load canopylabs' models::

    config.json, generation_config.json   LlamaForCausalLM; Orpheus's sampling, stop at end of speech
    model.safetensors (or shards + index) the fine-tuned weights in bf16, LoRA folded in
    tokenizer.json, tokenizer_config.json the base model's tokenizer
    snac/config.json, snac/pytorch_model.bin   the codec, so the folder is complete (and a base folder again)
    README.md, export_info.json           the speaker name to prompt with, licence, base model, settings

``lora`` - peft's adapter folder (``adapter_config.json`` + ``adapter_model.safetensors``), which
``PeftModel.from_pretrained(<the base model>, folder)`` puts on the base model the run trained from; only for a
run that trained LoRA adapters. Plus the same README and ``export_info.json``.

Everything is written into a hidden staging folder beside the target and renamed into place at the end
(:mod:`alltalk_gui.core.voice.publish`), so a crash never leaves a half-written folder. A run trained with the
4-bit base gets its adapters merged into the full-precision weights (the adapters were fitted to the 4-bit ones;
that small difference is how QLoRA fine-tunes are always published).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from alltalk_gui.core import atomic
from alltalk_gui.core.engine_api.engine import BaseModelError
from alltalk_gui.core.engines.orpheus import download
from alltalk_gui.core.engines.orpheus.codec import CODEC_DIR, CODEC_FILES
from alltalk_gui.core.engines.orpheus.files import TOKENIZER_FILES
from alltalk_gui.core.voice import publish
from alltalk_gui.core.voice.export import (ExportError, ExportOptions, ExportResult, safe_name,
                                          settings_rows, training_settings)

HEADROOM_BYTES = 16 << 20
MERGE_IN_FP32_BELOW = 1_000_000_000   # parameters: small models merge in fp32; Orpheus 3B in bf16 (6.6 GB, not 13)


class OrpheusExportError(ExportError):
    """The export cannot be made; nothing was written (or what was written has been removed)."""


def generation_config(special) -> Any:
    """Orpheus's sampling as transformers' GenerationConfig: sampled, stops at end of speech."""
    from transformers import GenerationConfig

    return GenerationConfig(do_sample=True, temperature=0.6, top_p=0.95, repetition_penalty=1.1,
                            max_new_tokens=1200, eos_token_id=special.end_of_speech, pad_token_id=special.pad)


def export_target(out_dir: str | os.PathLike[str], options: ExportOptions, project_name: str = "") -> Path:
    """``out_dir/<name>``, the voice's name made a folder name (both formats).

    Raises:
        ExportError: no usable name.
    """
    return Path(out_dir).expanduser().absolute() / safe_name(options.name or project_name)


def export_checkpoint(checkpoint, out_dir: str | os.PathLike[str], options: ExportOptions, *, project_name: str = "",
                      progress: Callable[[str, float], None] | None = None) -> ExportResult:
    """Write the voice of an Orpheus checkpoint into ``out_dir/<name>`` in ``options.format``.

    Raises:
        OrpheusExportError: as :func:`alltalk_gui.core.voice.export.export_voice`, and ``lora`` for a run that
            trained no adapters.
    """
    from alltalk_gui.core.engines.orpheus.files import special_tokens, validate_base_model

    report = progress or (lambda _what, _fraction: None)
    rank = int(checkpoint.config.get("lora_rank") or 0)
    if options.format == "lora" and not rank:
        raise OrpheusExportError("This run trained the whole model, not LoRA adapters: export it as a model folder "
                                 "(format orpheus).")
    target = export_target(out_dir, options, project_name or checkpoint.run)
    base = checkpoint.base_model_dir
    try:
        info = validate_base_model(base)
    except BaseModelError as exc:
        raise OrpheusExportError(str(exc)) from exc
    if options.format == "lora" and info.adapter is not None:
        raise OrpheusExportError(f"This run trained on the LoRA adapter in {info.adapter.folder} merged into its base "
                                 "model: its own adapters fit only that merge, not the base model alone. Export it as "
                                 "a model folder (format orpheus), which holds both.")
    report("Reading the weights", 0.05)
    needed = HEADROOM_BYTES + (_lora_bytes(info, rank) if options.format == "lora" else
                               2 * info.parameters + sum((info.codec_dir / n).stat().st_size for n in CODEC_FILES))
    publish.prepare_output(target.parent, needed)
    try:
        with publish.staged_export(target, options.overwrite, needed, error=OrpheusExportError) as export:
            if options.format == "lora":
                speakers, step = _write_adapter(export.folder, checkpoint, info, report)
            else:
                speakers, step = _write_model(export.folder, checkpoint, info, special_tokens(info.folder), report)
            facts = _export_info(checkpoint, options, target.name, speakers, step, info)
            atomic.write_json(export.folder / "export_info.json", facts)
            atomic.write_text(export.folder / "README.md", _readme(facts))
            report("Publishing", 0.95)
    except BaseModelError as exc:  # the staging folder is gone already (staged_export)
        raise OrpheusExportError(str(exc)) from exc
    weights = sum(p.stat().st_size for p in target.rglob("*.safetensors"))
    report("Done", 1.0)
    return ExportResult(folder=target, files=export.files, model_bytes=weights, warnings=export.warnings)


def _write_model(folder: Path, checkpoint, info, special, report) -> tuple[list[str], int]:
    """The merged model, its tokenizer and generation config, and the codec, into ``folder``."""
    import torch

    from alltalk_gui.core.engines.orpheus.tuned import tuned_lm

    weights = "fp32" if info.parameters < MERGE_IN_FP32_BELOW else "bf16"
    model = tuned_lm(checkpoint.base_model_dir, checkpoint.path, weights=weights)  # an adapter: merged again
    report("Writing the model", 0.4)
    lm = model.lm.to(torch.bfloat16)  # as Orpheus publishes its weights
    lm.generation_config = generation_config(special)
    lm.save_pretrained(str(folder), safe_serialization=True)
    for name in TOKENIZER_FILES + ("special_tokens_map.json",):
        if (info.folder / name).is_file():
            shutil.copy2(info.folder / name, folder / name)
    (folder / CODEC_DIR).mkdir()
    for name in CODEC_FILES:
        shutil.copy2(info.codec_dir / name, folder / CODEC_DIR / name)
    return model.speakers, model.step


def _write_adapter(folder: Path, checkpoint, info, report) -> tuple[list[str], int]:
    """The run's LoRA adapters in peft's format (``adapter_config.json`` + ``adapter_model.safetensors``)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    from alltalk_gui.core.engines.orpheus.model import LORA_TARGETS
    from alltalk_gui.core.engines.orpheus.tuned import checkpoint_state, read_speakers

    config = checkpoint.config
    report("Reading the adapters", 0.3)
    with torch.device("meta"):  # the base's shapes only: the adapters are all that is written
        base = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in info.config.items() if k != "transformers_version"}))
    lora = LoraConfig(r=int(config["lora_rank"]), lora_alpha=float(config.get("lora_alpha") or 32.0),
                      target_modules=list(LORA_TARGETS), bias="none", task_type="CAUSAL_LM",
                      base_model_name_or_path=_base_name(info.folder))
    peft_model = get_peft_model(base, lora)
    state = {k: v for k, v in checkpoint_state(checkpoint.path).items() if "lora_" in k}
    _assign_adapters(peft_model.base_model.model, state, checkpoint.path)
    report("Writing the adapters", 0.6)
    peft_model.save_pretrained(str(folder), safe_serialization=True)
    return read_speakers(checkpoint.path.parent.parent), checkpoint.step


def _assign_adapters(lm, state: dict[str, Any], checkpoint_dir: Path) -> None:
    """Put the checkpoint's adapters (``lm.``-prefixed, as trained) into a peft-wrapped model built on meta."""
    from alltalk_gui.core.engines.orpheus.tuned import PREFIX

    own = {k.removeprefix(PREFIX): v for k, v in state.items()}
    expected = {k for k in lm.state_dict() if "lora_" in k}
    if set(own) != expected:
        missing = sorted(expected - set(own))
        raise BaseModelError(f"The checkpoint {checkpoint_dir} does not hold the adapters its settings describe"
                             f"{' (first missing: ' + missing[0] + ')' if missing else ''}.")
    lm.load_state_dict(own, strict=False, assign=True)


def _base_name(folder: Path) -> str:
    """The Hub name of a downloaded base model (its ``.alltalk_source.json``), else the folder."""
    from alltalk_gui.core.engines.orpheus.files import downloaded_from

    return downloaded_from(folder) or str(folder)


def _lora_bytes(info, rank: int) -> int:
    hidden, layers = int(info.config["hidden_size"]), int(info.config["num_hidden_layers"])
    mlp = int(info.config["intermediate_size"])
    return 4 * rank * layers * (8 * hidden + 3 * (hidden + mlp))


def _export_info(checkpoint, options: ExportOptions, name: str, speakers: list[str], step: int,
                 info) -> dict[str, Any]:
    """What the export is and what it was trained from: the base folder, and the LoRA adapter merged into it when
    the run's base was one (``info``: the checked base of the run)."""
    from alltalk_gui import __version__

    adapter = info.adapter
    trained_from = {"base_model": {"folder": str(info.folder), "name": _base_name(info.folder)}}
    if adapter is not None:
        trained_from["adapter"] = {"folder": str(adapter.folder), "made_for": adapter.base_name, "rank": adapter.rank,
                                   "modules": len(adapter.modules), "full_modules": list(adapter.saved_modules)}
    return {
        "name": name, "format": options.format, "engine": "orpheus",
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "exported_by": f"AllTalk GUI {__version__}",
        "speakers": speakers, "precision": "bfloat16" if options.format == "orpheus" else "float32 adapters",
        "licence": download.LICENCE_TITLE, "licence_url": download.LICENCE_URL,
        **trained_from,
        "checkpoint": {"path": str(checkpoint.path), "run": checkpoint.run, "step": step,
                       "epoch": checkpoint.epoch, "eval_loss": checkpoint.eval_loss},
        "training_settings": training_settings(checkpoint),
    }


def _trained_from(info: dict[str, Any]) -> str:
    base = info["base_model"]
    named = f"`{base['name']}` (folder `{base['folder']}`)" if base["name"] != base["folder"] else f"`{base['folder']}`"
    adapter = info.get("adapter")
    if adapter is None:
        return f"The Orpheus base model {named}."
    full = f", with {' and '.join(adapter['full_modules'])} in full" if adapter["full_modules"] else ""
    return (f"The LoRA adapter in `{adapter['folder']}` (rank {adapter['rank']}, {adapter['modules']} modules{full}; "
            f"made for `{adapter['made_for']}`), merged into the Orpheus base model {named} before training; this "
            "folder holds the result with the run's training folded in, and needs neither.")


def _readme(info: dict[str, Any]) -> str:
    speaker = info["speakers"][0] if info["speakers"] else "speaker"
    names = ", ".join(f"`{s}`" for s in info["speakers"]) or "`speaker`"
    settings = settings_rows(info["training_settings"])
    ckpt = info["checkpoint"]
    loss = f", eval loss {ckpt['eval_loss']:.4f}" if ckpt["eval_loss"] is not None else ""
    if info["format"] == "lora":
        what = f"""This folder is a LoRA adapter in peft's format, trained on `{info['base_model']['name']}`. Put it on
that base model:

```python
from peft import PeftModel
from transformers import AutoModelForCausalLM

base = AutoModelForCausalLM.from_pretrained("{info['base_model']['name']}")
model = PeftModel.from_pretrained(base, "{info['name']}").merge_and_unload()
```"""
    else:
        what = f"""This folder is a complete Orpheus-TTS model (Llama weights in bf16 with the LoRA adapters, if any, folded
in; its tokenizer; the SNAC 24 kHz codec in `snac/`). It loads like canopylabs' own:

```python
from transformers import AutoModelForCausalLM, AutoTokenizer

model = AutoModelForCausalLM.from_pretrained("{info['name']}")
tokenizer = AutoTokenizer.from_pretrained("{info['name']}")
```

Orpheus's own package (`pip install orpheus-speech`) serves it with vLLM:
`OrpheusModel(model_name="{info['name']}", tokenizer="{info['name']}")`, then
`generate_speech(prompt="Hello there.", voice="{speaker}")`. `generation_config.json` holds Orpheus's sampling
(temperature 0.6, top-p 0.95, repetition penalty 1.1) and stops at end of speech."""
    return f"""# {info['name']}: a fine-tuned Orpheus-TTS voice

Made with AllTalk GUI ({info['exported_by']}, exported {info['exported_at']}) from run `{ckpt['run']}`, step
{ckpt['step']}, epoch {ckpt['epoch']}{loss}.

## Trained from

{_trained_from(info)}

## The speaker name to prompt with

{names}. Orpheus speaks a voice it was fine-tuned on when the prompt starts with its name:
`{speaker}: Hello there, how are you?` (the model's answer is SNAC codes, decoded to 24 kHz audio).

## What it is

{what}

## Licence

{info['licence']} ({info['licence_url']}): Orpheus 3B is built on Llama 3.2, and so is this model. The SNAC codec
is MIT. Only use a voice you have the speaker's permission to copy.

## Training settings

| setting | value |
| --- | --- |
{settings}
"""
