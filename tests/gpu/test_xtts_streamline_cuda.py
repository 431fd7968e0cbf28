"""The streamlined XTTS GPT on the card (``engines/xtts/streamline.py``; its CPU tests are
``tests/core/engines/test_xtts_streamline.py``): the same loss as coqui's GPT, and CUDA really takes its fused
attention kernels for the conditioning encoder (4-D, contiguous inputs), which keep no (frames x frames) scores:
the activation calibration the memory estimate reads assumes so."""

from __future__ import annotations

import pytest
import torch

from alltalk_gui.core.engines.xtts.model import gpt_loss, load_gpt
from alltalk_gui.core.engines.xtts.streamline import streamline_for_training
from tests.core.engines.test_xtts_streamline import _inputs


def _on_card(tiny, streamlined: bool):
    gpt, _, _ = load_gpt(tiny)
    if streamlined:
        streamline_for_training(gpt)
    return gpt.cuda().train()


def _cuda(inputs: dict) -> dict:
    # As gpt_inputs leaves them: the batch's tensors on the card, lengths and slices on the host.
    on_card = ("text_inputs", "audio_codes", "cond_mels")
    return {k: v.cuda() if k in on_card and v is not None else v for k, v in inputs.items()}


def test_the_streamlined_gpt_gives_coquis_loss_on_the_card(tiny_gpu):
    inputs = _cuda(_inputs(_on_card(tiny_gpu, False)))
    losses = []
    for streamlined in (False, True):
        gpt = _on_card(tiny_gpu, streamlined)
        torch.manual_seed(11)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = gpt_loss(gpt, inputs)["loss"]
        loss.backward()
        losses.append(loss.item())
    assert losses[1] == pytest.approx(losses[0], rel=2e-2)


def test_the_conditioning_attention_keeps_no_scores_on_the_card(tiny_gpu):
    gpt = _on_card(tiny_gpu, True)
    inputs = _cuda(_inputs(gpt))
    inside = {"attention": False}
    for block in gpt.conditioning_encoder.attn:
        block.register_forward_pre_hook(lambda *_: inside.__setitem__("attention", True))
        block.register_forward_hook(lambda *_: inside.__setitem__("attention", False))
    squares = []

    def pack(t):
        if inside["attention"] and t.dim() >= 3 and t.shape[-1] == t.shape[-2]:
            squares.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            gpt_loss(gpt, inputs)
    assert not squares, f"attention scores kept for backward: {squares[:3]}"
