"""CPU twins of CUDA-only branches (docs/cuda_only.md lists them all): the arithmetic of auto's memory cap,
bitsandbytes' 8-bit AdamW stepping the tiny model and surviving a checkpoint on the CPU (bitsandbytes 0.50 runs its
8-bit optimizers there), the fused AdamW under fp16 loss scaling, and CUDA's autocast rules applied to a CPU forward
pass."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import torch

from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.levers import cap_gpu_memory, forward_backward, make_optimizer, memory_cap

GIB = 1024**3


def test_auto_caps_at_90_percent_of_what_the_card_has_free():
    cap, fraction = memory_cap(free=10 * GIB, total=12 * GIB, share=0.9)
    assert cap == int(0.9 * 10 * GIB) and fraction == pytest.approx(9 / 12)


def test_auto_never_raises_a_cap_the_process_already_has():
    """The card rehearsal caps the process at a 6 GiB "card" on an 80 GiB one: auto takes 90 % of the 6."""
    cap, fraction = memory_cap(free=78 * GIB, total=80 * GIB, share=0.9, current_fraction=6 / 80)
    assert cap == int(0.9 * 6 * GIB) and fraction == pytest.approx(0.9 * 6 / 80)
    # A process capped below what auto would take keeps its cap.
    assert memory_cap(free=78 * GIB, total=80 * GIB, share=1.0, current_fraction=0.05)[1] == pytest.approx(0.05)


def test_the_cap_is_a_no_op_on_the_cpu():
    assert cap_gpu_memory("cpu", 0.9) is None


@pytest.mark.parametrize("optimizer", ["adamw8bit", "paged_adamw8bit"])
def test_bitsandbytes_8bit_adamw_trains_and_checkpoints_on_the_cpu(tiny, tmp_path, optimizer):
    """The Medium profile's optimizer through our make_optimizer, accelerate and one micro-batch pass as the loop
    runs it; its 8-bit state (uint8 moments) saved and restored by accelerate as checkpoints do."""
    pytest.importorskip("bitsandbytes")
    from accelerate import Accelerator

    from alltalk_gui.core.engines.xtts.model import gpt_loss, load_gpt
    from alltalk_gui.core.training.loop import forget_earlier_runs
    forget_earlier_runs()
    config = dataclasses.replace(TrainConfig(), optimizer=optimizer, lr=1e-3)
    gpt, _, _ = load_gpt(tiny)
    gpt.train()
    optimizer = make_optimizer(gpt, config)
    assert type(optimizer).__name__ == {"adamw8bit": "AdamW8bit", "paged_adamw8bit": "PagedAdamW8bit"}[config.optimizer]
    acc = Accelerator(cpu=True)
    model, optimizer = acc.prepare(gpt, optimizer)
    inputs = _gpt_inputs(gpt, clips=2, seconds=2.0)
    before = {k: v.clone() for k, v in model.state_dict().items()}

    def step():
        losses = forward_backward(model, inputs, lambda m, b: gpt_loss(m, b), acc)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(losses["loss"].detach())

    losses = [step() for _ in range(3)]
    assert all(torch.isfinite(torch.tensor(losses))) and losses[-1] < losses[0], losses
    moved = [k for k, v in model.state_dict().items() if not torch.equal(v, before[k])]
    assert moved
    state = next(s for s in optimizer.optimizer.state.values() if "state1" in s)
    assert state["state1"].dtype == torch.uint8 and state["state2"].dtype == torch.uint8

    acc.save_state(str(tmp_path / "checkpoint"))
    saved = {k: v.clone() for k, v in state.items() if torch.is_tensor(v)}
    step()  # moves the state on
    acc.load_state(str(tmp_path / "checkpoint"))
    restored = next(s for s in optimizer.optimizer.state.values() if "state1" in s)
    for key, value in saved.items():
        assert torch.equal(restored[key], value), key


def _gpt_inputs(gpt, clips: int, seconds: float) -> dict:
    """Random GPT inputs of the tiny model's sizes (what the frozen front end would give for 2 s clips)."""
    generator = torch.Generator().manual_seed(0)
    samples, text = int(seconds * 22050), 12
    return {
        "text_inputs": torch.randint(1, gpt.number_text_tokens - 1, (clips, text), generator=generator),
        "text_lengths": torch.full((clips,), text, dtype=torch.long),
        "audio_codes": torch.randint(0, gpt.num_audio_tokens - 2, (clips, samples // 1024 + 1), generator=generator),
        "wav_lengths": torch.full((clips,), samples, dtype=torch.long),
        "cond_mels": torch.randn(clips, 1, 80, 100, generator=generator),
        "cond_idxs": None, "cond_lens": None,
    }


def test_cuda_autocast_rules_run_layer_norm_in_fp32_on_the_cpu():
    from alltalk_gui.core.machine.cuda_autocast import cuda_autocast_rules

    layer = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8))
    x = torch.randn(2, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        plain = (layer[0](x).dtype, layer(x).dtype)
        with cuda_autocast_rules():
            ruled = (layer[0](x).dtype, layer(x).dtype, torch.softmax(layer[0](x), -1).dtype)
    assert plain == (torch.bfloat16, torch.bfloat16)  # CPU autocast leaves the norm in bf16
    assert ruled == (torch.bfloat16, torch.float32, torch.float32)  # CUDA's: matmuls bf16, norms and softmax fp32
    assert layer(x).dtype == torch.float32  # no autocast: nothing changes


def test_cuda_autocast_rules_keep_what_cudas_dropout_and_fused_attention_keep():
    """A card's dropout keeps a one-byte mask, and its fused attention 16-bit q, k, v, the output and an fp32
    log-sum-exp per row (no scores); the CPU's keeps 16-bit noise and fp32 copies beside the scores. Same values
    and gradients as torch's own attention in 16 bits with the same dropout."""
    import torch.nn.functional as F

    from alltalk_gui.core.machine.cuda_autocast import cuda_autocast_rules

    saved: list[tuple[tuple[int, ...], torch.dtype]] = []

    def pack(t):
        saved.append((tuple(t.shape), t.dtype))
        return t

    x = torch.randn(64, 16, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16), cuda_autocast_rules():
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            F.dropout(x.to(torch.bfloat16), 0.1, True)
    assert saved == [((64, 16), torch.bool)]

    q, k, v = (torch.randn(2, 4, 40, 8, requires_grad=True) for _ in range(3))
    mask = torch.rand(2, 1, 40, 40) > 0.2
    mask[..., 0] = True
    for dropout in (0.0, 0.2):
        saved.clear()
        torch.manual_seed(5)
        with torch.autocast("cpu", dtype=torch.bfloat16), cuda_autocast_rules():
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)
        assert saved == [((2, 4, 40, 8), torch.bfloat16)] * 4 + [((2, 4, 40), torch.float32),
                                                                  ((2, 1, 40, 40), torch.bool)]
        grads = torch.autograd.grad(out.float().sum(), (q, k, v))
        torch.manual_seed(5)
        plain = F.scaled_dot_product_attention(*(t.to(torch.bfloat16) for t in (q, k, v)), attn_mask=mask,
                                               dropout_p=dropout)
        torch.testing.assert_close(out, plain, rtol=0, atol=0)
        for got, want in zip(grads, torch.autograd.grad(plain.float().sum(), (q, k, v))):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


def _tiny_regression():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 1))
    data = torch.randn(32, 8), torch.randn(32, 1)
    return model, data


def test_adamw_is_torchs_fused_one_and_updates_as_the_default_does():
    """On a card the default (foreach) AdamW launches a dozen kernels a group where the fused one launches one;
    the update is the same to float rounding."""
    model, (x, y) = _tiny_regression()
    twin = copy.deepcopy(model)
    config = dataclasses.replace(TrainConfig(), lr=1e-2)
    fused = make_optimizer(model, config)
    assert fused.defaults["fused"] is True and type(fused) is torch.optim.AdamW
    groups = [{"params": g["params"], "weight_decay": g["weight_decay"]}
              for g in make_optimizer(twin, config).param_groups]
    plain = torch.optim.AdamW(groups, lr=1e-2, betas=(config.beta1, config.beta2), eps=1e-8, foreach=False)
    assert plain.param_groups[0]["fused"] is None
    for _ in range(5):
        for net, opt in ((model, fused), (twin, plain)):
            opt.zero_grad()
            torch.nn.functional.mse_loss(net(x), y).backward()
            opt.step()
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_fp16_loss_scaling_steps_the_fused_adamw_as_an_unscaled_one():
    """The CPU twin of the card's fp16 path with the fused AdamW (accelerate makes no GradScaler on the CPU, so the
    loop's own fp16 path cannot run here: docs/cuda_only.md): torch's GradScaler hands the fused kernel its scale
    and inf check; a step with an overflowed gradient is skipped, the others equal an unscaled step."""
    model, (x, y) = _tiny_regression()
    twin = copy.deepcopy(model)
    config = dataclasses.replace(TrainConfig(), lr=1e-2)
    fused = make_optimizer(model, config)
    reference = torch.optim.AdamW([{"params": g["params"], "weight_decay": g["weight_decay"]}
                                   for g in make_optimizer(twin, config).param_groups],
                                  lr=1e-2, betas=(config.beta1, config.beta2), eps=1e-8, foreach=False)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    for step in range(4):
        fused.zero_grad()
        scaler.scale(torch.nn.functional.mse_loss(model(x), y)).backward()
        if step == 1:  # an overflow: the scaler must skip this step
            next(model.parameters()).grad[0, 0] = float("inf")
        scaler.step(fused)
        scaler.update()
        if step != 1:
            reference.zero_grad()
            torch.nn.functional.mse_loss(twin(x), y).backward()
            reference.step()
    for a, b in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
