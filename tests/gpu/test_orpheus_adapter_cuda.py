"""An Orpheus LoRA adapter (as Unsloth saves one) as the base of a run on a real CUDA GPU: Low's 4-bit base is the
adapter merged in bf16, then quantised on the card, byte for byte as transformers quantises the merged model on
load; and a Low run from the adapter trains on the card. From an adapter that carries embed_tokens and lm_head in
full (the model untied), Low keeps the frozen input embedding in host memory: one matrix less on the card, the same
loss and adapter gradients. The CPU twins: tests/core/engines/orpheus/test_adapter_base.py (the same comparison
and runs on the CPU) and test_host_embedding.py (the same code through the loop on the CPU)."""

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


@pytest.fixture(scope="module")
def full_adapter_gpu(tmp_path_factory, tiny_orpheus_gpu) -> Path:
    from tests.core.engines.orpheus.test_adapter_base import make_adapter

    return make_adapter(tiny_orpheus_gpu, tmp_path_factory.mktemp("unsloth_full_gpu") / "lora_model",
                        modules_to_save=["embed_tokens", "lm_head"], seed=2)


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


def test_low_from_an_untied_adapter_keeps_the_input_embedding_in_host_memory(settings, gpu_project, full_adapter_gpu,
                                                                             monkeypatch):
    import torch

    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.core.engines.orpheus import model as orpheus_model
    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.run_config import build_train_config
    from tests.gpu.test_orpheus_cuda import QUICK

    config = build_train_config(VoiceProject.open(gpu_project), full_adapter_gpu, profile="low", devices=list_devices(),
                                overrides={**QUICK, "run_name": "untied_low", "device": "cuda"},
                                engine="orpheus").config
    engine = get_engine("orpheus")
    config.run_dir.mkdir(parents=True, exist_ok=True)
    clips = engine.load_clips(config)

    def one_pass():
        torch.manual_seed(0)  # the same LoRA A matrices both times
        setup = engine.training_setup(config, clips, torch.device("cuda"))
        model = setup.model.to("cuda")  # as accelerate places it
        batch = {k: v.to("cuda") for k, v in setup.collate([setup.train_set[0]]).items()}
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = setup.loss(model, batch)["loss"]
        loss.backward()
        grads = {n: p.grad.detach().float().cpu() for n, p in model.named_parameters() if p.grad is not None}
        card = sum(p.numel() * p.element_size() for p in model.parameters() if p.device.type == "cuda")
        return model.lm.get_input_embeddings().weight, loss.item(), grads, card

    one_pass()  # the clips' SNAC codes cached first: encoding them draws from the random generator
    embedding, loss, grads, card = one_pass()
    assert embedding.device.type == "cpu" and not embedding.requires_grad
    with monkeypatch.context() as patch:  # the embedding on the card, among the parameters, as before
        patch.setattr(orpheus_model, "keep_embedding_on_host", lambda lm: False)
        on_card, loss0, grads0, card0 = one_pass()
    assert on_card.device.type == "cuda"
    assert card0 - card == embedding.numel() * embedding.element_size()  # the bf16 matrix
    assert loss == pytest.approx(loss0, abs=1e-5)  # the same rows, copied: no arithmetic differs
    assert grads.keys() == grads0.keys() and grads
    for name, grad in grads.items():
        torch.testing.assert_close(grad, grads0[name], rtol=1e-3, atol=1e-5, msg=name)
