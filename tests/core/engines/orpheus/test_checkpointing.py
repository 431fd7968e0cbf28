"""Orpheus's activation checkpointing (``model.set_checkpointing``, torch's reentrant kind) recomputes the same
model: with LoRA and trained in full, the loss and every trainable gradient equal those of a step without it (and
of the non-reentrant kind), in fp32; the adapters behind a frozen embedding get their gradients even where
transformers adds no input gradients itself (4.57 does so only for peft's own models)."""

from __future__ import annotations

import pytest
import torch

from alltalk_gui.core.engines.orpheus.files import special_tokens
from alltalk_gui.core.engines.orpheus.model import OrpheusLM, add_lora, load_lm, loss, set_checkpointing
from tests.core.engines.orpheus.test_model import make_batch


def _step(base, special, lora: bool, checkpointing: str):
    torch.manual_seed(0)
    model = OrpheusLM(load_lm(base, "fp32"), special, chunk=16).train()
    if lora:
        add_lora(model.lm, 4, 8.0)
        generator = torch.Generator().manual_seed(1)
        for name, p in model.named_parameters():
            if "lora_B" in name:  # not zero, so that gradients reach the layers below
                p.data.normal_(std=0.02, generator=generator)
    if checkpointing != "off":
        set_checkpointing(model.lm, True, reentrant=checkpointing == "reentrant")
    out = loss(model, make_batch(special))
    out["loss"].backward()
    return out["loss"].item(), {n: p.grad for n, p in model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_checkpointing_recomputes_the_same_loss_and_gradients(tiny_orpheus, lora):
    special = special_tokens(tiny_orpheus)
    plain, plain_grads = _step(tiny_orpheus, special, lora, "off")
    for kind in ("reentrant", "non-reentrant"):
        value, grads = _step(tiny_orpheus, special, lora, kind)
        assert value == pytest.approx(plain, rel=1e-6), kind
        assert grads.keys() == plain_grads.keys() and all(g is not None for g in grads.values()), kind
        for name, grad in plain_grads.items():
            torch.testing.assert_close(grads[name], grad, rtol=1e-5, atol=1e-7, msg=f"{kind}: {name}")
    if lora:
        layers = [n for n in plain_grads if "layers.0." in n and "lora_A" in n]
        assert layers and all(plain_grads[n].abs().sum() > 0 for n in layers)  # the first layer's adapters learn


def test_adapters_behind_a_frozen_embedding_learn_where_transformers_adds_no_input_gradients(tiny_orpheus):
    special = special_tokens(tiny_orpheus)
    model = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special, chunk=16).train()
    add_lora(model.lm, 4, 8.0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.fill_(0.01)
    lm = model.lm
    switch = "activation_checkpointing_enable" if hasattr(lm, "activation_checkpointing_enable") else (
        "gradient_checkpointing_enable")
    original = getattr(lm, switch)

    def as_transformers_4_57(kwargs):  # checkpointing on, no hook that makes the embedding's output need gradients
        original(kwargs)
        lm.disable_input_require_grads()
        lm.__dict__.pop("_require_grads_hook", None)

    setattr(lm, switch, as_transformers_4_57)
    set_checkpointing(lm, True)
    loss(model, make_batch(special))["loss"].backward()
    first = [p.grad for n, p in model.named_parameters() if "layers.0." in n and "lora_A" in n]
    assert first and all(g is not None and g.abs().sum() > 0 for g in first)
