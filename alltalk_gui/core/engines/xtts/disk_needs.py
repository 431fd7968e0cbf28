"""How big an XTTS v2 training checkpoint and an export are, from the base model's config.json and file sizes.

A checkpoint (accelerate's ``save_state``) holds the GPT's weights in fp32 (``model.safetensors``: every GPT
weight, LoRA adapters included), the optimizer's state for the trainable ones (``optimizer.bin``: AdamW's two fp32
moments, 8 bytes per parameter; bitsandbytes' 8-bit AdamW about 2) and a few small files. The GPT's size comes from
config.json's architecture, counted as coqui builds it (the real XTTS v2: 441 M parameters, 1.76 GB; model.pth, the
whole model with its vocoder, would overstate a small model's GPT many times). An export is model.pth (the
fine-tuned GPT in place; half of it with --half) plus the other base-model files. No torch: the Train page asks on its
GUI thread.
"""

from __future__ import annotations

import json
from typing import Any

from alltalk_gui.core.engine_api.engine import DiskNeeds
from alltalk_gui.core.engines.xtts.layout import OPTIONAL_FILES, REQUIRED_FILES, WEIGHTS_FILE, model_files
from alltalk_gui.core.engines.xtts.memory_estimate import ModelSize, trainable_params

_PERCEIVER_INNER = 8 * 64  # coqui's PerceiverResampler: 8 heads of 64
_PERCEIVER_DEPTH = 2
_PERCEIVER_LATENTS = 32
_SMALL_FILES = 1 << 20  # scheduler, RNG states, train_state.json, train_config.json


def gpt_size(model_args: dict[str, Any]) -> ModelSize:
    """The GPT's parameter counts for config.json's ``model_args`` (within about 1 % of coqui's own count)."""
    width, layers = int(model_args["gpt_n_model_channels"]), int(model_args["gpt_layers"])
    text, audio = int(model_args["gpt_number_text_tokens"]), int(model_args["gpt_num_audio_tokens"])
    positions = int(model_args["gpt_max_audio_tokens"]) + int(model_args["gpt_max_text_tokens"]) + 6
    blocks = layers * (12 * width * width + 13 * width)  # GPT-2: attention 4 w^2, MLP 8 w^2, norms and biases
    embeddings = (text + audio + positions) * width
    heads = (text + 1) * width + (audio + 1) * width + 2 * width + text + audio  # text and mel heads, final norm
    encoder = 24 * width * width + 80 * width  # six attention blocks over the 80-band mel
    perceiver = 0
    if model_args.get("gpt_use_perceiver_resampler", True):
        feed_forward = int(width * 4 * 2 / 3)  # GEGLU
        perceiver = (_PERCEIVER_DEPTH * (4 * _PERCEIVER_INNER * width + 3 * feed_forward * width)
                     + _PERCEIVER_LATENTS * width)
    conditioning = encoder + perceiver
    return ModelSize(gpt_params=blocks + embeddings + heads + conditioning, conditioning_params=conditioning,
                     dvae_params=0, layers=layers, width=width)


def disk_needs(config: Any) -> DiskNeeds | None:
    """One checkpoint and one export of ``config`` (see the module text); None without a usable config.json."""
    files = model_files(config.base_model_dir)
    # An export's model.pth is the base's with the GPT replaced: as big as the base's model.pth. A Trainer folder's
    # save also holds the optimizer's state (3.5 GB for the real GPT), so the base lending it files sizes it.
    weights_file = files.base / WEIGHTS_FILE if files.is_trainer_folder and files.base is not None else files.weights
    try:
        size = gpt_size(json.loads(files.path("config.json").read_text(encoding="utf-8"))["model_args"])
        weights = weights_file.stat().st_size
    except (OSError, ValueError, KeyError, TypeError):
        return None
    moments = 2 if "8bit" in config.optimizer else 8  # bytes of optimizer state per trainable parameter
    checkpoint = size.gpt_params * 4 + trainable_params(config, size) * moments + _SMALL_FILES
    others = sum(f.stat().st_size for f in (files.path(name) for name in (*REQUIRED_FILES, *OPTIONAL_FILES)
                                           if name != WEIGHTS_FILE) if f.is_file())
    return DiskNeeds(checkpoint_bytes=checkpoint, export_bytes=weights + others)
