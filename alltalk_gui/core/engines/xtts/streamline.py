"""The XTTS GPT as training runs it: coqui's maths, in fewer kernels and with about half the saved activations.

coqui builds the GPT for inference and for its own trainer alike. Three of its parts cost a training step more than
their maths needs; :func:`streamline_for_training` swaps each for torch's fused equivalent, in place, before every
run (whatever the profile):

* **GPT-2's GELU** (``gelu_new``) is the tanh approximation written as eight tensor operations. Under CUDA's autocast
  its ``pow`` runs in fp32 and the rest follows, so every block keeps several fp32 tensors four times the model's
  width for backward, half of a block's saved activations, and launches about twenty kernels a micro-step more.
  torch's ``gelu(approximate="tanh")`` is the same function in one kernel that keeps its input only.
* **The conditioning encoder's attention** (tortoise's ``QKVAttentionLegacy``, six blocks over the voice prompt's
  mel frames) keeps its (frames x frames) softmax twice, in fp32 and again in 16 bits: 26 MB a block for a 6 s
  prompt, 154 MB a clip. torch's ``scaled_dot_product_attention`` computes the same attention (coqui scales q and k
  by ``ch ** -0.25`` each; it scales their product by ``ch ** -0.5``) in fused kernels that keep no scores.
* **The key/value cache**: coqui turns ``use_cache`` on, so every block files its keys and values into a cache that
  a training step never reads.

What a run learns is unchanged: the loss and gradients equal coqui's to float rounding
(``tests/core/engines/test_xtts_streamline.py``). No weight changes name, so checkpoints, LoRA merges and exports
are as before; inference runs coqui's own model. The saved-activation figures the memory estimate reads are
measured on the streamlined GPT (``benchmarks/activation_calibration.py``).
"""

from __future__ import annotations

import torch
from torch import nn


class FusedQKVAttention(nn.Module):
    """tortoise's ``QKVAttentionLegacy`` through ``scaled_dot_product_attention``, for calls without a mask or
    relative positions (the conditioning encoder's); any other call goes to the legacy module it wraps."""

    def __init__(self, legacy: nn.Module) -> None:
        super().__init__()
        self.legacy = legacy  # holds no weights: the state dict is unchanged
        self.n_heads = legacy.n_heads

    def forward(self, qkv: torch.Tensor, mask=None, rel_pos=None) -> torch.Tensor:
        if mask is not None or rel_pos is not None:
            return self.legacy(qkv, mask, rel_pos)
        batch, width, length = qkv.shape
        channels = width // (3 * self.n_heads)
        # The legacy layout: heads split before q, k and v, each (batch x heads, channels, frames). The fused
        # kernels want (batch, heads, frames, channels), contiguous: with fewer dimensions or another stride torch
        # falls back to its unfused maths, which keeps the scores again.
        q, k, v = (part.reshape(batch, self.n_heads, channels, length).transpose(2, 3).contiguous()
                   for part in qkv.reshape(batch * self.n_heads, channels * 3, length).split(channels, dim=1))
        out = nn.functional.scaled_dot_product_attention(q, k, v)  # (batch, heads, frames, channels)
        return out.transpose(2, 3).reshape(batch, -1, length)


def streamline_for_training(gpt: nn.Module) -> dict[str, int]:
    """Swap the parts the module docstring names, in place. Parts a future coqui already builds differently are
    left as they are.

    Returns:
        How many were swapped: ``{"gelu": blocks, "attention": conditioning blocks}``.
    """
    from TTS.tts.layers.tortoise.arch_utils import QKVAttentionLegacy
    from transformers.activations import ACT2FN, NewGELUActivation

    swapped = {"gelu": 0, "attention": 0}
    for block in gpt.gpt.h:
        if isinstance(block.mlp.act, NewGELUActivation):
            block.mlp.act = ACT2FN["gelu_pytorch_tanh"]
            swapped["gelu"] += 1
    for block in getattr(getattr(gpt, "conditioning_encoder", None), "attn", ()):
        if (isinstance(getattr(block, "attention", None), QKVAttentionLegacy)
                and getattr(block, "relative_pos_embeddings", None) is None):
            block.attention = FusedQKVAttention(block.attention)
            swapped["attention"] += 1
    gpt.gpt.config.use_cache = False
    return swapped


def is_streamlined(gpt: nn.Module) -> bool:
    """Whether ``gpt`` runs as :func:`streamline_for_training` leaves it (benchmarks record which they measured)."""
    from transformers.activations import NewGELUActivation

    return not isinstance(gpt.gpt.h[0].mlp.act, NewGELUActivation)
