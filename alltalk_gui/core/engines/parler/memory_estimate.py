"""Estimate the peak GPU memory of a Parler-TTS fine-tune (Mini v1 or Large v1) before it starts.

The same sum as for XTTS and F5-TTS, for what trains here: Parler's decoder, its transcript embedding and (Large)
the projection from T5's width. Flan-T5 and DAC are not in it: they encode the description and the codes once,
before training, and leave the device (:mod:`.training`).

* **weights**: the trainable view in fp32 (accelerate keeps fp32 master weights under mixed precision), plus
  the 16-bit copies autocast makes of them in the forward pass; under LoRA with bf16 the frozen weights are
  stored in bf16 instead (:func:`~.model.store_frozen_in_bf16`) and need no copy;
* **gradients**: fp32, trainable parameters only; **optimizer**: AdamW 8 bytes per trainable parameter,
  8-bit AdamW about 2;
* **activations**: what autograd saves for backward, per clip, in the positions of the longest clip of the
  micro-batch: its transcript tokens (about 4 per second of speech), its DAC frames (86.1 per second) and the 9
  of the delay pattern: a 10 s clip is about 912 positions, a 30 s one 2,713. The coefficients per position
  come from :func:`calibrate`, which counts the bytes of every tensor saved for backward by a real-width decoder
  (Mini's and Large's widths, random weights) of depth 1 and 2 at three lengths, with and without
  checkpointing, under fp32 and bf16 autocast, with a 40-token description (cross-attention keys) and the
  9-codebook loss; stored in ``resources/profiles/parler/activation_calibration.json``. Those were counted with
  fp32 weights, whose hidden states between the layers are fp32; Low (LoRA, the frozen weights stored in bf16)
  passes bf16 ones, so its checkpointed layers' inputs are counted at 2 bytes a value (``bf16_lora``, counted
  the same way with Low's adapters and bf16 frozen weights: 2,048 and 3,072 bytes a position for Mini and Large,
  half the fp32 model's);
* **overhead**: what the CUDA caching allocator reserves above the tensors it holds, with expandable segments (which
  training switches on): the 2 % the other engines use (:data:`~alltalk_gui.core.machine.memory.ALLOCATOR_RESERVE`),
  cuBLAS's workspace, and :data:`RESERVE_GIB`.

With gradient accumulation the earlier micro-batches' gradients are held while the next one saves its
activations; without it, the backward pass frees activations as it makes gradients and the peak holds the larger
(:func:`~alltalk_gui.core.machine.memory.held_at_peak`, as for the other engines).

Measured on an NVIDIA H200 (2026-11-27, ``benchmarks/results/gpu_kit_2026-11-27_h200_run2/
parler_memory_profiles_mini_gpu.json``, Mini, 10 s clips): peak reserved Low 2.35 (8 x 1), Medium 6.10 (4 x 2),
High 13.14 (4 x 2), Auto (High, 8 x 1) 16.63 GiB; reserved was 0.18-0.33 GiB above allocated. Until then the
overhead was the first guess of 10 % plus 0.35 GiB and gradients and activations were always added: 11-33 % above
those peaks (Auto's 8 x 1 counted its 1.7 GiB of gradients beside 10.5 GiB of activations). The kit's third run
(``..._run3/gpu_more_2026-11-27.log``) measured Large v1's Low at 8 x 1: 6.31 GiB, where Low's layer inputs
counted in fp32 gave 7.21 (+14 %; Mini's Low +9.5 %); in bf16 with :data:`RESERVE_GIB`, 6.34 and 2.38 (Mini, 2.35).

Sizes: Mini v1's trainable part is 456 M parameters (24 layers of width 1024); Large v1's decoder depth is not
readable without the Hub, so :data:`SIZES` takes 48 layers of width 1536, the depth at which the parameter
count matches the 9.33 GB (2.33 B parameters at fp32) of its published weights; its estimate is the least certain.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core.machine import activation_fit
from alltalk_gui.core.machine.memory import ALLOCATOR_RESERVE, CUBLAS_WORKSPACE_GIB, held_at_peak

GIB = 1024**3
CALIBRATION_PARTS = ("profiles", "parler", "activation_calibration.json")
TOKENS_PER_SECOND = 4.0          # transcript tokens (Flan-T5's tokenizer) per second of speech, about
FRAMES_PER_SECOND = 44_100 / 512
DESCRIPTION_TOKENS = 40
DECODER_VOCAB = 1_088
# What the CUDA allocator reserved above what it allocated beyond its 2 %: every Parler profile on the H200
# (2026-11-27, Mini, expandable segments) reserved 0.18-0.33 GiB above its allocated peak, where 2 % of Low's
# 2.2 GiB is 0.04.
RESERVE_GIB = 0.15
CODEBOOKS = 9

SIZES: dict[str, dict[str, int]] = {
    "mini": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "ffn_dim": 4096},
    "large": {"hidden_size": 1536, "num_hidden_layers": 48, "num_attention_heads": 24, "ffn_dim": 6144},
}


# Parameters of the trainable view (decoder, prompt embedding, projection), counted on the meta device with
# Parler's own classes (2026-11-26): Mini v1 459,959,296 of 877,842,290 (Flan-T5 large's encoder 341,231,104 and
# DAC 76,651,890 are the rest, which matches the 3.51 GB of its fp32 weights); Large v1 at the assumed depth
# 1,899,694,080 of 2,317,577,074.
TRAINABLE_PARAMETERS = {"mini": 459_959_296, "large": 1_899_694_080}


def trainable_parameters(size: str) -> int:
    return TRAINABLE_PARAMETERS[size]


def lora_parameters(rank: int, size: str | dict[str, int]) -> int:
    """LoRA on self- and cross-attention q/k/v/out (h x h) and fc1/fc2 (h <-> ffn), every layer, of a published size
    or of a decoder config (``hidden_size``, ``ffn_dim``, ``num_hidden_layers``)."""
    s = SIZES[size] if isinstance(size, str) else size
    h, f = s["hidden_size"], s["ffn_dim"]
    return s["num_hidden_layers"] * rank * (8 * (h + h) + 2 * (h + f))


def positions(seconds: float) -> int:
    """Decoder positions of a clip of ``seconds``: transcript tokens + DAC frames + the delay pattern's 9."""
    return int(TOKENS_PER_SECOND * seconds) + 1 + int(seconds * FRAMES_PER_SECOND + 0.999) + CODEBOOKS


@dataclass(frozen=True)
class ParlerSetting:
    """What sets a Parler fine-tune's memory (the fields the profiles fill)."""

    size: str = "mini"
    batch_size: int = 1
    max_clip_seconds: float = 10.0
    mixed_precision: str = "bf16"
    gradient_checkpointing: bool = False
    optimizer: str = "adamw"
    lora_rank: int = 0
    grad_accum_steps: int = 1       # micro-batches per optimizer step (gradients held between them)


@dataclass(frozen=True)
class ParlerMemoryEstimate:
    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    overhead_gib: float
    calibrated: bool
    accumulates: bool = True  # gradients and activations are held together (see the module docstring)

    @property
    def total_gib(self) -> float:
        held = held_at_peak(self.gradients_gib, self.activations_gib, self.accumulates)
        return self.weights_gib + self.optimizer_gib + held + self.overhead_gib

    def as_dict(self) -> dict[str, Any]:
        return dict(asdict(self), total_gib=self.total_gib)


# Shape-derived fallback per position (bf16: about 24 saved tensors of the hidden width and 2 of the
# feed-forward width, 2 bytes each, per layer; fp32 twice that), used until the calibration file exists.
def _fallback(size: str) -> dict[str, Any]:
    h, f = SIZES[size]["hidden_size"], SIZES[size]["ffn_dim"]
    per_layer = 24 * h + 2 * f
    return {"bf16": {"layer": [0.0, 2.0 * per_layer, 0.0], "layer_input": [0.0, 4.0 * h, 0.0],
                     "other": [0.0, 4.0 * CODEBOOKS * DECODER_VOCAB * 3, 0.0]},
            "fp32": {"layer": [0.0, 4.0 * per_layer, 0.0], "layer_input": [0.0, 4.0 * h, 0.0],
                     "other": [0.0, 4.0 * CODEBOOKS * DECODER_VOCAB * 3, 0.0]}}


def load_calibration(size: str, path: Path | None = None) -> tuple[dict[str, Any], bool]:
    """The activation coefficients of decoder ``size`` (measured when the calibration file has them)."""
    measured = activation_fit.read(path, CALIBRATION_PARTS, "per_position")
    if isinstance(measured, dict) and size in measured:
        return measured[size], True
    return _fallback(size), False


def estimate(setting: ParlerSetting, calibration: tuple[dict[str, Any], bool] | None = None) -> ParlerMemoryEstimate:
    """Peak GPU memory of a fine-tune with ``setting`` (GiB, parts and total)."""
    per_position, calibrated = calibration or load_calibration(setting.size)
    half = setting.mixed_precision in ("bf16", "fp16")
    parameters = trainable_parameters(setting.size)
    depth = SIZES[setting.size]["num_hidden_layers"]
    if setting.lora_rank:
        adapters = lora_parameters(setting.lora_rank, setting.size)
        frozen_bytes = 2 if setting.mixed_precision == "bf16" else 4
        weights = parameters * frozen_bytes + adapters * 4 + (parameters * 2 if setting.mixed_precision == "fp16" else 0)
        trainable = adapters
    else:
        weights = parameters * 4 + (parameters * 2 if half else 0)
        trainable = parameters
    gradients = trainable * 4
    optimizer = trainable * (2 if setting.optimizer in ("adamw8bit", "paged_adamw8bit") else 8)
    n = positions(setting.max_clip_seconds)
    coeff = per_position["bf16" if half else "fp32"]
    # LoRA with bf16 stores the frozen weights in bf16, so the hidden states between the layers, which a
    # checkpointed layer keeps, are bf16 (2 bytes a value, counted on the CPU: "bf16_lora"), not the fp32 of the
    # fp32-weight model the other coefficients were counted on.
    inputs = per_position.get("bf16_lora", coeff) if setting.lora_rank and setting.mixed_precision == "bf16" else coeff
    if setting.gradient_checkpointing:
        per_clip = (activation_fit.at(coeff["other"], n) + depth * activation_fit.at(inputs["layer_input"], n)
                    + activation_fit.at(coeff["layer"], n))
    else:
        per_clip = activation_fit.at(coeff["other"], n) + depth * activation_fit.at(coeff["layer"], n)
    activations = setting.batch_size * per_clip
    accumulates = setting.grad_accum_steps > 1
    tensors = (weights + optimizer + held_at_peak(gradients, activations, accumulates)) / GIB
    return ParlerMemoryEstimate(weights / GIB, gradients / GIB, optimizer / GIB, activations / GIB,
                                ALLOCATOR_RESERVE * tensors + CUBLAS_WORKSPACE_GIB + RESERVE_GIB, calibrated,
                                accumulates)


def size_of(parameters: int | None, base_model_dir: str = "") -> str | None:
    """Which published size a trainable parameter count (or a base-model folder) is; None for another size."""
    if parameters is None and base_model_dir:
        try:
            config = json.loads((Path(base_model_dir) / "config.json").read_text(encoding="utf-8"))
            from alltalk_gui.core.engines.parler.files import model_size

            found = model_size(config)
            return found if found in SIZES else None
        except (OSError, ValueError, KeyError, TypeError):
            return None
    if parameters is None:
        return "mini"
    for name in SIZES:
        if abs(parameters - trainable_parameters(name)) <= 0.01 * trainable_parameters(name):
            return name
    return None


def estimate_for_config(config, *, attention_scores: bool = False, parameters: int | None = None):
    """The estimate of a TrainConfig on its base model's size (Mini when unknown); None for another size (the
    tests' tiny model). ``attention_scores`` is not needed: Parler's decoder uses SDPA, which keeps no n^2 scores."""
    size = size_of(parameters, getattr(config, "base_model_dir", "") if parameters is None else "")
    if size is None:
        return None
    return estimate(ParlerSetting(
        size=size, batch_size=config.batch_size, max_clip_seconds=config.max_audio_seconds,
        mixed_precision=config.mixed_precision, gradient_checkpointing=config.gradient_checkpointing,
        optimizer=config.optimizer, lora_rank=config.lora_rank, grad_accum_steps=config.grad_accum_steps))


# -- calibration (engine environment) ------------------------------------------------------------------------------

def saved_tensor_bytes(size: str, tokens: int, depth: int, precision: str, checkpointing: bool, seed: int = 0) -> int:
    """Bytes autograd saves for backward in one training forward (and loss) of a real-width decoder of ``size``
    with ``depth`` layers on one clip of ``tokens`` positions (CPU, random weights, each storage counted once).
    ``precision``: "fp32", "bf16" (fp32 weights under bf16 autocast) or "bf16_lora" (Low's: LoRA adapters, the
    frozen weights stored in bf16, bf16 autocast; a parameter's own storage is not counted, being no new memory)."""
    import torch

    from alltalk_gui.core.engines.parler import data
    from alltalk_gui.core.engines.parler.upstream import causal_lm_class, configs

    _, decoder_config, _ = configs()
    s = SIZES[size]
    torch.manual_seed(seed)
    config = decoder_config(vocab_size=DECODER_VOCAB, num_codebooks=CODEBOOKS, pad_token_id=1024, eos_token_id=1024,
                            bos_token_id=1025, max_position_embeddings=4096,
                            **dict(s, num_hidden_layers=depth), attn_implementation="sdpa")
    decoder = causal_lm_class()(config).train()
    lora = precision == "bf16_lora"
    if lora:  # as the engine's Low: adapters (model.add_lora's targets), the frozen weights in bf16
        from peft import LoraConfig, inject_adapter_in_model

        from alltalk_gui.core.engines.parler.model import LORA_TARGETS, store_frozen_in_bf16

        decoder.requires_grad_(False)
        inject_adapter_in_model(LoraConfig(r=16, lora_alpha=32.0, target_modules=list(LORA_TARGETS)), decoder)
        for name, parameter in decoder.named_parameters():
            parameter.requires_grad_("lora_" in name)
        store_frozen_in_bf16(decoder)
    if checkpointing:
        decoder.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    prompt = int(TOKENS_PER_SECOND * tokens / (TOKENS_PER_SECOND + FRAMES_PER_SECOND))
    labels = data.labels_from_codes(torch.randint(0, 1024, (CODEBOOKS, tokens - prompt - CODEBOOKS)))[None]
    from parler_tts.modeling_parler_tts import shift_tokens_right

    inputs = shift_tokens_right(labels, 1024, 1025).transpose(1, 2)
    states = torch.bfloat16 if lora else torch.float32  # the frozen prompt embedding's and projection's output
    prompt_states = torch.randn(1, prompt, s["hidden_size"], dtype=states, requires_grad=not lora)
    description = torch.randn(1, DESCRIPTION_TOKENS, s["hidden_size"], dtype=states)
    parameters = {p.untyped_storage().data_ptr() for p in decoder.parameters()} if lora else set()
    seen: dict[tuple[int, int], int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in parameters:
            seen[(storage.data_ptr(), storage.nbytes())] = storage.nbytes()
        return tensor

    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision != "fp32")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast:
        out = decoder(input_ids=inputs, encoder_hidden_states=description, prompt_hidden_states=prompt_states,
                      labels=labels, loss_reduction="sum")
    del out
    return sum(seen.values())


def calibrate(size: str, lengths: tuple[int, ...] = (128, 256, 512),
              precisions: tuple[str, ...] = ("fp32", "bf16")) -> dict[str, Any]:
    """Per-position coefficients (a + b*n + c*n^2) of one layer (``layer``: depth 2 minus depth 1), of a
    checkpointed layer (``layer_input``) and of everything else (``other``: embeddings, the 9 heads, the loss), for
    each of ``precisions``; "bf16_lora" (:func:`saved_tensor_bytes`) measures ``layer_input`` alone (see
    :func:`estimate`)."""
    result: dict[str, Any] = {}
    for precision in precisions:
        series: dict[str, list[float]] = {"layer_input": []} if precision == "bf16_lora" else {
            "layer": [], "layer_input": [], "other": []}
        for n in lengths:
            if "layer" in series:
                one = saved_tensor_bytes(size, n, 1, precision, False)
                two = saved_tensor_bytes(size, n, 2, precision, False)
                series["layer"].append(two - one)
                series["other"].append(one - (two - one))
            series["layer_input"].append(saved_tensor_bytes(size, n, 2, precision, True)
                                         - saved_tensor_bytes(size, n, 1, precision, True))
        result[precision] = activation_fit.fit(lengths, series)
    return result


def write_calibration(path: Path) -> dict[str, Any]:
    """Run :func:`calibrate` for both sizes and write the calibration file (atomically)."""
    return activation_fit.write(path, {
        "device": "cpu (saved-tensor bytes are device-independent; SDPA saves no n^2 scores)",
        "model": "Parler-TTS decoder at Mini v1 and Large v1 widths (see SIZES), random weights, depth 1 and 2, "
                 f"{DESCRIPTION_TOKENS}-token description, 9-codebook loss",
        "lengths_positions": [128, 256, 512],
        "written_by": "python -m alltalk_gui.core.engines.parler.memory_estimate PATH (engine environment)",
    }, "per_position", lambda: {size: calibrate(size) for size in SIZES})


if __name__ == "__main__":  # python -m alltalk_gui.core.engines.parler.memory_estimate resources/profiles/parler/activation_calibration.json
    import sys

    write_calibration(Path(sys.argv[1]))
