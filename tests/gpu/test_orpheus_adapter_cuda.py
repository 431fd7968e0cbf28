"""An Orpheus LoRA adapter (as Unsloth saves one) as the base of a run on a real CUDA GPU: Low's 4-bit base is the
adapter merged in bf16, then quantised on the card, byte for byte as transformers quantises the merged model on
load; and a Low run from the adapter trains on the card. The CPU twins: tests/core/engines/orpheus/
test_adapter_base.py (the same comparison and runs on the CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gpu.test_orpheus_cuda import train_orpheus


@pytest.fixture(scope="module")
def tiny_orpheus_gpu(tmp_path_factory) -> Path:
    from alltalk_gui.core.engines.orpheus.tiny_model import build_tiny_orpheus

    return build_tiny_orpheus(tmp_path_factory.mktemp("tiny_orpheus_adapter_gpu") / "orpheus_tiny")


@pytest.fixture(scope="module")
def adapter_gpu(tmp_path_factory, tiny_orpheus_gpu) -> Path:
    from tests.core.engines.orpheus.test_adapter_base import make_adapter

    return make_adapter(tiny_orpheus_gpu, tmp_path_factory.mktemp("unsloth_gpu") / "lora_model")


@pytest.fixture
def settings(tmp_path, monkeypatch, tiny_orpheus_gpu):
    from alltalk_gui.core import app_settings
    from alltalk_gui.core.engines.orpheus.files import BASE_MODEL_SETTING

    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "settings"))
    app_settings.set_value(BASE_MODEL_SETTING, str(tiny_orpheus_gpu))


def test_the_merged_adapter_is_quantised_on_the_card_as_transformers_does(settings, adapter_gpu, tmp_path):
    import torch
    from bitsandbytes.nn import Linear4bit

    from alltalk_gui.core.engines.orpheus.files import validate_base_model
    from alltalk_gui.core.engines.orpheus.model import load_lm, load_model

    info = validate_base_model(adapter_gpu)
    load_model(info, "bf16").save_pretrained(str(tmp_path / "merged"))
    reference = load_lm(tmp_path / "merged", "nf4", "cuda")
    ours = load_model(info, "nf4", "cuda")
    layers = [(n, m) for n, m in reference.named_modules() if isinstance(m, Linear4bit)]
    assert layers
    for name, module in layers:
        mine = ours.get_submodule(name)
        assert isinstance(mine, Linear4bit) and mine.weight.device.type == "cuda"
        assert torch.equal(mine.weight.data, module.weight.data), name
    assert all(p.device.type == "cuda" for p in ours.parameters())


def test_a_low_run_from_the_adapter_trains_on_the_card(settings, gpu_project, adapter_gpu):
    from alltalk_gui.core.training.events import Done, Error, Log

    events = train_orpheus(gpu_project, adapter_gpu, "adapter_low", "low")
    assert not [e.message for e in events if isinstance(e, Error)]
    assert isinstance(events[-1], Done) and events[-1].reason == "max_steps"
    assert any("merged in bf16, then quantised to 4 bits" in e.message for e in events if isinstance(e, Log))
