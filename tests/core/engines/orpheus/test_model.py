"""Orpheus's model for training: the chunked loss equals transformers' full cross-entropy on the answer (value and
gradients) with the prompt masked; LoRA trains only its adapters and checkpoints hold only them, under a wrapper
too; the 4-bit NF4 base runs forward and backward on the CPU with the gradients of its dequantised weights; and
activation checkpointing changes nothing but memory."""

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


def test_checkpointing_changes_nothing_but_memory(tiny_orpheus, special, batch):
    grads = []
    for checkpointing in (False, True):
        model = OrpheusLM(load_lm(tiny_orpheus, "fp32"), special)
        set_checkpointing(model.lm, checkpointing)
        model.train()
        loss(model, batch)["loss"].backward()
        grads.append([p.grad for p in model.parameters()])
    for plain, recomputed in zip(*grads):
        torch.testing.assert_close(plain, recomputed)
