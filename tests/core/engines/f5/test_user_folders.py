"""A folder F5-TTS's own trainer wrote (``ckpts/<project>/``), chosen as the base model: its newest checkpoint
(``model_last.pt``, as F5-TTS resumes) is the one used, never an older ``model_<update>.pt`` nor the
``pretrained_*`` file it started from; a vocabulary it extended is read with it; missing files are named with where
each comes from; nothing in the folder changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api.engine import BaseModelError, get_engine
from alltalk_gui.core.engines.f5.files import EMBED_KEY, EMA_PREFIX, cfm_state, load_weights, validate_base_model


def trainer_checkpoint(ema: dict, scale: float, update: int, extra_tokens: int = 0) -> dict:
    """As F5-TTS's Trainer.save_checkpoint writes it: model, optimizer, EMA (with initted/step), scheduler, update."""
    ema = {k: v * scale if v.is_floating_point() else v for k, v in ema.items()}
    if extra_tokens:
        key = EMA_PREFIX + EMBED_KEY
        ema[key] = torch.cat([ema[key], torch.randn(extra_tokens, ema[key].shape[1])])
    ema.update(initted=torch.tensor(True), step=torch.tensor(update))
    model = {k.removeprefix(EMA_PREFIX): v for k, v in ema.items() if k.startswith(EMA_PREFIX)}
    return {"model_state_dict": model, "optimizer_state_dict": {"state": {}, "param_groups": []},
            "ema_model_state_dict": ema, "scheduler_state_dict": {"last_epoch": update}, "update": update}


@pytest.fixture()
def ckpts(tiny_f5, tmp_path) -> Path:
    """ckpts/my_voice/ after a fine-tune that extended the vocabulary by two symbols, with its vocab.txt (from
    data/my_voice_pinyin/) and the base's vocoder copied in by the user."""
    ema = load_file(str(next(tiny_f5.glob("model_*.safetensors"))))
    folder = tmp_path / "ckpts" / "my_voice"
    folder.mkdir(parents=True)
    torch.save(trainer_checkpoint(ema, 1.0, 1000, extra_tokens=2), folder / "model_1000.pt")
    torch.save(trainer_checkpoint(ema, 0.5, 1200, extra_tokens=2), folder / "model_last.pt")
    save_file(ema, str(folder / "pretrained_model_1250000.safetensors"))
    vocab = (tiny_f5 / "vocab.txt").read_text(encoding="utf-8")
    (folder / "vocab.txt").write_text(vocab + "ŋ\nʒ\n", encoding="utf-8")
    shutil.copytree(tiny_f5 / "vocos", folder / "vocos")
    shutil.copy(tiny_f5 / "model_cfg.yaml", folder)
    return folder


def test_f5s_trainer_folder_uses_its_newest_checkpoint_and_extended_vocabulary(ckpts):
    before = {p.name: p.stat().st_mtime_ns for p in ckpts.iterdir()}
    info = validate_base_model(ckpts)
    assert info.weights.name == "model_last.pt"  # was model_1000.pt: an older save, silently
    assert info.vocab[-2:] == ["ŋ", "ʒ"]
    state, ema = cfm_state(load_weights(info.weights))
    assert ema and state[EMBED_KEY].shape[0] == len(info.vocab) + 1
    assert "weights from model_last.pt" in get_engine("f5").describe_base_model(ckpts)
    (ckpts / "model_last.pt").unlink()
    assert validate_base_model(ckpts).weights.name == "model_1000.pt"  # the highest update, not pretrained_*
    assert {p.name: p.stat().st_mtime_ns for p in ckpts.iterdir()} == {k: v for k, v in before.items()
                                                                       if k != "model_last.pt"}


def test_the_base_vocabulary_under_an_extended_fine_tune_is_refused(ckpts, tiny_f5):
    shutil.copy(tiny_f5 / "vocab.txt", ckpts / "vocab.txt")
    with pytest.raises(BaseModelError, match="the vocabulary belongs to a different model"):
        validate_base_model(ckpts)


def test_missing_vocabulary_and_vocoder_say_where_each_comes_from(ckpts, tiny_f5, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "settings"))
    app_settings.set_value(get_engine("f5").base_model_setting, str(tiny_f5))
    (ckpts / "vocab.txt").unlink()
    shutil.rmtree(ckpts / "vocos")
    with pytest.raises(BaseModelError) as refused:
        validate_base_model(ckpts)
    message = str(refused.value)
    assert "missing vocab.txt, vocos/config.yaml, vocos/pytorch_model.bin" in message
    assert "data/<project>_pinyin/" in message  # where F5-TTS's fine-tuning keeps an extended vocabulary
    assert (f"vocos/config.yaml and vocos/pytorch_model.bin are the same for every F5-TTS fine-tune: copy them "
            f"from your F5-TTS base model in {tiny_f5} into {ckpts}.") in message
    assert not (ckpts / "vocos").exists() and not (ckpts / "vocab.txt").exists()


def test_the_train_page_counts_the_trainer_folder_as_found(ckpts):
    from alltalk_gui.gui.train.setup_facts import base_model_found, missing_base_files

    f5 = get_engine("f5")
    assert base_model_found(ckpts, f5)  # was "missing: model_*.safetensors" for a folder the CLI trains from
    (ckpts / "model_last.pt").unlink()
    (ckpts / "model_1000.pt").unlink()
    assert missing_base_files(ckpts, f5) == ["model_*.safetensors|model_*.pt"]
