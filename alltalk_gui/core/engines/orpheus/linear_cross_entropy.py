"""The output projection and cross-entropy of many tokens, a chunk at a time, as one autograd function.

Orpheus's tied 156,940 x 3,072 vocabulary matrix is the embedding and the output projection. Projecting the scored
tokens a chunk at a time, each chunk under activation checkpointing, kept the logits small but gave the matrix one
full-size gradient per chunk, which autograd summed out of place (each chunk's gradient is a transposed view, so
it cannot be added into): three 0.9 GiB bf16 matrices at once in a full fine-tune (counted on the CPU by
``benchmarks/orpheus_embedding_gradient_transient.py``). :class:`LinearCrossEntropy` keeps only the hidden states
in the forward pass and, in the backward pass, recomputes each chunk's logits and adds the chunk's weight gradient
into ONE preallocated matrix in place (``addmm_``), writing the hidden states' gradient a chunk at a time beside
it: at most one chunk of fp32 logits (and their gradient, made from them in place) exists at once, and the loss
makes one weight-sized gradient. Autograd would add the embedding lookup's own dense gradient to it in place (two
matrices at once, not three); with ``shared`` (:mod:`.tied_gradient`) the chunks go straight into the matrix's
``.grad`` (none beside it) or into one buffer the lookup adds just its rows to (under torch.distributed). A frozen
matrix (LoRA) gets no gradient, and none is allocated.

Why in the backward pass and not in the forward (as Liger-kernel's fused linear cross-entropy does, keeping the
gradients and scaling them by the incoming gradient later): that way the weight's gradient would be allocated in
the forward pass and held through the whole decoder's forward and backward; recomputing costs one chunk's matmul
more per chunk, which is what the checkpointed chunks cost too. No library the app depends on has this in plain
torch (Liger's and Apple's cut-cross-entropy are Triton kernels; the CPU has to run it).

Under autocast the projection runs in the autocast type and the logits are then made fp32, as ``lm_head(states)
.float()`` does; the gradients come back in the types of the states and the weight.
"""

from __future__ import annotations

import torch
from torch import nn

from alltalk_gui.core.engines.orpheus.tied_gradient import SharedGradient
from alltalk_gui.core.engines.orpheus.tokens import IGNORE


def linear_cross_entropy(states: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                         chunk: int, shared: SharedGradient | None = None) -> torch.Tensor:
    """Per-token cross-entropy (fp32, ``reduction="none"``, :data:`IGNORE` scores 0) of ``states @ weight.T``
    against ``targets``, computed ``chunk`` tokens at a time; ``states`` is (tokens, hidden), ``weight``
    (vocabulary, hidden). With ``shared``, the weight's gradient goes where it says instead of to autograd: into
    ``.grad``, or to the tied embedding lookup's backward (:mod:`.tied_gradient`)."""
    if states.dim() != 2 or targets.shape != states.shape[:1] or weight.shape[1:] != states.shape[1:]:
        raise ValueError(f"states {tuple(states.shape)}, weight {tuple(weight.shape)} and targets "
                         f"{tuple(targets.shape)} do not fit")
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, not {chunk}")
    device = states.device.type
    compute = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else states.dtype
    return LinearCrossEntropy.apply(states, weight, targets, chunk, compute, shared)


class LinearCrossEntropy(torch.autograd.Function):
    """See the module docstring; call it through :func:`linear_cross_entropy`."""

    @staticmethod
    def forward(ctx, states, weight, targets, chunk, compute, shared):
        with torch.autocast(states.device.type, enabled=False):
            projection = weight.to(compute)
            losses = torch.cat([
                nn.functional.cross_entropy(_logits(states[i:i + chunk], projection, compute),
                                            targets[i:i + chunk], reduction="none", ignore_index=IGNORE)
                for i in range(0, targets.numel(), chunk)])
        ctx.save_for_backward(states, weight, targets)
        ctx.chunk, ctx.compute, ctx.shared = chunk, compute, shared
        return losses

    @staticmethod
    def backward(ctx, grad_losses):
        states, weight, targets = ctx.saved_tensors
        chunk, compute = ctx.chunk, ctx.compute
        want_states, want_weight = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        grad_states = torch.empty_like(states) if want_states else None
        shared = ctx.shared
        if not want_weight:
            grad_weight = None
        elif shared is not None:  # .grad itself, or a buffer the tied lookup's backward returns (.tied_gradient)
            grad_weight = shared.loss_buffer()
        else:
            grad_weight = torch.zeros_like(weight, memory_format=torch.contiguous_format)
        with torch.autocast(states.device.type, enabled=False):
            projection = weight.to(compute)
            for i in range(0, targets.numel(), chunk):
                rows, wanted = states[i:i + chunk], targets[i:i + chunk]
                logits = _logits(rows, projection, compute)
                # d(loss)/d(logits) = (softmax - one_hot) * incoming, made in place from the fp32 logits.
                logits = logits.sub_(logits.amax(dim=1, keepdim=True)).exp_()
                logits.div_(logits.sum(dim=1, keepdim=True))
                scored = wanted != IGNORE
                picked = torch.arange(wanted.numel(), device=wanted.device)[scored]
                logits[picked, wanted[scored]] -= 1.0
                logits.mul_((grad_losses[i:i + chunk] * scored).unsqueeze(1))
                grad_logits = logits.to(compute)  # the projection's own type, as the fp32 logits' cast back gives
                del logits
                if want_states:
                    grad_states[i:i + chunk] = grad_logits @ projection
                if want_weight:
                    inputs = rows.to(compute)
                    if grad_weight.dtype == compute:
                        grad_weight.addmm_(grad_logits.t(), inputs)
                    else:  # fp32 weights under bf16 autocast: the chunk's bf16 values, summed in fp32
                        grad_weight.addmm_(grad_logits.t().to(grad_weight.dtype), inputs.to(grad_weight.dtype))
        if grad_weight is not None and shared is not None:
            shared.loss_done(grad_weight)  # the lookup's backward, last in the pass, adds its rows
            grad_weight = None
        return grad_states, grad_weight, None, None, None, None


def _logits(rows: torch.Tensor, projection: torch.Tensor, compute: torch.dtype) -> torch.Tensor:
    """One chunk's fp32 logits, the matmul in ``compute`` (a fresh tensor, free to change in place)."""
    logits = rows.to(compute) @ projection.t()
    return logits.float() if logits.dtype != torch.float32 else logits
