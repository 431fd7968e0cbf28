"""Estimate the peak memory of a training run before it starts: the GPU's (what the CUDA caching allocator
reserves) or, on the CPU, the process's resident memory.

The estimate adds up what a fine-tune of the XTTS v2 GPT keeps:

* **weights**: the GPT in fp32 (accelerate keeps fp32 master weights under mixed precision) and the LoRA adapters
  (the frozen DVAE runs once per clip before training and is freed: :mod:`.front_end`); under autocast also the 16-bit copies of the *trainable* weights: autocast caches the
  cast of a weight that requires grad for the whole forward pass (and its matrix products keep it for backward),
  while a frozen weight is cast again at each use and freed. So LoRA with checkpointing (Low) holds copies of its
  adapters only, not of the 441 M frozen base weights, but for the block being recomputed, whose matrix products
  keep their casts until its backward is done (one block's, 24 MB); LoRA without checkpointing keeps every block's
  cast weights for backward, a full copy again;
* **gradients**: fp32, for the trainable parameters only (all of the GPT, the GPT without its conditioning
  encoder and perceiver, or only the LoRA adapters);
* **optimizer state**: AdamW keeps two fp32 moments per trainable parameter (8 bytes), bitsandbytes' 8-bit AdamW
  two 8-bit moments plus block scales (about 2 bytes);
* **activations**: what autograd saves for the backward pass, per clip of the micro-batch, which grows with the
  clip length. The per-block figures come from measurements of the real-size GPT's blocks
  (``resources/profiles/xtts/activation_calibration.json``, written by ``benchmarks/activation_calibration.py``) of
  the GPT as training runs it (:mod:`.streamline`: half the saved tensors of coqui's own, whose figures it also keeps),
  which counts the bytes of every tensor saved for backward, with attention's (sequence x sequence) scores
  counted apart (the CPU saves them, CUDA's fused attention does not); the 16-bit figures under CUDA's autocast
  rules and with what its dropout and fused attention kernels keep (layer norms and softmax in fp32, one-byte
  dropout masks, 16-bit q, k and v: :mod:`alltalk_gui.core.machine.cuda_autocast`), as a card runs them. A
  checkpointed block keeps its input, the fp32 hidden states of GPT-2's residual stream (under autocast too);
* **overhead**: on a GPU, the caching allocator's rounding (with expandable segments, which training switches on,
  reserved memory was 0.6-1.7 % above allocated on the H100) and cuBLAS's workspace (32 MiB on Hopper); on the CPU, the process itself (Python, torch and
  coqui before any model: 0.7-0.8 GiB measured).

Gradients and activations overlap in time differently with and without gradient accumulation: with it, the
gradients of the step's earlier micro-batches are held while the next one saves its activations (both count);
without it, the backward pass frees activations as it makes gradients, so the peak holds the larger of the two.

Measured on an H100 at 11 s clips (2026-11-26, ``benchmarks/results/memory_profiles_2026-11-26_gpu.json``): peak
reserved Low 2.19, Medium 4.99, High 10.15, Auto (High, micro-batch 8) 15.99 GiB; on an H200 with the front end
cached and the GPT streamlined (2026-11-27, ``benchmarks/results/gpu_kit_2026-11-27_h200_run2/``) Low 2.53 and
High 9.93 GiB, both at 8 x 1. Every committed GPU case is held between 2 % under and 10 % over its peak
(tests/benchmarks/test_estimates_match_the_h100.py). CPU figures are resident memory without what glibc's
allocator keeps of freed buffers, which can add a few GiB unless ``MALLOC_MMAP_THRESHOLD_`` is set (see
docs/benchmarks.md).

All sizes in GiB. The real architecture's parameter counts are exact (counted from coqui's classes).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from alltalk_gui.core.machine.memory import ALLOCATOR_RESERVE, CPU_PROCESS_GIB, CUBLAS_WORKSPACE_GIB, held_at_peak
from alltalk_gui.core.resources import resource_path
from alltalk_gui.core.training.config import TrainConfig

GIB = 1024**3


@dataclass(frozen=True)
class ModelSize:
    """Parameter counts of the networks a GPT fine-tune holds in memory."""

    gpt_params: int
    conditioning_params: int  # conditioning encoder + perceiver resampler, which ``freeze_conditioning`` freezes
    dvae_params: int          # not on the card while training (since the front end is cached per clip)
    layers: int
    width: int


# Counted from coqui-tts 0.28's GPT and DiscreteVAE built with the published XTTS v2 config.
XTTS_V2 = ModelSize(gpt_params=441_018_563, conditioning_params=25_285_632 + 21_014_184,
                    dvae_params=51_567_184, layers=30, width=1024)

# GPT-2 linear layers that LoRA adapts in every block: (inputs, outputs) of c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj.
_LORA_SHAPES = ((1024, 3072), (1024, 1024), (1024, 4096), (4096, 1024))



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
    if config.engine_options().freeze_conditioning:
        return model.gpt_params - model.conditioning_params
    return model.gpt_params


@lru_cache(maxsize=1)
def _calibration() -> dict[str, Any]:
    return json.loads(resource_path("profiles", "xtts", "activation_calibration.json").read_text(encoding="utf-8"))


def activation_bytes_per_clip(config: TrainConfig, model: ModelSize = XTTS_V2,
                              attention_scores: bool = False, streamlined: bool = True) -> float:
    """Bytes saved for backward for one clip of ``max_audio_seconds`` (every batch is padded to its longest).

    ``attention_scores``: whether attention keeps its (sequence x sequence) scores for backward, as CPU
    attention does; CUDA's fused attention kernels do not, which is the default here.
    ``streamlined``: the GPT as our training runs it (:mod:`.streamline`), or as coqui's own trainer does (AllTalk's
    settings), whose GELU and conditioning attention keep about twice as much under autocast.
    """
    fits = _calibration()["per_clip"]["fp32" if config.mixed_precision == "no" else "16bit"]
    if not streamlined:
        fits = {**fits, **fits["coqui"]}
    clip_s = config.max_audio_seconds

    def at(name: str) -> float:
        return fits[name]["bytes_at_0s"] + fits[name]["bytes_per_s"] * clip_s

    block = at("block") + (at("attention") if attention_scores else 0.0)
    if config.gradient_checkpointing:
        # Each block keeps only its input; one block's activations exist again while it is recomputed.
        blocks = model.layers * at("block_input") + block
    else:
        blocks = model.layers * block
    conditioning = 0.0 if config.engine_options().freeze_conditioning else fits["conditioning_bytes"]
    return blocks + at("other") + conditioning


def block_matrix_params(model: ModelSize = XTTS_V2) -> int:
    """Weights and biases of one GPT-2 block's four linear layers (c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj)."""
    w = model.width
    return 12 * w * w + 9 * w


def cast_params(config: TrainConfig, model: ModelSize = XTTS_V2) -> int:
    """Parameters whose 16-bit copies autocast keeps through a training step (none without mixed precision): the
    trainable ones, whose casts autocast caches; with LoRA and no checkpointing also the frozen base weights,
    whose per-use casts every block's matrix products keep for backward; with LoRA and checkpointing one block's
    frozen weights, cast again while that block is recomputed and kept until its backward is done."""
    if config.mixed_precision == "no":
        return 0
    if config.lora_rank > 0 and not config.gradient_checkpointing:
        return model.gpt_params + lora_params(config.lora_rank, model)
    if config.lora_rank > 0:
        return trainable_params(config, model) + block_matrix_params(model)
    return trainable_params(config, model)


def estimate(config: TrainConfig, model: ModelSize = XTTS_V2, attention_scores: bool = False,
             streamlined: bool = True) -> MemoryEstimate:
    """Peak memory (GiB) that ``config`` needs to fine-tune a GPT of ``model``'s size.

    For a CUDA GPU (peak reserved memory) leave ``attention_scores`` False; for the CPU (peak resident memory)
    set it True: CPU attention keeps its scores, and the process's own memory is counted. ``streamlined``: see
    :func:`activation_bytes_per_clip` (False for coqui's own trainer).
    """
    trainable = trainable_params(config, model)
    weights = 4 * model.gpt_params + 2 * cast_params(config, model)
    if config.lora_rank > 0:
        weights += 4 * lora_params(config.lora_rank, model)  # the adapters themselves
    gradients = 4 * trainable
    optimizer = (2 if config.optimizer in ("adamw8bit", "paged_adamw8bit") else 8) * trainable
    activations = activation_bytes_per_clip(config, model, attention_scores, streamlined) * config.batch_size
    tensors = (weights + optimizer + held_at_peak(gradients, activations, config.grad_accum_steps > 1)) / GIB
    overhead = CPU_PROCESS_GIB if attention_scores else ALLOCATOR_RESERVE * tensors + CUBLAS_WORKSPACE_GIB
    return MemoryEstimate(
        weights_gib=round(weights / GIB, 3), gradients_gib=round(gradients / GIB, 3),
        optimizer_gib=round(optimizer / GIB, 3), activations_gib=round(activations / GIB, 3),
        overhead_gib=round(overhead, 3), total_gib=round(tensors + overhead, 3), trainable_params=trainable,
    )
