"""``streamline_for_training``: the GPT trains with GPT-2's GELU in one kernel, fused attention in the conditioning
encoder and no key/value cache. The same loss and gradients (recipe equivalence), far fewer saved activations under
CUDA's autocast rules, fewer operations per step, and weights inference loads unchanged."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers.activations import NewGELUActivation

from TTS.tts.layers.tortoise.arch_utils import QKVAttentionLegacy

from alltalk_gui.core.engines.xtts.model import gpt_loss, load_gpt, load_inference_model
from alltalk_gui.core.engines.xtts.streamline import FusedQKVAttention, is_streamlined, streamline_for_training
from alltalk_gui.core.engines.xtts.tiny_model import TINY
from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.machine.cuda_autocast import cuda_autocast_rules
from alltalk_gui.core.training.config import TrainConfig


def _inputs(gpt, clips: int = 2, codes: int = 40, text: int = 12) -> dict:
    """A batch of random GPT inputs in the tiny model's ranges; the conditioning prompt in each clip's middle."""
    gen = torch.Generator().manual_seed(3)
    samples = codes * 1024
    return {
        "text_inputs": torch.randint(1, gpt.number_text_tokens - 1, (clips, text), generator=gen, dtype=torch.int32),
        "text_lengths": torch.full((clips,), text, dtype=torch.long),
        "audio_codes": torch.randint(0, TINY["gpt_start_audio_token"], (clips, codes + 1), generator=gen),
        "wav_lengths": torch.full((clips,), samples, dtype=torch.long),
        "cond_mels": torch.randn(clips, 1, 80, 200, generator=gen),
        "cond_idxs": torch.tensor([[samples // 4, samples // 2]] * clips),
        "cond_lens": None,
    }


def _step(gpt, inputs, precision: str = "no"):
    """One training forward and backward (dropout drawn from the same seed); the loss and every gradient."""
    gpt.train()
    gpt.zero_grad(set_to_none=True)
    torch.manual_seed(11)
    half = precision == "bf16"
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=half), (cuda_autocast_rules() if half
                                                                       else contextlib.nullcontext()):
        loss = gpt_loss(gpt, inputs)["loss"]
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in gpt.named_parameters() if p.grad is not None}


def test_the_streamlined_gpt_learns_exactly_what_coquis_does(tiny):
    plain, _, _ = load_gpt(tiny)
    fast, _, _ = load_gpt(tiny)
    blocks = len(plain.conditioning_encoder.attn)
    assert streamline_for_training(fast) == {"gelu": TINY["gpt_layers"], "attention": blocks} and blocks == 6
    assert is_streamlined(fast) and not is_streamlined(plain)
    assert all(isinstance(b.attention, FusedQKVAttention) for b in fast.conditioning_encoder.attn)
    assert fast.gpt.config.use_cache is False
    inputs = _inputs(plain)
    loss_plain, grads_plain = _step(plain, inputs)
    loss_fast, grads_fast = _step(fast, inputs)
    assert torch.isfinite(loss_plain)
    assert abs(loss_fast.item() - loss_plain.item()) <= 1e-5
    assert grads_fast.keys() == grads_plain.keys() and len(grads_plain) > 50
    for name, grad in grads_plain.items():
        torch.testing.assert_close(grads_fast[name], grad, rtol=1e-4, atol=1e-6, msg=name)
    assert plain.state_dict().keys() == fast.state_dict().keys()


def _saved_bytes(gpt, inputs, modules) -> int:
    """Bytes of the distinct tensors ``modules`` save for backward (weights, their 16-bit casts and the GPT-2
    blocks' attention scores left out), as ``benchmarks/activation_calibration.py`` counts them."""
    inside = {"block": False}
    for block in modules:
        block.register_forward_pre_hook(lambda *_: inside.__setitem__("block", True))
        block.register_forward_hook(lambda *_: inside.__setitem__("block", False))
    gpt_blocks = modules is gpt.gpt.h
    weights = {p.untyped_storage().data_ptr() for p in gpt.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        cast = t.grad_fn is not None and type(t.grad_fn).__name__ == "ToCopyBackward0"
        # GPT-2's attention scores: CPU attention keeps them, CUDA's fused kernels do not.
        scores = gpt_blocks and t.dim() >= 3 and t.shape[-1] == t.shape[-2]
        if inside["block"] and storage.data_ptr() not in weights and not cast and not scores:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    gpt.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16), cuda_autocast_rules():
            gpt_loss(gpt, inputs)
    return sum(seen.values())


def test_under_cuda_autocast_a_block_saves_far_less(tiny):
    """coqui's GELU runs its pow in fp32 under CUDA's autocast and the rest follows: four-times-width fp32 tensors
    saved in every block. The tiny model's block keeps 0.64 of before; the real-size one 0.49
    (``resources/profiles/xtts/activation_calibration.json``, which the estimate reads)."""
    plain, _, _ = load_gpt(tiny)
    fast, _, _ = load_gpt(tiny)
    streamline_for_training(fast)
    inputs = _inputs(plain, codes=120)
    before, after = _saved_bytes(plain, inputs, plain.gpt.h), _saved_bytes(fast, inputs, fast.gpt.h)
    assert 0 < after < 0.7 * before, (after, before)


def test_the_conditioning_encoder_keeps_no_attention_scores(tiny):
    """tortoise's attention keeps its (frames x frames) softmax in fp32 and in 16 bits; the fused one none
    (real size, 6 s prompt: 261 MB a clip before, 101 MB after, in the activation calibration)."""
    plain, _, _ = load_gpt(tiny)
    fast, _, _ = load_gpt(tiny)
    streamline_for_training(fast)
    inputs = _inputs(plain)
    before = _saved_bytes(plain, inputs, plain.conditioning_encoder.attn)
    after = _saved_bytes(fast, inputs, fast.conditioning_encoder.attn)
    assert 0 < after < 0.5 * before, (after, before)


def test_calls_with_a_mask_or_relative_positions_go_to_coquis_attention():
    legacy = QKVAttentionLegacy(4)
    fused = FusedQKVAttention(legacy)
    qkv = torch.randn(2, 3 * 4 * 8, 30)
    torch.testing.assert_close(fused(qkv), legacy(qkv), rtol=1e-5, atol=1e-6)
    mask = torch.rand(2, 30, 30) > 0.3
    mask[..., 0] = True
    torch.testing.assert_close(fused(qkv, mask), legacy(qkv, mask), rtol=0, atol=0)


class _CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


def _ops_per_step(gpt, inputs) -> int:
    gpt.train()
    with _CountOps() as count:
        with torch.autocast("cpu", dtype=torch.bfloat16), cuda_autocast_rules():
            loss = gpt_loss(gpt, inputs)["loss"]
        loss.backward()
    return count.ops


def test_a_training_step_dispatches_fewer_operations(tiny):
    """On a card the host dispatches every operation (the H100's and H200's micro-steps waited on it): the
    streamlined step saves at least 15 operations per block."""
    plain, _, _ = load_gpt(tiny)
    fast, _, _ = load_gpt(tiny)
    streamline_for_training(fast)
    inputs = _inputs(plain)
    before, after = _ops_per_step(plain, inputs), _ops_per_step(fast, inputs)
    assert before - after >= 15 * TINY["gpt_layers"], (before, after)


@pytest.mark.parametrize("lora_rank", [0, 4])
def test_every_profile_trains_the_streamlined_gpt(tiny, lora_rank):
    """The engine streamlines the GPT whatever the profile; LoRA still wraps the same layers and trains only
    its adapters (with the mel head and final norm)."""
    gpt, _, _ = load_gpt(tiny)
    get_engine("xtts").apply_memory_levers(gpt, TrainConfig(lora_rank=lora_rank, gradient_checkpointing=bool(lora_rank)))
    assert is_streamlined(gpt) and gpt.gpt.config.use_cache is False
    loss, grads = _step(gpt, _inputs(gpt))
    assert torch.isfinite(loss) and grads
    if lora_rank:
        assert all("lora_" in name or name.startswith(("mel_head", "final_norm")) for name in grads)


def test_the_trained_weights_load_for_inference_which_keeps_coquis_gelu(tiny, tmp_path):
    gpt, _, _ = load_gpt(tiny)
    streamline_for_training(gpt)
    _step(gpt, _inputs(gpt))
    with torch.no_grad():
        gpt.mel_head.weight.add_(0.5)  # a trained weight the inference model must show
    weights = tmp_path / "gpt.pth"
    torch.save({f"gpt.{k}": v for k, v in gpt.state_dict().items()}, weights)
    model = load_inference_model(tiny, weights)
    torch.testing.assert_close(model.gpt.mel_head.weight, gpt.mel_head.weight, rtol=0, atol=0)
    assert isinstance(model.gpt.gpt.h[0].mlp.act, NewGELUActivation)
    assert isinstance(model.gpt.conditioning_encoder.attn[0].attention, QKVAttentionLegacy)


def test_parts_a_gpt_builds_otherwise_are_left_as_they_are(tiny):
    """A coqui that already fuses its GELU, or builds no conditioning encoder of tortoise's kind: nothing to swap,
    and nothing breaks."""
    from transformers.activations import ACT2FN

    gpt, _, _ = load_gpt(tiny)
    for block in gpt.gpt.h:
        block.mlp.act = ACT2FN["gelu_pytorch_tanh"]
    del gpt.conditioning_encoder
    assert streamline_for_training(gpt) == {"gelu": 0, "attention": 0}
    assert gpt.gpt.config.use_cache is False
