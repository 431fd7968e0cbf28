"""TrainConfig holds the settings every engine reads; an engine's own are held by name in ``options``, reached by
name from profiles, ``--set`` and the Advanced panel, saved in the run's config, and read back from a run saved
before engines owned their settings."""

from __future__ import annotations

import json

import pytest

from alltalk_gui.core.engine_api.engine import engine_names, get_engine
from alltalk_gui.core.training.config import ConfigError, TrainConfig, incompatible_for_resume

# A run's train_config.json as the app wrote it before engines owned their settings: every engine's fields side by
# side, the other engine's at their defaults (its validate refused anything else).
OLD_XTTS_RUN = {
    "project_dir": "/p", "engine": "xtts", "base_model_dir": "/b", "run_name": "r", "dataset_dir": "", "language": "en",
    "epochs": 10, "max_steps": 0, "batch_size": 2, "grad_accum_steps": 4, "num_workers": 0, "bucket_batches": 8,
    "lr": 1e-05, "lr_batch": 8, "beta1": 0.9, "beta2": 0.96, "weight_decay": 0.01, "optimizer": "adamw",
    "lr_schedule": "constant", "warmup_steps": 20, "max_grad_norm": 1.0, "mixed_precision": "no",
    "gradient_checkpointing": True, "lora_rank": 0, "lora_alpha": 32.0, "lora_dropout": 0.05,
    "freeze_conditioning": True, "auto_micro_batch": False, "profile": "medium", "device": "auto",
    "max_audio_seconds": 11.6, "min_audio_seconds": 0.5, "max_text_tokens": 200, "min_conditioning_seconds": 3.0,
    "max_conditioning_seconds": 6.0, "text_ce_weight": 0.01, "mel_ce_weight": 1.0, "ema_decay": 0.0,
    "add_missing_characters": False, "save_every_steps": 0, "keep_last": 2, "eval_each_epoch": True,
    "checkpoint_every_epochs": 1, "seed": 1, "memory_interval_s": 0.5,
}


def test_an_old_flat_config_reads_as_its_engines_options_and_saves_in_the_new_shape(tmp_path):
    config = TrainConfig.from_dict(OLD_XTTS_RUN)
    assert config.engine == "xtts" and config.gradient_checkpointing and config.grad_accum_steps == 4
    assert config.options == {"freeze_conditioning": True, "max_text_tokens": 200, "min_conditioning_seconds": 3.0,
                              "max_conditioning_seconds": 6.0, "text_ce_weight": 0.01, "mel_ce_weight": 1.0}
    assert config.engine_options().freeze_conditioning is True
    path = tmp_path / "train_config.json"
    path.write_text(json.dumps(config.to_dict()), encoding="utf-8")
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert "ema_decay" not in saved and saved["options"]["freeze_conditioning"] is True
    assert TrainConfig.load(path) == config
    # An F5 run of that time: XTTS's fields at their defaults are dropped, F5's become its options.
    old_f5 = {**OLD_XTTS_RUN, "engine": "f5", "freeze_conditioning": False, "ema_decay": 0.999}
    assert TrainConfig.from_dict(old_f5).options == {"ema_decay": 0.999, "add_missing_characters": False}


def test_an_old_config_resumes_against_a_new_one_built_the_same_way():
    old = TrainConfig.from_dict(OLD_XTTS_RUN)
    new = TrainConfig(project_dir="/p", base_model_dir="/b", run_name="r", language="en").with_values(
        {k: v for k, v in OLD_XTTS_RUN.items() if k not in ("ema_decay", "add_missing_characters")})
    assert incompatible_for_resume(old, new) == []
    assert incompatible_for_resume(old, new.with_values({"mel_ce_weight": 2.0})) == ["mel_ce_weight"]
    # Options left at the engine's defaults compare equal to options written out in full.
    assert incompatible_for_resume(TrainConfig(), TrainConfig(options=get_engine("xtts").train_options().to_dict())) == []


def test_a_bad_saved_config_names_the_setting():
    with pytest.raises(ConfigError, match="ema_decay is a setting of F5-TTS v1; it does nothing for XTTS v2"):
        TrainConfig.from_dict({**OLD_XTTS_RUN, "ema_decay": 0.5})  # never allowed: refused, not dropped
    with pytest.raises(ConfigError, match="Unknown training setting 'batch_sise'"):
        TrainConfig.from_dict({"engine": "xtts", "options": {}, "batch_sise": 2})
    with pytest.raises(ConfigError, match="options must be a JSON object"):
        TrainConfig.from_dict({"engine": "xtts", "options": [1]})
    bad_type = TrainConfig.from_dict({"engine": "xtts", "options": {"max_text_tokens": "many"}})
    with pytest.raises(ConfigError, match="XTTS v2: Option.*max_text_tokens must be int"):
        bad_type.validate(cuda_available=False)


def test_values_by_name_reach_fields_and_options_alike():
    config = TrainConfig(engine="f5").with_values({"epochs": 3, "ema_decay": 0.99})
    assert (config.epochs, config.options, config.value("ema_decay"), config.value("epochs")) == \
        (3, {"ema_decay": 0.99}, 0.99, 3)
    assert config.kind("ema_decay") is float and config.kind("add_missing_characters") is bool
    switched = TrainConfig().with_values({"engine": "f5", "add_missing_characters": True})
    assert switched.engine == "f5" and switched.engine_options().add_missing_characters
    with pytest.raises(ConfigError, match="Unknown training setting 'warp_factor' for F5-TTS v1"):
        config.with_values({"warp_factor": 9})


@pytest.mark.parametrize("engine", engine_names())
def test_every_engines_profiles_set_only_what_it_has(engine):
    from alltalk_gui.core.training.profiles import PROFILE_NAMES, apply_profile

    for name in PROFILE_NAMES:
        config = apply_profile(TrainConfig(engine=engine, project_dir="p", base_model_dir="b"), name)
        assert set(config.options) <= set(get_engine(engine).train_options.names())
        config.validate(cuda_available=True)
