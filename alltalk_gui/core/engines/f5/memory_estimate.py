"""Estimate the peak memory of an F5-TTS v1 Base fine-tune before it starts: the GPU's (what the CUDA caching
allocator reserves) or, on the CPU, the process's resident memory.

The same sum as for XTTS (:mod:`alltalk_gui.core.engines.xtts.memory_estimate`, which explains each term), for
CFM+DiT:

* **weights**: all 337 M parameters in fp32 (accelerate keeps fp32 master weights under mixed precision), the
  LoRA adapters, and under bf16/fp16 autocast the 16-bit copies of the trainable weights (autocast caches those;
  frozen weights are cast at each use and freed, unless LoRA runs without checkpointing, whose blocks keep them
  for backward); another fp32 copy when the EMA is kept (off by default, see :mod:`.model`);
* **gradients**: fp32, trainable parameters only (all of them, or the LoRA adapters: 5.0 M at rank 16);
* **optimizer**: AdamW 8 bytes per trainable parameter, 8-bit AdamW about 2;
* **activations**: what autograd saves for backward, per clip, linear (and for attention possibly quadratic)
  in the mel frames of the longest clip in the micro-batch (the batch is padded to it): 30 s = 2,813 frames.
  The coefficients come from :func:`calibrate`, which counts the bytes of every tensor saved for backward by
  a real-width DiT (dim 1024, 16 heads, ff x2, text_dim 512, random weights) at three lengths, with and
  without checkpointing, in fp32 and under bf16 autocast with CUDA's rules (layer norms in fp32, one-byte dropout
  masks: :mod:`alltalk_gui.core.machine.cuda_autocast`), as a card runs it. Stored in
  ``resources/profiles/f5/activation_calibration.json``; until that file exists the estimate uses the fallback
  coefficients below (derived from the block's tensor shapes, not measured).
* **overhead**: on a GPU the caching allocator's rounding (2 %, as XTTS's: measured 0.9-2.9 % for F5 with
  expandable segments) and cuBLAS's workspace; on the CPU the process before any model (0.82 GiB measured).

With gradient accumulation the earlier micro-batches' gradients are held while the next one saves its
activations; without it, backward frees activations as it makes gradients and the peak holds the larger.

Measured on an H100 at 30 s clips (2026-11-26, ``benchmarks/results/f5_memory_profiles_2026-11-26_gpu.json``): peak
reserved Low 1.78, Medium 4.69, High 12.30, Auto (High, micro-batch 8) 29.94 GiB; on an H200 (2026-11-27,
``benchmarks/results/gpu_kit_2026-11-27_h200_run2/``) Low at 4 x 2 2.75 and High 12.30 GiB. Each is held between
2 % under and 10 % over its peak (tests/benchmarks/test_estimates_match_the_h100.py), but Low at 4 x 2, 24 % over:
LoRA's checkpointed clips cost the card 0.32 GiB each, the estimate 0.50. Counted on the CPU, under LoRA the parts
outside the blocks (embeddings, output) keep nothing a frame (no weight of theirs trains, their inputs need no
gradient), where the estimate counts the whole model's 0.25 GiB a 30 s clip; leaving those out puts the estimate
9-13 % under every Low peak, so the card holds about 0.08 GiB a clip more than the layers' inputs and one
recomputed block (the block's backward, not counted yet) and the whole model's figure stands in for it. On the CPU (2026-11-26, 5 s clips, fp32, no
accumulation) peak resident memory with ``MALLOC_MMAP_THRESHOLD_=65536`` was within 0.2 GiB of this sum; with
glibc's defaults it is 1.8-4 GiB higher, buffers glibc keeps after the step (see docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from alltalk_gui.core.engines.f5.data import frames
from alltalk_gui.core.machine import activation_fit
from alltalk_gui.core.machine.memory import ALLOCATOR_RESERVE, CPU_PROCESS_GIB, CUBLAS_WORKSPACE_GIB, held_at_peak

GIB = 1024**3
V1_BASE_PARAMETERS = 337_096_836  # counted: expected_state_shapes(V1_BASE_ARCH, 2545) (CFM + DiT, 2,545 tokens;
# the state includes a 32-value rotary buffer: 337,096,804 trainable parameters)
V1_BASE_DEPTH = 22
CALIBRATION_PARTS = ("profiles", "f5", "activation_calibration.json")  # under resources/ (see core/resources.py)

# Bytes per frame of one clip (shape-derived fallback for bf16: ~20 saved tensors of width 1024 at 2 bytes per
# block; with checkpointing only the fp32 block input, 4 KiB per frame, is kept).
_FALLBACK = {
    "bf16": {"block": [0.0, 40960.0, 0.0], "block_input": [0.0, 4096.0, 0.0], "other": [0.0, 20480.0, 0.0]},
    "fp32": {"block": [0.0, 81920.0, 0.0], "block_input": [0.0, 4096.0, 0.0], "other": [0.0, 40960.0, 0.0]},
}


def lora_parameters(rank: int, dim: int = 1024, ff_mult: int = 2, depth: int = V1_BASE_DEPTH) -> int:
    """Trainable parameters of LoRA on q/k/v/out (dim x dim) and the feed-forward (dim <-> dim*ff_mult)."""
    inner = dim * ff_mult
    return depth * rank * (4 * (dim + dim) + (dim + inner) + (inner + dim))


@dataclass(frozen=True)
class F5Setting:
    """What sets an F5 fine-tune's memory (the fields the profiles fill)."""

    batch_size: int = 1
    max_clip_seconds: float = 30.0
    mixed_precision: str = "bf16"   # "no", "bf16" or "fp16"
    gradient_checkpointing: bool = False
    optimizer: str = "adamw"        # "adamw" or "adamw8bit"
    lora_rank: int = 0              # 0: full fine-tune
    ema: bool = False
    grad_accum_steps: int = 1       # micro-batches per optimizer step (gradients held between them)
    cpu: bool = False               # the CPU's resident memory instead of the GPU's reserved memory


@dataclass(frozen=True)
class F5MemoryEstimate:
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


def load_calibration(path: Path | None = None) -> tuple[dict[str, Any], bool]:
    """The activation coefficients (measured when the calibration file exists)."""
    measured = activation_fit.read(path, CALIBRATION_PARTS, "per_frame")
    return (measured, True) if measured is not None else (_FALLBACK, False)


def estimate(setting: F5Setting, parameters: int = V1_BASE_PARAMETERS, depth: int = V1_BASE_DEPTH,
             calibration: tuple[dict[str, Any], bool] | None = None) -> F5MemoryEstimate:
    """Peak memory of a fine-tune with ``setting`` (GiB, parts and total): the GPU's, or the CPU's with
    ``setting.cpu``."""
    per_frame, calibrated = calibration or load_calibration()
    half = setting.mixed_precision in ("bf16", "fp16")
    adapters = lora_parameters(setting.lora_rank, depth=depth) if setting.lora_rank else 0
    trainable = adapters or parameters
    cast = 0
    if half:  # autocast's 16-bit copies: the trainable weights, and LoRA's frozen ones without checkpointing
        cast = parameters + adapters if setting.lora_rank and not setting.gradient_checkpointing else trainable
    weights = parameters * 4 + adapters * 4 + cast * 2 + (parameters * 4 if setting.ema else 0)
    gradients = trainable * 4
    optimizer = trainable * (2 if setting.optimizer == "adamw8bit" and not setting.lora_rank else 8)
    n = frames(setting.max_clip_seconds)
    coeff = per_frame["bf16" if half else "fp32"]
    if setting.gradient_checkpointing:
        per_clip = activation_fit.at(coeff["other"], n) + depth * activation_fit.at(coeff["block_input"], n) + activation_fit.at(coeff["block"], n)
    else:
        per_clip = activation_fit.at(coeff["other"], n) + depth * activation_fit.at(coeff["block"], n)
    activations = setting.batch_size * per_clip
    accumulates = setting.grad_accum_steps > 1
    tensors = (weights + optimizer + held_at_peak(gradients, activations, accumulates)) / GIB
    overhead = CPU_PROCESS_GIB if setting.cpu else ALLOCATOR_RESERVE * tensors + CUBLAS_WORKSPACE_GIB
    return F5MemoryEstimate(weights / GIB, gradients / GIB, optimizer / GIB, activations / GIB, overhead,
                            calibrated, accumulates)


def saved_tensor_bytes(frames_: int, depth: int, precision: str, checkpointing: bool, seed: int = 0) -> int:
    """Bytes autograd saves for backward in one training forward of a real-width DiT with ``depth`` blocks on
    one clip of ``frames_`` frames (CPU, random weights; each storage counted once; bf16 under CUDA's autocast
    rules)."""
    import contextlib

    import torch

    from alltalk_gui.core.machine.cuda_autocast import cuda_autocast_rules

    from alltalk_gui.core.engines.f5.files import V1_BASE_ARCH
    from alltalk_gui.core.engines.f5.upstream import dit_class

    torch.manual_seed(seed)
    arch = dict(V1_BASE_ARCH, depth=depth, checkpoint_activations=checkpointing)
    dit = dit_class()(**arch, text_num_embeds=2545, mel_dim=100)
    seen: dict[tuple[int, int], int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        seen[(storage.data_ptr(), storage.nbytes())] = storage.nbytes()
        return tensor

    x = torch.randn(1, frames_, 100)
    text = torch.randint(0, 2545, (1, frames_ // 3))
    half = precision == "bf16"
    # 16-bit training runs on CUDA cards: counted under CUDA's autocast rules (see machine/cuda_autocast.py).
    rules = cuda_autocast_rules() if half else contextlib.nullcontext()
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=half)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast, rules:
        out = dit(x=x, cond=x, text=text, time=torch.rand(1))
    del out
    return sum(seen.values())


def calibrate(lengths: tuple[int, ...] = (128, 256, 512)) -> dict[str, Any]:
    """Measure the per-frame coefficients (``per_frame`` of the calibration file) on the CPU.

    ``block``: one DiT block's saved bytes (depth 2 minus depth 1, no checkpointing); ``block_input``: what a
    checkpointed block keeps (depth 2 minus depth 1, checkpointing); ``other``: everything outside the blocks
    (text embedding with its ConvNeXt, input embedding, output). Each fitted as a + b*n + c*n^2 through the
    three lengths. The constant term (the weights autograd saves, ~58 MB per fp32 block) is kept in the file
    for reference; :func:`estimate` counts weights separately and uses only the per-frame terms.
    """
    result: dict[str, Any] = {}
    for precision in ("fp32", "bf16"):
        series: dict[str, list[float]] = {"block": [], "block_input": [], "other": []}
        for n in lengths:
            one = saved_tensor_bytes(n, 1, precision, False)
            two = saved_tensor_bytes(n, 2, precision, False)
            series["block"].append(two - one)
            series["other"].append(one - (two - one))
            series["block_input"].append(saved_tensor_bytes(n, 2, precision, True)
                                         - saved_tensor_bytes(n, 1, precision, True))
        result[precision] = activation_fit.fit(lengths, series)
    return result


def write_calibration(path: Path) -> dict[str, Any]:
    """Run :func:`calibrate` and write the calibration file (atomically); returns what was written."""
    return activation_fit.write(path, {
        "device": "cpu (saved-tensor bytes are device-independent; CPU sdpa saves no n^2 scores; bf16 counted under "
                  "CUDA's autocast rules)",
        "model": "F5TTS_v1_Base width (dim 1024, heads 16, dim_head 64, ff_mult 2, text_dim 512, conv_layers 4), "
                 "random weights, depth 1 and 2",
        "lengths_frames": [128, 256, 512],
        "written_by": "python -m alltalk_gui.core.engines.f5.memory_estimate PATH",
    }, "per_frame", calibrate)


if __name__ == "__main__":  # python -m alltalk_gui.core.engines.f5.memory_estimate resources/profiles/f5/activation_calibration.json
    import sys

    write_calibration(Path(sys.argv[1]))
