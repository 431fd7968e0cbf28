"""CUDA's autocast rules on the CPU: for measuring, on a machine without a GPU, what a 16-bit training step on a
CUDA card keeps for its backward pass.

Autocast does not cast the same operations on every device. Under CUDA's autocast, normalisations, reductions,
losses and the exponential/power family run in fp32 and return fp32 (PyTorch's "CUDA ops that can autocast to
float32": ``layer_norm``, ``group_norm``, ``softmax``, ``sum``, ``exp``, ``pow``, ``mse_loss``, ...); CPU autocast
leaves most of them in the input's 16-bit type. So on a card the tensors after every layer norm are fp32 and the
elementwise operations that follow (AdaLN's scale and shift, the residual gates) save fp32 copies for backward
where the CPU saves bf16 ones: on the H100 (2026-11-26) the activations of bf16 steps without checkpointing were
1.20 (XTTS v2) and 1.25 (F5-TTS) times what a CPU count under CPU autocast gave.

:class:`CudaAutocastRules` is a ``TorchFunctionMode`` that applies CUDA's fp32 rule to those operations while CPU
autocast is on: their 16-bit inputs are cast to fp32 and they run with autocast off, as CUDA's autocast runs them.
The matrix products stay 16-bit, as on both devices. The memory estimates' 16-bit activation coefficients are
counted under it (``benchmarks/activation_calibration.py`` for XTTS, ``engines/f5/memory_estimate.calibrate``).

Two of CUDA's kernels keep less for backward than the CPU's, and the mode runs them as a card does, too:

* **dropout**: on a card ``F.dropout`` is ``native_dropout``, which keeps a one-byte mask; the CPU's multiplies by
  a noise tensor of the input's type and keeps that (two or four bytes an element);
* **attention**: CUDA's autocast runs ``scaled_dot_product_attention`` in 16 bits, and its fused kernels (flash,
  or memory-efficient with a mask or dropout) keep q, k, v, the output and an fp32 log-sum-exp per row, drawing
  their dropout again from the generator's state; the CPU's unfused maths (what it runs with dropout) upcasts
  16-bit inputs and keeps fp32 copies of q, k and v beside the scores. :class:`FusedAttention` keeps what the card's
  kernels keep and recomputes the rest in backward (same dropout, same gradients).

On the NVIDIA H200 (2026-11-27, streamlined XTTS GPT, High at 8 x 1) the CPU's way counted 1.0 GiB (24 %) more
activations than the card held, about 2.3 MB a block for each clip of 11 s.
"""

from __future__ import annotations

from typing import Any


def _fp32_functions() -> frozenset:
    """The operations CUDA's autocast runs in fp32 (PyTorch's AMP documentation, "CUDA Ops that can autocast to
    float32"), as the Python functions and tensor methods that reach them."""
    import torch
    import torch.nn.functional as F

    T = torch.Tensor
    return frozenset({
        F.layer_norm, torch.layer_norm, F.group_norm, torch.group_norm, F.normalize, torch.norm, T.norm,
        F.softmax, torch.softmax, T.softmax, F.log_softmax, torch.log_softmax, T.log_softmax, F.softmin,
        torch.sum, T.sum, torch.prod, T.prod, torch.cumsum, T.cumsum, torch.cumprod, T.cumprod,
        torch.exp, T.exp, torch.expm1, T.expm1, torch.log, T.log, torch.log2, T.log2, torch.log10, T.log10,
        torch.log1p, T.log1p, torch.pow, T.pow, T.__pow__, T.__rpow__, torch.rsqrt, T.rsqrt, torch.reciprocal,
        T.reciprocal, T.__rtruediv__, torch.acos, torch.asin, torch.cosh, torch.sinh, torch.tan, torch.erfinv,
        F.softplus, F.cosine_similarity, torch.cdist, torch.dist, F.pdist, torch.renorm, torch.logsumexp,
        F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.cross_entropy, F.nll_loss, F.kl_div,
        F.binary_cross_entropy_with_logits, F.poisson_nll_loss, F.cosine_embedding_loss, F.hinge_embedding_loss,
        F.margin_ranking_loss, F.multilabel_margin_loss, F.multi_margin_loss, F.soft_margin_loss,
        F.triplet_margin_loss,
    })


def _fused_attention():
    """The autograd function that keeps what CUDA's fused attention kernels keep (see the module docstring)."""
    import torch
    import torch.nn.functional as F

    class FusedAttention(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, mask, dropout_p, is_causal, scale):
            ctx.rng = torch.get_rng_state() if dropout_p > 0 else None
            ctx.options = dict(dropout_p=dropout_p, is_causal=is_causal, scale=scale)
            with torch.autocast("cpu", enabled=False):
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **ctx.options)
                # The row log-sum-exp of the scores, which the kernels keep for their backward (fp32).
                scores = (q.float() @ k.float().transpose(-2, -1)) * (scale or q.shape[-1] ** -0.5)
                if is_causal:
                    scores = scores.masked_fill(~torch.ones(scores.shape[-2:], dtype=torch.bool).tril(), -torch.inf)
                if mask is not None:
                    scores = scores.masked_fill(~mask, -torch.inf) if mask.dtype == torch.bool else scores + mask
                lse = torch.logsumexp(scores, dim=-1)
            ctx.save_for_backward(q, k, v, out, lse, mask)
            return out

        @staticmethod
        def backward(ctx, grad_out):
            q, k, v, _, _, mask = ctx.saved_tensors
            with torch.enable_grad(), torch.random.fork_rng(devices=[]), torch.autocast("cpu", enabled=False):
                if ctx.rng is not None:
                    torch.set_rng_state(ctx.rng)  # the same dropout as the forward pass drew
                inputs = [t.detach().requires_grad_(need) for t, need in zip((q, k, v), ctx.needs_input_grad)]
                again = F.scaled_dot_product_attention(*inputs, attn_mask=mask, **ctx.options)
                wanted = [t for t in inputs if t.requires_grad]
                grads = iter(torch.autograd.grad(again, wanted, grad_out)) if wanted else iter(())
            return (*(next(grads) if t.requires_grad else None for t in inputs), None, None, None, None)

    return FusedAttention


def cuda_autocast_rules():
    """A context manager: while it is active, CPU autocast treats CUDA's fp32 operations as CUDA's autocast does,
    and dropout and attention keep for backward what CUDA's kernels keep."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    fp32 = _fp32_functions()
    fused_attention = _fused_attention()

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0.0:
            return input
        return torch.native_dropout(input, p, True)[0]  # a card's dropout: a one-byte mask kept

    def attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kwargs):
        if kwargs.get("enable_gqa"):
            return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                                                  is_causal=is_causal, scale=scale, **kwargs)
        half = torch.get_autocast_dtype("cpu")  # CUDA's autocast runs attention in 16 bits

        def cast(t):
            return t.to(half) if t is not None and t.is_floating_point() and t.dtype != half else t

        return fused_attention.apply(cast(query), cast(key), cast(value), cast(attn_mask), dropout_p, is_causal,
                                     scale)

    def widen(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.dtype in (torch.bfloat16, torch.float16):
            return value.float()
        if isinstance(value, (list, tuple)):
            return type(value)(widen(v) for v in value)
        return value

    class CudaAutocastRules(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is F.dropout and torch.is_autocast_enabled("cpu"):
                return dropout(*args, **kwargs)
            if func is F.scaled_dot_product_attention and torch.is_autocast_enabled("cpu"):
                return attention(*args, **kwargs)
            if func in fp32 and torch.is_autocast_enabled("cpu"):
                with torch.autocast("cpu", enabled=False):
                    return func(*widen(args), **{k: widen(v) for k, v in kwargs.items()})
            return func(*args, **kwargs)

    return CudaAutocastRules()
