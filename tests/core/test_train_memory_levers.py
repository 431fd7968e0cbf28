"""Memory levers in the training loop on the tiny model: the frozen conditioning front end really stays frozen,
and a setting the loop cannot honour yet is refused before training instead of being ignored."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from alltalk_gui.core.config import TrainConfig
from alltalk_gui.core.engines.xtts_model import gpt_state_from_model_file, load_gpt
from alltalk_gui.core.events import Done, Error, Started
from alltalk_gui.core.train import latest_checkpoint, train
from alltalk_gui.testing.tiny_xtts import build_tiny_xtts, make_speech_dataset


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[Path, Path]:
    tiny = build_tiny_xtts(tmp_path_factory.mktemp("tiny_xtts"))
    project = tmp_path_factory.mktemp("project")
    make_speech_dataset(project / "dataset", n_train=2, n_eval=1)
    return project, tiny


def _config(project: Path, tiny: Path, run: str, **kw) -> TrainConfig:
    return TrainConfig(project_dir=str(project), base_model_dir=str(tiny), run_name=run, device="cpu",
                       language="en", lr=1e-3, warmup_steps=0, memory_interval_s=0.0, batch_size=1, epochs=1,
                       max_steps=2, min_conditioning_seconds=1.0, max_conditioning_seconds=2.0, **kw)


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


def test_lora_is_refused_before_training_with_the_setting_named(setup):
    project, tiny = setup
    events = list(train(_config(project, tiny, "lora", lora_rank=8)))
    assert [type(e) for e in events] == [Error, Done]
    assert events[0].kind == "config" and "lora_rank" in events[0].message
    assert not (project / "runs" / "lora" / "checkpoints").exists()
