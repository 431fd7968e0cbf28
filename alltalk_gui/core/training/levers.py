"""The memory levers: the model-side ones (through the engine), 8-bit AdamW, the GPU memory cap, auto sizing's
micro-batch probe, and the out-of-memory retry that halves the micro-batch during a run. The training loop and
``benchmarks/memory_profiles.py`` both use these functions, so the benchmark measures exactly what a profile
does in a real run.

(The other levers - mixed precision, micro-batch and accumulation, clip length - are accelerate and data
settings that the training loop passes on directly.)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.training.config import ConfigError, TrainConfig
from alltalk_gui.core.training.events import Event, MicroBatch, MicroBatchCause

MAX_OOM_SPLIT = 64  # a micro-batch is cut into at most this many chunks after out-of-memory errors


class OutOfMemory(RuntimeError):
    """The GPU ran out of memory even with the smallest micro-batch; the message says what to change."""


def apply_memory_levers(model, config: TrainConfig) -> int:
    """Switch on ``config``'s model-side levers (LoRA, frozen parts, activation checkpointing) in place, as the
    config's engine applies them to its model; returns the number of trainable parameters."""
    return get_engine(config.engine).apply_memory_levers(model, config)


def make_optimizer(gpt, config: TrainConfig):
    """AdamW (torch's fused one, or bitsandbytes' 8-bit) over the trainable parameters, weight decay on weight
    matrices only (coqui's ``optimizer_wd_only_on_weights``).

    Raises:
        ConfigError: an 8-bit optimizer without bitsandbytes installed.
    """
    import torch
    from torch import nn

    no_decay_types = (nn.LayerNorm, nn.GroupNorm, nn.modules.batchnorm._NormBase, nn.Embedding, nn.EmbeddingBag)
    decay, no_decay, seen = [], [], set()
    for module in gpt.modules():
        for name, param in module.named_parameters(recurse=False):
            # A tied matrix (an embedding that is also the output projection) is one parameter of two modules:
            # it goes into the group of the first that names it, once (torch refuses it in two groups).
            if not param.requires_grad or id(param) in seen:
                continue
            seen.add(id(param))
            (no_decay if name.endswith("bias") or isinstance(module, no_decay_types) else decay).append(param)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    kwargs = dict(lr=config.lr, betas=(config.beta1, config.beta2), eps=1e-8)
    if config.optimizer == "adamw":
        # torch's fused AdamW: one kernel for all the parameters' update where the default (foreach) launches a
        # dozen per group; the same update to float rounding. On the H200 the optimizer took 10 % of High's step
        # at 8 x 1, waiting on the host like the rest of it. Fused runs on the CPU too, and takes the GradScaler's
        # scale and inf checks inside its kernel under fp16.
        return torch.optim.AdamW(groups, fused=True, **kwargs)
    try:
        import bitsandbytes as bnb
    except ImportError as exc:
        raise ConfigError(
            f"optimizer={config.optimizer} needs the bitsandbytes package (pip install bitsandbytes), "
            "which is not installed; use optimizer=adamw."
        ) from exc
    cls = bnb.optim.AdamW8bit if config.optimizer == "adamw8bit" else bnb.optim.PagedAdamW8bit
    return cls(groups, **kwargs)


def init_optimizer_state(optimizer) -> None:
    """Give a new optimizer its state (zero moments) without moving a weight, so a checkpoint can be loaded into it.

    accelerate's FSDP (SHARDED_STATE_DICT) load fills only the state entries the optimizer already holds, and a
    new AdamW holds none before its first step. torch's distributed-checkpoint API does the same before it loads
    (zero gradients, learning rate 0, one step); this is its function.
    """
    from torch.distributed.checkpoint.state_dict import _init_optim_state

    _init_optim_state(optimizer)


def optimizer_state_bytes(gpt, config: TrainConfig) -> int:
    """Bytes of optimizer state for ``gpt``'s trainable parameters: two fp32 moments (AdamW) or two 8-bit ones."""
    per_param = 8 if config.optimizer == "adamw" else 2
    return per_param * sum(p.numel() for p in gpt.parameters() if p.requires_grad)


def memory_cap(free: int, total: int, share: float, current_fraction: float = 1.0) -> tuple[int, float]:
    """Auto sizing's cap on this process's CUDA allocator: ``share`` of the memory it may use now, which is what
    the card has free, or less when the process is already capped lower (``current_fraction`` of ``total``, set
    by whoever runs the training: the card rehearsal pretends a smaller card this way). Never raises an existing
    cap. Returns ``(cap in bytes, the fraction of total to set)``."""
    room = min(free, int(current_fraction * total))
    cap = int(share * room)
    return cap, min(current_fraction, cap / total)


def cap_gpu_memory(device, share: float) -> tuple[int, int] | None:
    """Cap this process's CUDA caching allocator at ``share`` of the memory free on ``device`` now (see
    :func:`memory_cap`), so that going over it is an out-of-memory error that the probe and the training loop
    handle. Returns ``(cap, free)`` in bytes, ``free`` being what this process may use; None on a device that is
    not CUDA."""
    import torch

    device = torch.device(device)
    if device.type != "cuda":
        return None
    # The call takes an index: a torch.device("cuda") without one (a one-process accelerator's) is refused.
    index = device.index if device.index is not None else torch.cuda.current_device()
    free, total = torch.cuda.mem_get_info(index)
    current = torch.cuda.get_per_process_memory_fraction(index)
    cap, fraction = memory_cap(free, total, share, current)
    torch.cuda.set_per_process_memory_fraction(fraction, index)
    return cap, min(free, int(current * total))


def forward_backward(model, batch, loss: Callable[..., dict], accelerator, weight: float = 1.0) -> dict:
    """One micro-batch's forward and backward pass, as every training step runs it: the engine's ``loss`` on the
    prepared ``model`` (which applies the run's mixed precision itself) and the batch as the prepared loader gives
    it (on the device), back-propagated through accelerate (loss scaling, accumulation). ``weight`` scales the loss
    (a chunk's share of its micro-batch after an out-of-memory split). Returns the engine's losses."""
    losses = loss(model, batch)
    accelerator.backward(losses["loss"] * weight if weight != 1 else losses["loss"])
    return losses


def probe_micro_batch(model, longest_batch: Callable[[int], Any], loss: Callable[..., dict], config: TrainConfig,
                      accelerator, effective: int) -> int:
    """The largest micro-batch, at most ``effective``, whose forward and backward pass fits (0: not even one).

    Each try is a training step's pass (:func:`forward_backward`) on the prepared ``model``;
    ``longest_batch(size)`` gives a batch of the longest clips as the prepared training loader would (on the
    device). The optimizer's moments only appear at its first step, so each try holds their size in memory too.
    A size that needs accumulation (below ``effective``) is tried as training runs it: two micro-batches, the
    second while the first one's gradients are held, which is every later micro-step's peak (the H200's card
    rehearsal of 2026-11-27 met out-of-memory errors in training after a one-pass probe had chosen such a size).
    Gradients are dropped after each try. No gradients are exchanged between processes: each probes its own card.
    """
    import torch

    moments = optimizer_state_bytes(model, config)

    def fits(size: int) -> None:
        batch = longest_batch(size)
        held = torch.empty(moments, dtype=torch.uint8, device=accelerator.device)
        try:
            with accelerator.no_sync(model):
                for _ in range(1 if size >= effective else 2):
                    forward_backward(model, batch, loss, accelerator)
        finally:
            del held, batch
            model.zero_grad(set_to_none=True)

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


def out_of_memory_advice(profile: str, what: str) -> str:
    """What to change when even ``what`` does not fit: the next lower profile, or shorter clips."""
    lower = {"high": "medium", "medium": "low", "auto": "low"}.get(profile)
    if lower:
        change = f"Choose the {lower.capitalize()} VRAM profile"
    elif profile == "low":
        change = "Close other programs that use the GPU, or lower max_audio_seconds (shorter clips)"
    else:
        change = "Choose the Low VRAM profile (LoRA, 8-bit optimizer, checkpointing)"
    return (f"The GPU ran out of memory with {what}. {change}, and start a new run; "
            "clips of at most 8 s (max_audio_seconds) also need less memory.")


class OutOfMemoryRetry:
    """Forward and backward passes that survive running out of GPU memory.

    It keeps the current optimizer step's micro-batches (its window). When memory runs out, the step's gradients
    so far are dropped and every micro-batch of the window is done again in twice as many chunks, each chunk's
    loss weighted by its share of its micro-batch: the gradient is that of the same effective batch. Gradients
    are synchronised across processes only on the last chunk. When a micro-batch is down to one clip and still
    does not fit, :class:`OutOfMemory` is raised with advice.

    Args:
        model: the prepared (accelerate) model.
        loss: the engine's ``loss(model, batch)``; ``batch_size`` and ``split`` count and cut its batches.
        sums: ``sums(losses, clips)`` turns one pass's losses into the tensor the step adds up.
    """

    def __init__(self, model, accelerator, config: TrainConfig, *, loss: Callable[..., dict],
                 batch_size: Callable[[Any], int], split: Callable[[Any, int], list[Any]],
                 sums: Callable[[dict, int], Any]) -> None:
        self.model = model
        self.accelerator = accelerator
        self.config = config
        self.loss = loss
        self.batch_size = batch_size
        self.split_batch = split
        self.sums = sums
        self.split = 1        # each micro-batch runs as this many chunks, raised after an out-of-memory error
        self.window: list[Any] = []  # this optimizer step's micro-batches, to redo after an out-of-memory error

    @property
    def micro_batch(self) -> int:
        return math.ceil(self.config.batch_size / self.split)

    @property
    def grad_accum(self) -> int:
        return self.config.grad_accum_steps * self.split

    def step_done(self) -> None:
        """The optimizer stepped: the window starts again."""
        self.window.clear()

    def backward(self, batch, step: int) -> Iterator[Event]:
        """Forward and backward pass of ``batch`` (the step's newest micro-batch); returns ``(sums, redone)``:
        with ``redone`` the sums cover the whole window (it was done again after an out-of-memory error).

        Raises:
            OutOfMemory: one clip per micro-batch does not fit either.
        """
        import gc

        import torch
        from accelerate.utils.memory import should_reduce_batch_size

        self.window.append(batch)
        todo, redone = self.window[-1:], False
        while True:
            try:
                return self._in_chunks(todo), redone
            except Exception as exc:  # only out-of-memory errors are handled; the rest are raised again
                if not should_reduce_batch_size(exc):
                    raise
            # Outside the except block the traceback, and the failed pass's tensors it holds, are gone.
            self.model.zero_grad(set_to_none=True)  # a backward that failed half-way may have added gradients
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if self.micro_batch <= 1 or self.split >= MAX_OOM_SPLIT:
                raise OutOfMemory(out_of_memory_advice(self.config.profile, "one clip per micro-batch"))
            self.split *= 2
            effective = self.config.batch_size * self.config.grad_accum_steps * self.accelerator.num_processes
            yield MicroBatch(
                cause=MicroBatchCause.OUT_OF_MEMORY, step=step, micro_batch=self.micro_batch,
                grad_accum=self.grad_accum, effective_batch=effective,
                message=f"Out of GPU memory at step {step}: retrying with micro-batches of {self.micro_batch} "
                        f"clip(s) and {self.grad_accum} accumulated per step (the effective batch is unchanged).",
            )
            todo, redone = self.window, True

    def _in_chunks(self, batches: list[Any]):
        import contextlib

        acc = self.accelerator
        chunks = [(chunk, self.batch_size(chunk) / self.batch_size(batch))
                  for batch in batches
                  for chunk in (self.split_batch(batch, self.split) if self.split > 1 else [batch])]
        total = None
        for i, (chunk, share) in enumerate(chunks):
            last = i == len(chunks) - 1
            with contextlib.nullcontext() if last else acc.no_sync(self.model):
                losses = forward_backward(self.model, chunk, self.loss, acc, weight=share)
            sums = self.sums(losses, self.batch_size(chunk))
            total = sums if total is None else total + sums
        return total
