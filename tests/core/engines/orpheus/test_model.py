"""Orpheus's model for training: the chunked loss equals transformers' full cross-entropy on the answer (value and
gradients) with the prompt masked; LoRA trains only its adapters and checkpoints hold only them, under a wrapper
too; the 4-bit NF4 base runs forward and backward on the CPU with the gradients of its dequantised weights; and
activation checkpointing (reentrant, or not) changes nothing but memory, LoRA's adapters behind the frozen
embedding included."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from alltalk_gui.core.engines.orpheus.data import Sample, collate
from alltalk_gui.core.engines.orpheus.files import special_tokens
from alltalk_gui.core.engines.orpheus.model import (
    LOSS_PARTS, OrpheusLM, add_lora, load_lm, loss, set_checkpointing, trainable,
)
from alltalk_gui.core.engines.orpheus.tokens import IGNORE


@pytest.fixture(scope="module")
def special(tiny_orpheus):
    return special_tokens(tiny_orpheus)


@pytest.fixture(scope="module")
def batch(special):
    return make_batch(special)


def make_batch(special):
    """Two clips' batch: prompts of 5 and 8 tokens, 9 and 5 frames of random codes, the two end tokens."""
    generator = torch.Generator().manual_seed(0)

    def sample(prompt: int, frames: int) -> Sample:
        audio = [special.audio_base + (i % 7) * special.codebook_size
                 + int(torch.randint(0, special.codebook_size, (1,), generator=generator)) for i in range(7 * frames)]
        ids = [special.start_of_human, *range(10, 10 + prompt), special.start_of_speech, *audio,
               special.end_of_speech, special.end_of_ai]
        return Sample(torch.tensor(ids), prompt + 2)

    return collate([sample(5, 9), sample(8, 5)], special.pad)


def reference_loss(lm, batch) -> torch.Tensor:
    logits = lm(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.float()
    return nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                       batch["labels"][:, 1:].reshape(-1), ignore_index=IGNORE)


def test_the_chunked_loss_is_the_cross_entropy_of_the_answer(tiny_orpheus, special, batch):
    model = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special, chunk=16)
    out = loss(model, batch)
    assert set(out) == {"loss", *LOSS_PARTS}
    expected = reference_loss(model.lm, batch)
    assert out["loss"].item() == pytest.approx(expected.item(), rel=1e-5)
    out["loss"].backward()
    chunked = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    reference_loss(model.lm, batch).backward()
    for got, want in zip(chunked, (p.grad for p in model.parameters())):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
    # Parts: the two end tokens of each clip, and the audio codes.
    scored = int((batch["labels"][:, 1:] != IGNORE).sum())
    ends = 4
    combined = (out["audio_ce"] * (scored - ends) + out["end_ce"] * ends) / scored
    assert combined.item() == pytest.approx(out["loss"].item(), rel=1e-5)


def test_lora_trains_only_its_adapters_and_checkpoints_hold_only_them(tiny_orpheus, special, batch):
    model = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special)
    add_lora(model.lm, 4, 8.0)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    assert trainable(model) == 2 * 4 * (2 * (96 + 96) + 2 * (96 + 32) + 3 * (96 + 256))  # 2 layers, rank 4
    assert all(p.dtype == torch.float32 for n, p in model.named_parameters() if "lora_" in n)
    state = model.state_dict()
    assert sorted(state) == sorted(names)

    class Wrapper(nn.Module):  # DDP's shape: the module under "module."
        def __init__(self, module):
            super().__init__()
            self.module = module

    wrapped = Wrapper(model)
    assert sorted(wrapped.state_dict()) == sorted(f"module.{n}" for n in names)
    other = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special)
    add_lora(other.lm, 4, 8.0)
    for p in state.values():
        p.data.normal_()
    Wrapper(other).load_state_dict(wrapped.state_dict(), strict=True)  # the frozen base is not "missing"
    torch.testing.assert_close(loss(other, batch)["loss"], loss(model, batch)["loss"])
    with pytest.raises(RuntimeError, match="lora_A"):
        other.load_state_dict({k: v for k, v in state.items() if "lora_B" in k}, strict=True)


def test_the_4bit_base_trains_lora_on_the_cpu(tiny_orpheus, special, batch):
    """NF4 weights (bitsandbytes) on the CPU: the loss and the adapters' gradients are those of a model whose
    projections hold the dequantised weights."""
    import bitsandbytes.functional as bnbf
    from bitsandbytes.nn import Linear4bit

    quantised = OrpheusLM(load_lm(tiny_orpheus, "nf4", "cpu"), special)
    layers = {n: m for n, m in quantised.lm.named_modules() if isinstance(m, Linear4bit)}
    assert len(layers) == 2 * 7
    assert all(m.weight.dtype == torch.uint8 for m in layers.values())
    add_lora(quantised.lm, 4, 8.0)
    quantised.train()
    reference = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special)
    with torch.no_grad():
        for name, module in layers.items():
            weight = bnbf.dequantize_4bit(module.weight.data, module.weight.quant_state).float()
            reference.lm.get_submodule(name).weight.copy_(weight)
    add_lora(reference.lm, 4, 8.0)
    reference.load_state_dict(quantised.state_dict())  # the same adapters (B: random, so gradients reach A)
    for p in quantised.state_dict().values():
        p.data.normal_(std=0.02)
    reference.load_state_dict(quantised.state_dict())
    reference.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, want = loss(quantised, batch)["loss"], loss(reference, batch)["loss"]
    assert got.item() == pytest.approx(want.item(), rel=2e-2)
    got.backward()
    want.backward()
    # transformers leaves the tied output projection unquantised, so the loss takes it as it is; frozen, it gets
    # no gradient.
    assert type(quantised.lm.lm_head) is nn.Linear and quantised.lm.lm_head.weight.grad is None
    for (name, p), q in zip(quantised.named_parameters(), reference.parameters()):
        if p.requires_grad:
            cosine = nn.functional.cosine_similarity(p.grad.flatten(), q.grad.flatten(), dim=0)
            assert cosine > 0.98, name
    quantised.eval()
    with torch.no_grad():  # eval on the CPU keeps bitsandbytes' one layout (see model._keep_cpu_weights_unpacked)
        assert torch.isfinite(loss(quantised, batch)["loss"])


def add_learning_lora(lm, rank: int = 4, alpha: float = 8.0) -> None:
    """LoRA adapters whose B does not start at zero, so that one step's gradients reach the layers below."""
    add_lora(lm, rank, alpha)
    generator = torch.Generator().manual_seed(1)
    for name, p in lm.named_parameters():
        if "lora_B" in name:
            p.data.normal_(std=0.02, generator=generator)


def _step_grads(base, special, batch, lora: bool, checkpointing: str):
    torch.manual_seed(0)
    model = OrpheusLM(load_lm(base, "fp32"), special, chunk=16).train()
    if lora:
        add_learning_lora(model.lm)
    if checkpointing != "off":
        set_checkpointing(model.lm, True, reentrant=checkpointing == "reentrant")
    out = loss(model, batch)
    out["loss"].backward()
    return out["loss"].item(), {n: p.grad for n, p in model.named_parameters() if p.requires_grad}


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_checkpointing_changes_nothing_but_memory(tiny_orpheus, special, batch, lora):
    """The engine's reentrant kind and the non-reentrant one recompute the same loss and every trainable gradient."""
    plain, plain_grads = _step_grads(tiny_orpheus, special, batch, lora, "off")
    for kind in ("reentrant", "non-reentrant"):
        value, grads = _step_grads(tiny_orpheus, special, batch, lora, kind)
        assert value == pytest.approx(plain, rel=1e-6), kind
        assert grads.keys() == plain_grads.keys() and all(g is not None for g in grads.values()), kind
        for name, grad in plain_grads.items():
            torch.testing.assert_close(grads[name], grad, rtol=1e-5, atol=1e-7, msg=f"{kind}: {name}")
    if lora:
        first = [n for n in plain_grads if "layers.0." in n and "lora_A" in n]
        assert first and all(plain_grads[n].abs().sum() > 0 for n in first)  # the first layer's adapters learn


def test_adapters_behind_a_frozen_embedding_learn_where_transformers_adds_no_input_gradients(tiny_orpheus, special,
                                                                                               batch):
    """Reentrant recomputation passes gradients only when its input needs them; transformers 4.57 makes a frozen
    embedding's output need them only for peft's own models, so set_checkpointing does."""
    model = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special, chunk=16).train()
    add_learning_lora(model.lm)
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
    loss(model, batch)["loss"].backward()
    first = [p.grad for n, p in model.named_parameters() if "layers.0." in n and "lora_A" in n]
    assert first and all(g is not None and g.abs().sum() > 0 for g in first)
