"""Memory levers in the training loop on the tiny model: the frozen conditioning front end really stays frozen;
LoRA trains only its adapters, learns as fast as a full fine-tune, and its checkpoints merge into plain GPT
weights for preview and export."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.engines.xtts.files import BaseModelError
from alltalk_gui.core.engines.xtts.model import LORA_FULLY_TRAINED, gpt_state, gpt_state_from_model_file, load_gpt
from alltalk_gui.core.training.levers import apply_memory_levers
from alltalk_gui.core.training.events import Done, Started, Step
from alltalk_gui.core.engines.xtts.export import compact_state
from alltalk_gui.core.training.loop import latest_checkpoint, train
from alltalk_gui.testing.speech import make_speech_dataset
from tests.core.training.tiny_training import fast_config


@pytest.fixture(scope="module")
def setup(tmp_path_factory, tiny) -> tuple[Path, Path]:
    project = tmp_path_factory.mktemp("project")
    make_speech_dataset(project / "dataset", n_train=2, n_eval=1)
    return project, tiny


def _config(project: Path, tiny: Path, run: str, **kw) -> TrainConfig:
    return fast_config(project, tiny, run, **{"batch_size": 1, "epochs": 1, "max_steps": 2, **kw})


def test_freeze_conditioning_trains_the_gpt_but_not_its_voice_prompt_front_end(setup):
    project, tiny = setup
    events = list(train(_config(project, tiny, "frozen", freeze_conditioning=True)))
    assert isinstance(events[-1], Done) and events[-1].reason == "max_steps"
    started = next(e for e in events if isinstance(e, Started))
    base = gpt_state_from_model_file(tiny / "model.pth")
    conditioning = [k for k in base if k.startswith(("conditioning_encoder.", "conditioning_perceiver."))]
    gpt, _, _ = load_gpt(tiny)
    frozen = sum(p.numel() for m in (gpt.conditioning_encoder, gpt.conditioning_perceiver) for p in m.parameters())
    assert conditioning and frozen > 0
    assert started.trainable_parameters == sum(p.numel() for p in gpt.parameters()) - frozen
    trained = load_file(str(latest_checkpoint(project / "runs" / "frozen") / "model.safetensors"))
    for key in conditioning:
        torch.testing.assert_close(trained[key], base[key], rtol=0, atol=0, msg=key)
    changed = [k for k in trained if k not in conditioning and k in base and not torch.equal(trained[k], base[k])]
    assert changed, "the rest of the GPT should have trained"


def test_lora_trains_only_the_adapters_and_learns(setup):
    """Loss falls by at least 30 % in 12 steps (test_train_loop.py::test_it_learns checks the same for a full
    fine-tune); the base weights stay as they were, but for the mel head and final norm, trained in full."""
    project, tiny = setup
    events = list(train(_config(project, tiny, "lora", lora_rank=8, lora_alpha=16, lr=5e-3, epochs=6, max_steps=0,
                                lr_schedule="constant", eval_each_epoch=False)))
    assert isinstance(events[-1], Done) and events[-1].reason == "finished", events[-2:]
    steps = [e for e in events if isinstance(e, Step)]
    assert len(steps) == 12
    first, last = sum(s.loss for s in steps[:2]) / 2, sum(s.loss for s in steps[-2:]) / 2
    assert last < 0.7 * first, (first, last)

    started = next(e for e in events if isinstance(e, Started))
    gpt, _, _ = load_gpt(tiny)
    blocks, dim = len(gpt.gpt.h), gpt.model_dim
    # Rank 8 on c_attn (dim -> 3 dim), attn.c_proj (dim -> dim), mlp.c_fc (dim -> 4 dim), mlp.c_proj (4 dim -> dim).
    adapters = blocks * 8 * (4 * dim + 2 * dim + 5 * dim + 5 * dim)
    full = sum(p.numel() for name in LORA_FULLY_TRAINED for p in getattr(gpt, name).parameters())
    assert full == dim * gpt.num_audio_tokens + gpt.num_audio_tokens + 2 * dim  # mel head + final norm
    assert started.trainable_parameters == adapters + full

    stored = load_file(str(latest_checkpoint(project / "runs" / "lora") / "model.safetensors"))
    base = gpt_state_from_model_file(tiny / "model.pth")
    moved = set()
    for key, tensor in stored.items():
        if key.split(".")[0] in LORA_FULLY_TRAINED:
            if not torch.equal(tensor, base[key]):
                moved.add(key)
        elif "lora_" not in key:
            torch.testing.assert_close(tensor, base[key.replace(".base_layer.", ".")], rtol=0, atol=0, msg=key)
    assert "mel_head.weight" in moved and "final_norm.weight" in moved


def test_lora_defaults_dropout_005_and_the_mel_head_and_final_norm_train_in_full(tiny):
    gpt, _, _ = load_gpt(tiny)
    trainable = apply_memory_levers(gpt, TrainConfig(lora_rank=4))
    assert gpt.gpt.h[0].attn.c_attn.lora_dropout["default"].p == 0.05
    names = {name for name, p in gpt.named_parameters() if p.requires_grad}
    assert {"mel_head.weight", "mel_head.bias", "final_norm.weight", "final_norm.bias"} <= names
    assert all("lora_" in n or n.split(".")[0] in LORA_FULLY_TRAINED for n in names)
    assert trainable == sum(p.numel() for p in gpt.parameters() if p.requires_grad)


def test_a_lora_checkpoint_merges_into_plain_gpt_weights(setup):
    project, tiny = setup
    list(train(_config(project, tiny, "lora_merge", lora_rank=4, lora_alpha=8, lr=5e-3)))
    weights = latest_checkpoint(project / "runs" / "lora_merge") / "model.safetensors"
    stored = load_file(str(weights))
    merged = gpt_state(tiny, weights)
    base = gpt_state_from_model_file(tiny / "model.pth")
    assert set(merged) == set(base)  # the layout of the base model: what export and inference load
    # W' = W + (alpha / rank) * (B A)^T: GPT-2's Conv1D stores its weight as (in, out).
    prefix = "gpt.h.0.attn.c_attn"
    delta = (stored[f"{prefix}.lora_B.default.weight"] @ stored[f"{prefix}.lora_A.default.weight"]).T * (8 / 4)
    assert delta.abs().max() > 0
    torch.testing.assert_close(merged[f"{prefix}.weight"], base[f"{prefix}.weight"] + delta)
    model, _, _ = load_gpt(tiny, weights)  # what preview loads: a plain GPT, no peft layers left
    assert not any("lora" in name for name, _ in model.named_parameters())

    state = compact_state(tiny, weights)  # what export writes
    torch.testing.assert_close(state[f"gpt.{prefix}.weight"], merged[f"{prefix}.weight"])


def test_a_lora_checkpoint_without_its_config_is_refused_clearly(setup, tmp_path):
    project, tiny = setup
    list(train(_config(project, tiny, "lora_orphan", lora_rank=2, max_steps=1)))
    weights = latest_checkpoint(project / "runs" / "lora_orphan") / "model.safetensors"
    lonely = tmp_path / "model.safetensors"
    lonely.write_bytes(weights.read_bytes())
    with pytest.raises(BaseModelError, match="lora_alpha"):
        load_gpt(tiny, lonely)
    assert weights.is_file()


def test_a_lora_run_resumes_exactly(setup):
    """2 steps, a resume, 2 more steps give the losses of 4 steps straight: the adapters, their optimizer state
    and the data position all come back from the checkpoint."""
    project, tiny = setup
    settings = dict(lora_rank=4, lr=5e-3, epochs=2, save_every_steps=1, eval_each_epoch=False)
    straight = [e.loss for e in train(_config(project, tiny, "lora_a", **settings, max_steps=4)) if isinstance(e, Step)]
    first = [e.loss for e in train(_config(project, tiny, "lora_b", **settings, max_steps=2)) if isinstance(e, Step)]
    second = [e.loss for e in train(_config(project, tiny, "lora_b", **settings, max_steps=4), resume=True)
              if isinstance(e, Step)]
    assert len(straight) == 4 and first + second == pytest.approx(straight, rel=1e-6)
