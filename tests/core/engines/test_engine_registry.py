"""The engine boundary: the registry finds XTTS v2 by name, refuses unknown names, and the engine's answers are the
ones its own modules give (base-model check, text check, memory estimate only for the real-size model)."""

from __future__ import annotations

import pytest

from alltalk_gui.core.engines.engine import DEFAULT_ENGINE, BaseModelError, EngineError, engine_names, get_engine
from alltalk_gui.core.engines.xtts.memory_estimate import XTTS_V2, estimate
from alltalk_gui.core.training.config import ConfigError, TrainConfig


def test_the_registry_finds_xtts_and_refuses_an_unknown_name():
    assert DEFAULT_ENGINE == "xtts" and "xtts" in engine_names()
    engine = get_engine("xtts")
    assert engine is get_engine() and engine.title == "XTTS v2"
    assert engine.sample_rate == 22050 and engine.output_sample_rate == 24000 and engine.max_clip_ms == 11609
    with pytest.raises(EngineError, match="Unknown engine 'f5'; the engines are xtts"):
        get_engine("f5")


def test_a_config_naming_no_registered_engine_is_refused():
    config = TrainConfig(engine="f5", project_dir="p", base_model_dir="b")
    with pytest.raises(ConfigError, match="engine must be one of xtts"):
        config.validate(cuda_available=False)


def test_base_model_checks_go_through_the_engine(tiny, tmp_path):
    engine = get_engine()
    facts = engine.validate_base_model(tiny)
    assert facts.parameters == facts.gpt_parameters > 0
    with pytest.raises(BaseModelError, match="model.pth"):
        engine.validate_base_model(tmp_path)


def test_the_memory_estimate_is_for_the_real_size_model_only():
    engine, config = get_engine(), TrainConfig()
    assert engine.estimate_memory(config).total_gib == estimate(config).total_gib
    assert engine.estimate_memory(config, parameters=XTTS_V2.gpt_params) is not None
    assert engine.estimate_memory(config, parameters=1234) is None  # the tiny test model


def test_the_text_check_comes_from_the_engine():
    checker = get_engine().text_checker("ru")
    assert checker.problem("Привет, мир") is None and "'h'" in checker.problem("hello")
