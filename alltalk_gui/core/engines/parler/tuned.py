"""The fine-tuned Parler-TTS model of a training checkpoint, as preview and export need it. Engine environment.

A checkpoint (``runs/<run>/checkpoints/step_N/``, written by the training loop) holds the trainable view of the
model (:class:`~alltalk_gui.core.engines.parler.model.ParlerTrainable`: the decoder, the prompt embedding and,
for Large, the projection) under Parler's own key names; with LoRA those are the base weights plus peft's
``lora_A`` / ``lora_B`` adapters. :func:`tuned_model` loads the base model, puts the checkpoint's weights in,
folds the adapters in and returns a plain ``ParlerTTSForConditionalGeneration`` with the base's Flan-T5 and DAC.

Under LoRA with bf16 the run kept its frozen base weights in bf16 (:func:`~.model.store_frozen_in_bf16`), so the
checkpoint's copy of them is rounded: only the adapters are taken from it, the base weights from the base
model's own fp32 files. The description the run trained with is ``runs/<run>/description.txt``
(:data:`RUN_DESCRIPTION`), which the training writes before the first step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core.engine_api.engine import BaseModelError

RUN_DESCRIPTION = "description.txt"


@dataclass
class TunedModel:
    model: Any              # ParlerTTSForConditionalGeneration, eval, LoRA merged, on the CPU
    step: int               # 0: the base model
    description: str        # what the run trained with ("" for the base model)


def run_description(run_dir: str | os.PathLike[str]) -> str:
    path = Path(run_dir) / RUN_DESCRIPTION
    return path.read_text(encoding="utf-8").strip() if path.is_file() else ""


def tuned_model(base_model_dir: str | os.PathLike[str], checkpoint_dir: str | os.PathLike[str] | None) -> TunedModel:
    """The model of ``checkpoint_dir`` (None: the base model), LoRA merged.

    Raises:
        BaseModelError: the base folder or the checkpoint's weights cannot be loaded or do not fit together.
    """
    from alltalk_gui.core.engines.parler.model import add_lora, load_parler, merge_lora, trainable_view

    model = load_parler(base_model_dir)
    if checkpoint_dir is None:
        return TunedModel(model, 0, "")
    from safetensors.torch import load_file

    from alltalk_gui.core.training.checkpoints import CheckpointError, read_checkpoint

    try:
        checkpoint = read_checkpoint(checkpoint_dir)
        state = load_file(str(checkpoint.weights), device="cpu")
    except CheckpointError as exc:
        raise BaseModelError(str(exc)) from exc
    except Exception as exc:  # safetensors raises several types for a damaged file
        raise BaseModelError(f"{Path(checkpoint_dir) / 'model.safetensors'} cannot be loaded: {exc}") from exc
    trainable = trainable_view(model)
    rank = int(checkpoint.config.get("lora_rank") or 0)
    if rank:
        add_lora(trainable, rank, float(checkpoint.config.get("lora_alpha", 32.0)))
        expected = {k for k in trainable.state_dict() if "lora_" in k}
        missing = sorted(expected - set(state))
        if missing or not expected:
            raise BaseModelError(f"The checkpoint {checkpoint.path} lacks LoRA weights of this model (first: "
                                 f"{(missing or ['none'])[0]}); it belongs to another base model.")
        state = {k: v for k, v in state.items() if "lora_" in k}  # the base weights: the base model's fp32 ones
        result = trainable.load_state_dict(state, strict=False)
        if result.unexpected_keys:
            raise BaseModelError(f"The checkpoint {checkpoint.path} has weights this model lacks "
                                 f"(first: {result.unexpected_keys[0]}).")
        merge_lora(trainable)
    else:
        try:
            trainable.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            raise BaseModelError(f"The checkpoint {checkpoint.path} does not fit the Parler-TTS model in "
                                 f"{base_model_dir}: {str(exc).splitlines()[0]}") from exc
    model.requires_grad_(False)
    return TunedModel(model.float().eval(), checkpoint.step, run_description(checkpoint.path.parent.parent))
