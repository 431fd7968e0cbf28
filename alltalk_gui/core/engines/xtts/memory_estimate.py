"""Estimate the peak GPU memory of a training run before it starts.

The estimate adds up what a fine-tune of the XTTS v2 GPT keeps on the GPU:

* **weights**: the GPT in fp32 (accelerate keeps fp32 master weights under mixed precision), plus the frozen DVAE
  in fp32, plus, under autocast, the 16-bit copies of the weights it makes during the forward pass;
* **gradients**: fp32, for the trainable parameters only (all of the GPT, the GPT without its conditioning
  encoder and perceiver, or only the LoRA adapters);
* **optimizer state**: AdamW keeps two fp32 moments per trainable parameter (8 bytes), bitsandbytes' 8-bit AdamW
  two 8-bit moments plus block scales (about 2 bytes);
* **activations**: what autograd saves for the backward pass, per clip of the micro-batch, which grows with the
  clip length. The per-block figures come from measurements of the real-size GPT's blocks
  (``resources/profiles/xtts/activation_calibration.json``, written by ``benchmarks/activation_calibration.py``),
  which counts the bytes of every tensor saved for backward, with attention's (sequence x sequence) scores
  counted apart: the CPU saves them, CUDA's fused attention does not.
* **overhead**: the CUDA allocator's fragmentation and cuBLAS workspaces, as a share of the rest plus a constant.

All sizes in GiB. The real architecture's parameter counts are exact (counted from coqui's classes).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.resources import resource_path

GIB = 1024**3


@dataclass(frozen=True)
class ModelSize:
    """Parameter counts of the networks a GPT fine-tune holds in memory."""

    gpt_params: int
    conditioning_params: int  # conditioning encoder + perceiver resampler, which ``freeze_conditioning`` freezes
    dvae_params: int
    layers: int
    width: int


# Counted from coqui-tts 0.28's GPT and DiscreteVAE built with the published XTTS v2 config.
XTTS_V2 = ModelSize(gpt_params=441_018_563, conditioning_params=25_285_632 + 21_014_184,
                    dvae_params=51_567_184, layers=30, width=1024)

# GPT-2 linear layers that LoRA adapts in every block: (inputs, outputs) of c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj.
_LORA_SHAPES = ((1024, 3072), (1024, 1024), (1024, 4096), (4096, 1024))

# Allocator fragmentation and library workspaces: measured runs land within this of the sum of tensors.
FRAGMENTATION = 0.10
CONSTANT_OVERHEAD_GIB = 0.35


@dataclass(frozen=True)
class MemoryEstimate:
    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    overhead_gib: float
    total_gib: float
    trainable_params: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def lora_params(rank: int, model: ModelSize = XTTS_V2) -> int:
    """Trainable parameters of rank-``rank`` LoRA adapters on every GPT-2 block's four linear layers."""
    scale = model.width / 1024
    per_layer = sum(rank * int((i + o) * scale) for i, o in _LORA_SHAPES)
    return per_layer * model.layers


def lora_full_params(model: ModelSize = XTTS_V2) -> int:
    """Parameters trained in full beside the LoRA adapters (``model.LORA_FULLY_TRAINED``): the mel head (width x
    1026 audio tokens + bias) and the final norm (weight and bias)."""
    return model.width * 1026 + 1026 + 2 * model.width


def trainable_params(config: TrainConfig, model: ModelSize = XTTS_V2) -> int:
    if config.lora_rank > 0:
        return lora_params(config.lora_rank, model) + lora_full_params(model)
    if config.freeze_conditioning:
        return model.gpt_params - model.conditioning_params
    return model.gpt_params


@lru_cache(maxsize=1)
def _calibration() -> dict[str, Any]:
    return json.loads(resource_path("profiles", "xtts", "activation_calibration.json").read_text(encoding="utf-8"))


def activation_bytes_per_clip(config: TrainConfig, model: ModelSize = XTTS_V2,
                              attention_scores: bool = False) -> float:
    """Bytes saved for backward for one clip of ``max_audio_seconds`` (every batch is padded to its longest).

    ``attention_scores``: whether attention keeps its (sequence x sequence) scores for backward, as CPU
    attention does; CUDA's fused attention kernels do not, which is the default here.
    """
    fits = _calibration()["per_clip"]["fp32" if config.mixed_precision == "no" else "16bit"]
    clip_s = config.max_audio_seconds

    def at(name: str) -> float:
        return fits[name]["bytes_at_0s"] + fits[name]["bytes_per_s"] * clip_s

    block = at("block") + (at("attention") if attention_scores else 0.0)
    if config.gradient_checkpointing:
        # Each block keeps only its input; one block's activations exist again while it is recomputed.
        blocks = model.layers * at("block_input") + block
    else:
        blocks = model.layers * block
    conditioning = 0.0 if config.freeze_conditioning else fits["conditioning_bytes"]
    return blocks + at("other") + conditioning


def estimate(config: TrainConfig, model: ModelSize = XTTS_V2, attention_scores: bool = False) -> MemoryEstimate:
    """Peak memory (GiB) that ``config`` needs to fine-tune a GPT of ``model``'s size.

    For a CUDA GPU leave ``attention_scores`` False; for the CPU (resident memory) set it True.
    """
    trainable = trainable_params(config, model)
    mixed = config.mixed_precision != "no"
    weights = 4 * model.gpt_params + 4 * model.dvae_params
    if config.lora_rank > 0:
        weights += 4 * lora_params(config.lora_rank, model)  # the adapters themselves
    if mixed:
        weights += 2 * model.gpt_params  # autocast's 16-bit copies, alive during the forward pass
    gradients = 4 * trainable
    optimizer = (2 if config.optimizer in ("adamw8bit", "paged_adamw8bit") else 8) * trainable
    activations = activation_bytes_per_clip(config, model, attention_scores) * config.batch_size
    subtotal = (weights + gradients + optimizer + activations) / GIB
    overhead = FRAGMENTATION * subtotal + CONSTANT_OVERHEAD_GIB
    return MemoryEstimate(
        weights_gib=round(weights / GIB, 3), gradients_gib=round(gradients / GIB, 3),
        optimizer_gib=round(optimizer / GIB, 3), activations_gib=round(activations / GIB, 3),
        overhead_gib=round(overhead, 3), total_gib=round(subtotal + overhead, 3), trainable_params=trainable,
    )
