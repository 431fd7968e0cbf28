"""F5 model and loss on the tiny model (CPU): a few AdamW steps lower the loss, LoRA trains only the adapters,
checkpointing changes memory not maths, EMA and vocabulary extension behave as documented."""

from __future__ import annotations

import random

import pytest
import torch

from alltalk_gui.core.engines.f5.data import F5Clip, collate, prepare_clips
from alltalk_gui.core.engines.f5.model import (
    LORA_TARGETS,
    TEXT_EMBEDDING,
    EmaOptions,
    add_lora,
    export_state,
    load_f5,
    loss,
    make_ema,
    merge_lora,
    set_checkpointing,
    trainable_parameters,
)
from alltalk_gui.core.engines.f5.text import extend_vocabulary, missing_tokens

from .conftest import REFERENCE_TEXT


@pytest.fixture(scope="module")
def batch(tiny_f5, speech):
    _, info = load_f5(tiny_f5)
    samples, skipped = prepare_clips([F5Clip(speech, REFERENCE_TEXT), F5Clip(speech, REFERENCE_TEXT[:20])],
                                     {t: i for i, t in enumerate(info.vocab)})
    assert not skipped
    return collate(samples)


def seeded_loss(cfm, batch, seed=0):
    """The loss with the same noise, time, mask and condition drops every call (CFM draws them at random)."""
    torch.manual_seed(seed)
    random.seed(seed)
    return loss(cfm, batch)


def eval_loss(cfm, batch):
    cfm.eval()
    with torch.no_grad():
        value = sum(seeded_loss(cfm, batch, seed).item() for seed in range(4)) / 4
    cfm.train()
    return value


def train(cfm, batch, steps, lr):
    optimizer = torch.optim.AdamW([p for p in cfm.parameters() if p.requires_grad], lr=lr)
    for step in range(steps):
        value = seeded_loss(cfm, batch, 100 + step)
        value.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def test_batch_shapes(batch):
    assert batch["mel"].shape[0] == 2 and batch["mel"].shape[2] == 100
    assert batch["mel_lengths"][0] == batch["mel"].shape[1]
    assert (batch["text"][1, batch["text_lengths"][1]:] == -1).all()


def test_a_few_adamw_steps_lower_the_loss(tiny_f5, batch):
    torch.manual_seed(0)
    cfm, _ = load_f5(tiny_f5)
    before = eval_loss(cfm, batch)
    train(cfm, batch, steps=12, lr=3e-3)
    after = eval_loss(cfm, batch)
    assert after < 0.8 * before, (before, after)


def test_lora_trains_only_the_adapters(tiny_f5, batch):
    cfm, _ = load_f5(tiny_f5)
    frozen = {k: v.clone() for k, v in cfm.state_dict().items()}
    add_lora(cfm, rank=4, alpha=8)
    names = [n for n, p in cfm.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    assert {t for t in LORA_TARGETS if any(f".{t}.lora_A" in n for n in names)} == set(LORA_TARGETS)
    assert trainable_parameters(cfm) == 2 * 6 * 4 * (64 + 64) + 2 * 2 * 4 * (128 - 64)  # 2 blocks, 6 targets
    before = eval_loss(cfm, batch)
    train(cfm, batch, steps=12, lr=1e-2)
    assert eval_loss(cfm, batch) < before
    state = cfm.state_dict()
    for key, value in frozen.items():
        live = state.get(key) if key in state else state[key.replace(".weight", ".base_layer.weight")
                                                         .replace(".bias", ".base_layer.bias")]
        assert torch.equal(live, value), key
    merged = merge_lora(cfm)
    assert not any("lora_" in k for k in merged.state_dict())
    assert set(export_state(merged)) == {f"ema_model.{k}" for k in frozen}
    assert not all(torch.equal(merged.state_dict()[k], frozen[k]) for k in frozen)


def test_checkpointing_gives_the_same_loss_and_gradients(tiny_f5, batch):
    cfm, _ = load_f5(tiny_f5)
    cfm.eval()  # no dropout, so the recomputed forward is the same
    seeded_loss(cfm, batch).backward()
    plain = {n: p.grad.clone() for n, p in cfm.named_parameters() if p.grad is not None}
    cfm.zero_grad(set_to_none=True)
    set_checkpointing(cfm, True)
    seeded_loss(cfm, batch).backward()
    for name, grad in plain.items():
        torch.testing.assert_close(dict(cfm.named_parameters())[name].grad, grad)


def test_ema_is_off_by_default_and_its_decay_ramps_up(tiny_f5, batch):
    from alltalk_gui.core.engines.f5.model import ema_decay

    cfm, _ = load_f5(tiny_f5)
    assert make_ema(cfm, EmaOptions()) is None
    assert [round(ema_decay(t, 0.999), 3) for t in (1, 10, 100, 10_000)] == [0.182, 0.55, 0.918, 0.999]
    ema = make_ema(cfm, EmaOptions(enabled=True, decay=0.2))
    key = "transformer.proj_out.weight"
    start = cfm.state_dict()[key].clone()
    train(cfm, batch, steps=1, lr=1e-2)
    ema.update(cfm)  # update 1: decay min(0.2, 2/11)
    d1 = 2 / 11
    torch.testing.assert_close(ema.model.state_dict()[key], d1 * start + (1 - d1) * cfm.state_dict()[key])
    previous = ema.model.state_dict()[key].clone()
    train(cfm, batch, steps=1, lr=1e-2)
    ema.update(cfm)  # update 2: decay min(0.2, 3/12) = 0.2
    torch.testing.assert_close(ema.model.state_dict()[key], 0.2 * previous + 0.8 * cfm.state_dict()[key])
    assert not torch.equal(start, ema.model.state_dict()[key])
    resumed = make_ema(cfm, EmaOptions(enabled=True, decay=0.2))
    resumed.load_state_dict(ema.state_dict())  # what a checkpoint keeps for an exact resume
    assert resumed.step == 2 and torch.equal(resumed.model.state_dict()[key], ema.model.state_dict()[key])


def test_missing_characters_are_reported_and_can_be_added(tiny_f5):
    cfm, info = load_f5(tiny_f5)
    texts = ["Hello world.", "Ein Ølkrug, 50 €!", "你好"]
    missing = missing_tokens(texts, info.vocab)
    tokens = [m.token for m in missing]
    assert "Ø" in tokens and "€" in tokens and "ni2" in tokens and "hao3" in tokens  # tone sandhi: ni3 -> ni2
    assert "H" not in tokens
    rows = cfm.transformer.text_embed.text_embed.weight.detach().clone()
    vocab = extend_vocabulary(cfm, info.vocab, tokens)
    grown = cfm.transformer.text_embed.text_embed.weight
    assert grown.shape[0] == len(vocab) + 1 == rows.shape[0] + len(tokens)
    assert torch.equal(grown[: rows.shape[0]], rows)
    assert not missing_tokens(texts, vocab)
    assert cfm.vocab_char_map["€"] == len(vocab) - len(tokens) + tokens.index("€")
    assert grown.requires_grad
    with pytest.raises(ValueError):
        extend_vocabulary(cfm, vocab, ["€"])
    # With LoRA the grown embedding keeps training, or the new characters would stay random.
    add_lora(cfm, rank=2, also_train=(TEXT_EMBEDDING,))
    trained = {n for n, p in cfm.named_parameters() if p.requires_grad}
    assert f"{TEXT_EMBEDDING}.weight" in trained and all("lora_" in n or n.startswith(TEXT_EMBEDDING) for n in trained)


def test_clips_outside_1_to_30_seconds_are_left_out_with_a_reason(tiny_f5, speech, tmp_path):
    import numpy as np
    import soundfile as sf

    from alltalk_gui.core.engines.f5.data import frames

    _, info = load_f5(tiny_f5)
    vocab = {t: i for i, t in enumerate(info.vocab)}
    short, long_ = tmp_path / "short.wav", tmp_path / "long.flac"
    sf.write(short, np.zeros(8000, dtype=np.float32), 16000)           # 0.5 s
    sf.write(long_, np.zeros(31 * 44100, dtype=np.float32), 44100)     # 31 s, another rate and format
    samples, skipped = prepare_clips([F5Clip(short, "Hi."), F5Clip(long_, "Long."), F5Clip(speech, ""),
                                      F5Clip(speech, REFERENCE_TEXT)], vocab)
    assert len(samples) == 1 and len(skipped) == 3
    assert "short.wav is 0.5 s" in skipped[0] and "long.flac is 31.0 s" in skipped[1] and "no transcript" in skipped[2]
    assert abs(samples[0].mel.shape[0] - frames(sf.info(speech).duration)) <= 1  # resampled to 24 kHz first
    assert samples[0].tokens.tolist() == [vocab[c] for c in REFERENCE_TEXT]
