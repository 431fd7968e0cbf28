"""Orpheus folders made by other tools, chosen as the base model: Unsloth's merged 16-bit folder (a Hugging Face
Llama folder without the SNAC codec) is told where the codec is. A LoRA adapter folder (Unsloth's save_pretrained)
is used on its base: test_adapter_base.py."""

from __future__ import annotations

import shutil

import pytest

from alltalk_gui.core import app_settings
from alltalk_gui.core.engine_api.engine import BaseModelError, get_engine
from alltalk_gui.core.engines.orpheus.files import validate_base_model


def test_a_merged_fine_tune_without_the_codec_is_told_where_it_is(tiny_orpheus, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "settings"))
    merged = tmp_path / "merged_16bit"
    shutil.copytree(tiny_orpheus, merged, ignore=shutil.ignore_patterns("snac"))
    with pytest.raises(BaseModelError, match="download-base-model DIR --engine orpheus"):
        validate_base_model(merged)
    app_settings.set_value(get_engine("orpheus").base_model_setting, str(tiny_orpheus))
    with pytest.raises(BaseModelError) as refused:
        validate_base_model(merged)
    assert str(refused.value) == (
        f"The Orpheus model folder {merged} is missing snac/config.json, snac/pytorch_model.bin. snac/config.json "
        f"and snac/pytorch_model.bin are the same for every Orpheus-TTS fine-tune: copy them from your Orpheus-TTS "
        f"base model in {tiny_orpheus} into {merged}.")
    shutil.copytree(tiny_orpheus / "snac", merged / "snac")  # what the message says to do
    assert "Llama with" in get_engine("orpheus").describe_base_model(merged)
