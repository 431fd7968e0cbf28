"""build_train_config: project, then profile (adapted to the device), then the user's values, for CLI and GUI."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from alltalk_gui.core.machine.gpu import DeviceInfo
from alltalk_gui.core.training.config import ConfigError, TrainConfig
from alltalk_gui.core.training.profiles import load_profile
from alltalk_gui.core.training.run_config import build_train_config, training_device

CPU = DeviceInfo(kind="cpu", index=0, name="Test CPU", total_gib=24.0, free_gib=20.0, bf16=True, cores=2)
SMALL = DeviceInfo(kind="cuda", index=0, name="Small GPU", total_gib=8.0, free_gib=5.0, bf16=True, capability="8.6")
BIG = DeviceInfo(kind="cuda", index=1, name="Big GPU", total_gib=80.0, free_gib=78.0, bf16=True, capability="9.0")
PROJECT = SimpleNamespace(root=Path("/voices/anna"), language="de")


def test_without_a_profile_it_is_the_defaults_with_the_project_and_the_user_values():
    built = build_train_config(PROJECT, "/models/xtts", overrides={"epochs": 3}, pairs=["lr=1e-5"])
    assert built.profile is None and built.notes == [] and built.estimate_gib is None
    expected = TrainConfig(project_dir="/voices/anna", base_model_dir="/models/xtts", language="de", epochs=3,
                           lr=1e-5)
    assert built.config == expected


def test_the_user_values_win_over_the_profile_which_is_adapted_to_the_cpu():
    built = build_train_config(PROJECT, "/models/xtts", profile="medium", devices=[CPU],
                               overrides={"batch_size": 1}, pairs=["epochs=2"])
    medium = load_profile("medium").settings
    assert built.profile == "medium" and built.device == CPU
    assert built.config.profile == "medium" and built.config.batch_size == 1 and built.config.epochs == 2
    assert built.config.grad_accum_steps == medium["grad_accum_steps"]
    assert built.config.optimizer == "adamw" and built.config.mixed_precision == "no"  # no 8-bit, no bf16 on a CPU
    assert any("8-bit" in note for note in built.notes)
    assert built.estimate_gib is None  # the GPU estimate is given for CUDA devices only


def test_auto_picks_for_the_gpu_with_the_most_free_memory_and_sizes_its_micro_batch():
    built = build_train_config(PROJECT, "/models/xtts", profile="auto", devices=[SMALL, BIG, CPU])
    assert training_device([SMALL, BIG, CPU]) == BIG and built.device == BIG
    assert built.profile == "high" and built.auto_reason and "Big GPU" in built.auto_reason
    assert built.config.profile == "high" and built.config.auto_micro_batch
    assert 0 < built.estimate_gib < BIG.free_gib


def test_a_pick_made_elsewhere_counts_as_auto():
    built = build_train_config(None, "", profile="low", devices=[SMALL], auto=True)
    assert built.config.auto_micro_batch and built.auto_reason is None
    assert built.config.project_dir == "" and built.config.language == ""


def test_a_bad_key_value_pair_is_refused():
    with pytest.raises(ConfigError, match="Unknown training setting 'batch_sise'"):
        build_train_config(PROJECT, "/models/xtts", pairs=["batch_sise=2"])
