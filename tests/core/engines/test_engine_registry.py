"""The engine boundary: the registry finds XTTS v2, F5-TTS and Orpheus-TTS by name, refuses unknown names, and the engine's answers are the
ones its own modules give (base-model check, text check, memory estimate only for the real-size model)."""

from __future__ import annotations

import pytest

from alltalk_gui.core.engine_api.engine import (DEFAULT_ENGINE, BaseModelError, EngineError, engine_name, engine_names,
                                             get_engine, language_note)
from alltalk_gui.core.engines.xtts.memory_estimate import XTTS_V2, estimate
from alltalk_gui.core.training import cpu_estimate
from alltalk_gui.core.training.config import ConfigError, TrainConfig


def test_the_registry_finds_the_engines_by_name_or_alias_and_refuses_an_unknown_name():
    assert DEFAULT_ENGINE == "xtts" and engine_names() == ("xtts", "f5", "orpheus", "parler")
    engine = get_engine("xtts")
    assert engine is get_engine("xtts-v2") and engine.title == "XTTS v2"
    assert engine.sample_rate == 22050 and engine.output_sample_rate == 24000 and engine.max_clip_ms == 11609
    f5 = get_engine("f5")
    assert f5 is get_engine("f5-tts") and engine_name("f5-tts") == "f5" and f5.title == "F5-TTS v1"
    assert f5.sample_rate == f5.output_sample_rate == 24000 and f5.max_clip_ms == 30000
    orpheus = get_engine("orpheus-tts")
    assert orpheus.name == "orpheus" and orpheus.sample_rate == orpheus.output_sample_rate == 24000
    assert orpheus.max_clip_ms == 30000
    parler = get_engine("parler-tts")
    assert parler.name == "parler" and parler.sample_rate == parler.output_sample_rate == 44_100
    assert engine.environment is None and f5.environment is None and parler.environment is not None
    for each in (engine, f5, orpheus, parler):  # what the set-up pages and the settings file need, with no torch loaded
        assert each.name in engine_names() and each.licence.url.startswith("https://")
        assert set(each.export_format_titles) == set(each.export_formats)
        assert each.base_model_setting and each.download_size.startswith("about")
        assert cpu_estimate._calibration(each.name)["mean_step_s"]["no"] > 0  # Auto's CPU case needs its speed
    with pytest.raises(EngineError, match="Unknown engine 'vall-e'; the engines are xtts, f5, orpheus, parler"):
        get_engine("vall-e")


def test_a_config_naming_no_registered_engine_is_refused():
    config = TrainConfig(engine="vall-e", project_dir="p", base_model_dir="b")
    with pytest.raises(ConfigError, match="engine must be one of xtts, f5, orpheus, parler"):
        config.validate(cuda_available=False)


@pytest.mark.parametrize("engine, setting, value", [("xtts", "ema_decay", 0.999),
                                                    ("xtts", "add_missing_characters", True),
                                                    ("f5", "freeze_conditioning", True),
                                                    ("f5", "text_ce_weight", 0.1)])
def test_a_setting_of_another_engine_is_refused_by_name(engine, setting, value):
    config = TrainConfig(engine=engine, project_dir="p", base_model_dir="b", options={setting: value})
    refusal = f"{setting} is a setting of .*; it does nothing for {get_engine(engine).title}"
    with pytest.raises(ConfigError, match=refusal):
        config.validate(cuda_available=False)
    with pytest.raises(ConfigError, match=refusal):
        TrainConfig(engine=engine).with_values({setting: value})
    with pytest.raises(ConfigError, match=refusal):
        TrainConfig(engine=engine).with_overrides([f"{setting}={value}"])
    TrainConfig(engine=engine, project_dir="p", base_model_dir="b").validate(cuda_available=False)


def test_the_language_note_says_where_an_engine_falls_short():
    assert language_note(get_engine("xtts"), "de") == ""
    assert language_note(get_engine("f5"), "en") == language_note(get_engine("f5"), "zh-cn") == ""
    assert "English and Chinese" in language_note(get_engine("f5"), "de")


def test_base_model_checks_go_through_the_engine(tiny, tmp_path):
    engine = get_engine("xtts")
    facts = engine.validate_base_model(tiny)
    assert facts.parameters == facts.gpt_parameters > 0
    with pytest.raises(BaseModelError, match="model.pth"):
        engine.validate_base_model(tmp_path)


def test_the_memory_estimate_is_for_the_real_size_model_only():
    engine, config = get_engine("xtts"), TrainConfig()
    assert engine.estimate_memory(config).total_gib == estimate(config).total_gib
    assert engine.estimate_memory(config, parameters=XTTS_V2.gpt_params) is not None
    assert engine.estimate_memory(config, parameters=1234) is None  # the tiny test model
    # A Low run asks with its model's parameters, LoRA's adapters among them (7,864,320 at rank 16: counted on the
    # real GPT with the engine's add_lora_adapters).
    low = config.with_values({"lora_rank": 16, "gradient_checkpointing": True})
    assert engine.estimate_memory(low, parameters=XTTS_V2.gpt_params + 7_864_320).total_gib == estimate(low).total_gib


def test_the_text_check_comes_from_the_engine():
    checker = get_engine("xtts").text_checker("ru")
    assert checker.problem("Привет, мир") is None and "'h'" in checker.problem("hello")
