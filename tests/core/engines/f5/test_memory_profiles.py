"""F5 memory estimate and profiles: the profiles are valid training settings in the shared TOML format, each
estimate fits its profile's target, and the calibration's checkpointing figure is what the shapes say."""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from pathlib import Path

import pytest

from alltalk_gui.core.engines.f5.memory_estimate import (
    V1_BASE_PARAMETERS,
    F5Setting,
    estimate,
    load_calibration,
    lora_parameters,
    saved_tensor_bytes,
)
from alltalk_gui.core.training.config import TrainConfig

PROFILES = Path(__file__).resolve().parents[4] / "resources" / "profiles" / "f5"


def read_profile(name: str) -> dict:
    return tomllib.loads((PROFILES / f"{name}.toml").read_text(encoding="utf-8"))


def setting_of(settings: dict) -> F5Setting:
    return F5Setting(batch_size=settings["batch_size"], max_clip_seconds=settings["max_audio_seconds"],
                     mixed_precision=settings["mixed_precision"],
                     gradient_checkpointing=settings["gradient_checkpointing"], optimizer=settings["optimizer"],
                     lora_rank=settings["lora_rank"])


@pytest.mark.parametrize("name", ["low", "medium", "high"])
def test_profile_is_a_valid_training_setting_and_its_estimate_fits(name):
    data = read_profile(name)
    assert set(data) == {"title", "summary", "target_gib", "settings"}  # the format of resources/profiles/*.toml
    hints = typing.get_type_hints(TrainConfig)
    for key, value in data["settings"].items():
        assert key in hints and (isinstance(value, hints[key]) or hints[key] is float and isinstance(value, int)), key
    config = dataclasses.replace(TrainConfig(engine="f5", project_dir="-", base_model_dir="-"), **data["settings"])
    config.validate(cuda_available=True)
    total = estimate(setting_of(data["settings"])).total_gib
    assert total <= data["target_gib"], (name, total)


def test_issue_targets_and_ordering():
    totals = {name: estimate(setting_of(read_profile(name)["settings"])).total_gib for name in ("low", "medium", "high")}
    assert totals["low"] <= 4.0 and totals["medium"] <= 8.0
    assert totals["low"] < totals["medium"] < totals["high"]


def test_estimate_parts_follow_the_levers():
    full = estimate(F5Setting(batch_size=1, mixed_precision="bf16"))
    assert full.gradients_gib == pytest.approx(V1_BASE_PARAMETERS * 4 / 1024**3)
    assert full.optimizer_gib == pytest.approx(2 * full.gradients_gib)
    eight_bit = estimate(F5Setting(batch_size=1, mixed_precision="bf16", optimizer="adamw8bit"))
    assert eight_bit.optimizer_gib == pytest.approx(full.optimizer_gib / 4)
    checkpointed = estimate(F5Setting(batch_size=1, mixed_precision="bf16", gradient_checkpointing=True))
    assert checkpointed.activations_gib < full.activations_gib / 5
    assert estimate(F5Setting(batch_size=2, mixed_precision="bf16")).activations_gib == pytest.approx(
        2 * full.activations_gib)
    assert estimate(F5Setting(batch_size=1, max_clip_seconds=10)).activations_gib < estimate(F5Setting(
        batch_size=1, max_clip_seconds=30)).activations_gib
    assert estimate(F5Setting(ema=True)).weights_gib > estimate(F5Setting()).weights_gib
    assert lora_parameters(16) == 22 * 16 * (8 * 1024 + 2 * 3072)


def test_calibration_file_is_used_and_checkpointing_keeps_the_block_input():
    per_frame, calibrated = load_calibration()
    assert calibrated
    assert per_frame["fp32"]["block_input"][1] == pytest.approx(1024 * 4)  # one fp32 vector of width 1024 a frame
    # Measured again here on a real-width DiT (depth 2 minus depth 1, checkpointed, fp32).
    kept = saved_tensor_bytes(96, 2, "fp32", True) - saved_tensor_bytes(96, 1, "fp32", True)
    assert kept == 96 * 1024 * 4
