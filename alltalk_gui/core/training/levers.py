"""The memory levers that act on the model and optimiser: LoRA, frozen conditioning, activation checkpointing,
8-bit AdamW, and auto sizing's micro-batch probe. The training loop and ``benchmarks/memory_profiles.py`` both
use these functions, so the benchmark measures exactly what a profile does in a real run.

(The other levers - mixed precision, micro-batch and accumulation, clip length - are accelerate and data
settings that :class:`alltalk_gui.core.training.loop.TrainingRun` passes on directly.)
"""

from __future__ import annotations

from typing import Callable

from alltalk_gui.core.training.config import ConfigError, TrainConfig


def apply_memory_levers(gpt, config: TrainConfig) -> int:
    """Switch on ``config``'s model-side levers in place; returns the number of trainable parameters."""
    from alltalk_gui.core.engines.xtts.model import add_lora_adapters, enable_activation_checkpointing

    if config.lora_rank:
        # Only the adapters (and the mel head and final norm) train: no gradients or optimizer state for the
        # other 440 M base weights.
        add_lora_adapters(gpt, config.lora_rank, config.lora_alpha, config.lora_dropout)
    elif config.freeze_conditioning:
        # No gradients, optimizer state or saved activations for the voice-prompt front end: autograd keeps
        # nothing for modules whose parameters and inputs need no gradient.
        for module in (gpt.conditioning_encoder, getattr(gpt, "conditioning_perceiver", None)):
            if module is not None:
                module.requires_grad_(False)
    if config.gradient_checkpointing:
        enable_activation_checkpointing(gpt)
    return sum(p.numel() for p in gpt.parameters() if p.requires_grad)


def make_optimizer(gpt, config: TrainConfig):
    """AdamW (torch or bitsandbytes 8-bit) over the trainable parameters, weight decay on weight matrices only
    (coqui's ``optimizer_wd_only_on_weights``).

    Raises:
        ConfigError: an 8-bit optimizer without bitsandbytes installed.
    """
    import torch
    from torch import nn

    no_decay_types = (nn.LayerNorm, nn.GroupNorm, nn.modules.batchnorm._NormBase, nn.Embedding, nn.EmbeddingBag)
    decay, no_decay = [], []
    for module in gpt.modules():
        for name, param in module.named_parameters(recurse=False):
            if not param.requires_grad:
                continue
            (no_decay if name.endswith("bias") or isinstance(module, no_decay_types) else decay).append(param)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    kwargs = dict(lr=config.lr, betas=(config.beta1, config.beta2), eps=1e-8)
    if config.optimizer == "adamw":
        return torch.optim.AdamW(groups, **kwargs)
    try:
        import bitsandbytes as bnb
    except ImportError as exc:
        raise ConfigError(
            f"optimizer={config.optimizer} needs the bitsandbytes package (pip install bitsandbytes), "
            "which is not installed; use optimizer=adamw."
        ) from exc
    cls = bnb.optim.AdamW8bit if config.optimizer == "adamw8bit" else bnb.optim.PagedAdamW8bit
    return cls(groups, **kwargs)


def optimizer_state_bytes(gpt, config: TrainConfig) -> int:
    """Bytes of optimizer state for ``gpt``'s trainable parameters: two fp32 moments (AdamW) or two 8-bit ones."""
    per_param = 8 if config.optimizer == "adamw" else 2
    return per_param * sum(p.numel() for p in gpt.parameters() if p.requires_grad)


def cap_gpu_memory(device, share: float) -> tuple[int, int] | None:
    """Cap this process's CUDA caching allocator at ``share`` of the memory free on ``device`` now, so that going
    over it is an out-of-memory error that the probe and the training loop handle. Returns ``(cap, free)`` in
    bytes; None on a device that is not CUDA."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return None
    # The call takes an index: a torch.device("cuda") without one (a one-process accelerator's) is refused.
    index = device.index if device.index is not None else torch.cuda.current_device()
    free, total = torch.cuda.mem_get_info(index)
    torch.cuda.set_per_process_memory_fraction(min(1.0, share * free / total), index)
    return int(share * free), free


def probe_micro_batch(gpt, make_batch: Callable[[int], dict], features, loss_weights, config: TrainConfig,
                      accelerator, effective: int) -> int:
    """The largest micro-batch, at most ``effective``, whose forward and backward pass fits (0: not even one).

    ``make_batch(size)`` gives a raw batch of the longest clips. The optimizer's moments only appear at its first
    step, so each try holds their size in memory too; gradients are dropped after each try.
    """
    import torch

    from alltalk_gui.core.engines.xtts.model import gpt_loss

    moments = optimizer_state_bytes(gpt, config)

    def fits(size: int) -> None:
        batch = make_batch(size)
        held = torch.empty(moments, dtype=torch.uint8, device=accelerator.device)
        try:
            with accelerator.autocast():
                loss = gpt_loss(gpt, features(batch), loss_weights)["loss"]
            loss.backward()
        finally:
            del held
            gpt.zero_grad(set_to_none=True)

    return largest_micro_batch(fits, effective)


def largest_micro_batch(fits: Callable[[int], None], effective: int) -> int:
    """The largest micro-batch, from ``effective`` down by halves, for which ``fits(size)`` (one forward and
    backward pass on the longest clips) runs without an out-of-memory error: accelerate's
    ``find_executable_batch_size``, which frees memory between tries.

    Returns 0 when not even one clip fits.
    """
    from accelerate.utils import find_executable_batch_size

    @find_executable_batch_size(starting_batch_size=effective)
    def probe(size: int) -> int:
        fits(size)
        return size

    try:
        return probe()
    except RuntimeError as exc:
        if "No executable batch size found" not in str(exc):
            raise
        return 0
