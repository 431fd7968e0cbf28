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


def cuda_autocast_rules():
    """A context manager: while it is active, CPU autocast treats CUDA's fp32 operations as CUDA's autocast does."""
    import torch
    from torch.overrides import TorchFunctionMode

    fp32 = _fp32_functions()

    def widen(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.dtype in (torch.bfloat16, torch.float16):
            return value.float()
        if isinstance(value, (list, tuple)):
            return type(value)(widen(v) for v in value)
        return value

    class CudaAutocastRules(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in fp32 and torch.is_autocast_enabled("cpu"):
                with torch.autocast("cpu", enabled=False):
                    return func(*widen(args), **{k: widen(v) for k, v in kwargs.items()})
            return func(*args, **kwargs)

    return CudaAutocastRules()
