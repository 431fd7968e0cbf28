"""An XTTS v2 fine-tune the user made elsewhere, chosen as the base model: AllTalk's compacted
``models/trainedmodel/`` (coqui's Trainer names, "xtts."-prefixed, maybe half precision) validates and loads the
user's own GPT; a folder without the DVAE or mel statistics is refused saying exactly what to do, and nothing in
any folder changes. AllTalk's training folder itself: test_xtts_trainer_folder.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api.engine import BaseModelError, get_engine
from alltalk_gui.core.engines.xtts.model import load_gpt, load_inference_model
from tests.trained_voice import trained_voice


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    return trained_voice(tmp_path_factory).base_model


def trainer_checkpoint(base: Path, scale: float, half: bool = False, optimizer: bool = True) -> dict:
    """A checkpoint as coqui's Trainer saves the GPTTrainer (AllTalk's finetune): the Xtts under "xtts.", the DVAE
    beside it, the config as a dict, the optimizer's state; its GPT is the base's times ``scale``."""
    plain = torch.load(base / "model.pth", weights_only=True)["model"]
    model = {}
    for key, value in plain.items():
        if key.startswith("gpt.") and value.is_floating_point():
            value = value * scale
        if half and value.is_floating_point():
            value = value.half()
        model[f"xtts.{key}"] = value
    model["dvae.codebook.embed"] = torch.zeros(2, 2)
    checkpoint = {"config": {"model": "xtts", "epochs": 3}, "model": model, "step": 1234, "epoch": 3,
                  "date": "November-27-2026_09+00AM", "model_loss": {"train_loss": 1.0, "eval_loss": 2.0}}
    if optimizer:
        checkpoint["optimizer"] = [{"state": {0: {"exp_avg": torch.zeros(3)}}, "param_groups": [{"lr": 5e-6, "params": [0]}]}]
    return checkpoint


def alltalk_trained_model(base: Path, folder: Path, half: bool) -> Path:
    """AllTalk's models/trainedmodel/: the compacted checkpoint (no optimizer, no dvae.* keys) as model.pth, and
    the base's vocab.json, config.json, mel_stats.pth, dvae.pth."""
    folder.mkdir(parents=True)
    checkpoint = trainer_checkpoint(base, 0.5, half=half, optimizer=False)
    checkpoint["model"] = {k: v for k, v in checkpoint["model"].items() if "dvae" not in k}
    torch.save(checkpoint, folder / "model.pth")
    for name in ("vocab.json", "config.json", "mel_stats.pth", "dvae.pth"):
        shutil.copy(base / name, folder / name)
    return folder


def listing(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")}


@pytest.mark.parametrize("half", [False, True], ids=["fp32", "fp16"])
def test_alltalks_compacted_fine_tune_is_a_base_model_and_loads_its_own_gpt(base, tmp_path, half):
    folder = alltalk_trained_model(base, tmp_path / "trainedmodel", half)
    before = listing(folder)
    assert "GPT with" in get_engine("xtts").describe_base_model(folder)  # was: "holds no XTTS GPT weights"
    gpt, _, _ = load_gpt(folder)
    base_gpt, _, _ = load_gpt(base)
    key = "text_embedding.weight"
    expected = base_gpt.state_dict()[key] * 0.5
    assert torch.allclose(gpt.state_dict()[key], expected, atol=1e-2 if half else 0)  # the user's, not the base's
    model = load_inference_model(folder)  # previews speak with the user's GPT and its own HiFi-GAN
    assert torch.allclose(model.gpt.text_embedding.weight, expected, atol=1e-2 if half else 0)
    assert gpt.state_dict()[key].dtype == torch.float32  # half weights train in the model's own precision
    assert listing(folder) == before  # nothing written into the user's folder


def test_a_fine_tune_without_the_dvae_reads_it_from_the_chosen_base(base, tmp_path, monkeypatch):
    """xtts-finetune-webui's ready/ folder has model.pth, config.json and vocab.json but no dvae.pth or
    mel_stats.pth: without a base chosen the user is told where to get them; with one, they are read from it (the
    same in every XTTS v2 fine-tune), the folder is used as it is and nothing is copied into it."""
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "settings"))
    folder = alltalk_trained_model(base, tmp_path / "only_three", half=False)
    (folder / "dvae.pth").unlink()
    (folder / "mel_stats.pth").unlink()
    engine = get_engine("xtts")
    with pytest.raises(BaseModelError) as refused:  # no base chosen yet
        engine.describe_base_model(folder)
    assert "missing dvae.pth, mel_stats.pth" in str(refused.value)
    assert "download-base-model DIR --engine xtts" in str(refused.value)
    app_settings.set_value(engine.base_model_setting, str(base))
    described = engine.describe_base_model(folder)
    assert described.endswith(f"; dvae.pth and mel_stats.pth from the XTTS v2 base model in {base}.")
    model = load_inference_model(folder)  # speaks with the user's GPT, the base's mel statistics
    assert torch.allclose(model.gpt.text_embedding.weight, load_gpt(base)[0].state_dict()["text_embedding.weight"] * 0.5)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.pth", "vocab.json"]