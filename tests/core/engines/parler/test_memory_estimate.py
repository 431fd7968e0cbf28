"""The Parler-TTS memory estimate and profiles: measured coefficients, the profiles inside their targets on 10 s
clips (Mini: Low <= 4, Medium <= 8, High <= 16 GiB; Large Low <= 8 GiB), Parler's own settings above High, no
estimate for a size it does not know (the tiny model), and every profile measured on a GPU held by its estimate."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.engines.parler import memory_estimate as m
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.profiles import load_profile


def config_of(profile: str, **kw) -> TrainConfig:
    return TrainConfig(engine="parler", **{**load_profile(profile, "parler").settings, **kw})


@pytest.mark.parametrize("profile, size, target", [("low", "mini", 4.0), ("medium", "mini", 8.0),
                                                   ("high", "mini", 16.0), ("low", "large", 8.0)])
def test_each_profile_is_estimated_inside_its_target(profile, size, target):
    settings = load_profile(profile, "parler").settings
    setting = m.ParlerSetting(size=size, batch_size=settings["batch_size"], max_clip_seconds=10.0,
                              mixed_precision=settings["mixed_precision"],
                              gradient_checkpointing=settings["gradient_checkpointing"],
                              optimizer=settings["optimizer"], lora_rank=settings["lora_rank"])
    estimate = m.estimate(setting)
    assert estimate.calibrated and estimate.total_gib <= target
    # A 30 s clip (2,713 positions) fits the Mini profiles too.
    if size == "mini":
        assert m.estimate(m.ParlerSetting(**{**setting.__dict__, "max_clip_seconds": 30.0})).total_gib <= target


def test_parlers_own_settings_need_more_than_high():
    """Parler's README: 3 clips a micro-batch, no checkpointing, bf16, AdamW (before counting its T5 and DAC)."""
    own = m.estimate(m.ParlerSetting(size="mini", batch_size=3, mixed_precision="bf16", optimizer="adamw"))
    high = m.estimate(m.ParlerSetting(size="mini", batch_size=1, mixed_precision="bf16", optimizer="adamw"))
    assert own.total_gib > high.total_gib and own.activations_gib > 2.5 * high.activations_gib


def test_the_parts_follow_the_levers():
    full = m.estimate(m.ParlerSetting(size="mini", lora_rank=0, optimizer="adamw"))
    eight_bit = m.estimate(m.ParlerSetting(size="mini", lora_rank=0, optimizer="adamw8bit"))
    lora = m.estimate(m.ParlerSetting(size="mini", lora_rank=16))
    checkpointed = m.estimate(m.ParlerSetting(size="mini", gradient_checkpointing=True))
    assert eight_bit.optimizer_gib == pytest.approx(full.optimizer_gib / 4)
    assert lora.gradients_gib < 0.05 and lora.weights_gib < 0.6 * full.weights_gib  # frozen weights in bf16
    assert checkpointed.activations_gib < 0.3 * full.activations_gib
    assert m.lora_parameters(16, "mini") == 24 * 16 * (8 * 2048 + 2 * (1024 + 4096)) == 10_223_616


def test_the_engine_estimates_the_published_sizes_only(tiny_parler):
    engine = get_engine("parler")
    assert engine.estimate_memory(config_of("low")).total_gib == pytest.approx(
        m.estimate(m.ParlerSetting(size="mini", batch_size=2, max_clip_seconds=30.0, gradient_checkpointing=True,
                                   lora_rank=16, grad_accum_steps=4)).total_gib)
    assert engine.estimate_memory(config_of("low"), parameters=m.TRAINABLE_PARAMETERS["large"]).weights_gib > 3
    tiny = engine.validate_base_model(tiny_parler).parameters
    assert engine.estimate_memory(config_of("low"), parameters=tiny) is None


def test_disk_needs_come_from_the_folders_headers(tiny_parler, tmp_path):
    engine = get_engine("parler")
    info = engine.validate_base_model(tiny_parler)
    full = engine.disk_needs(TrainConfig(engine="parler", base_model_dir=str(tiny_parler)))
    assert full.checkpoint_bytes == info.parameters * (4 + 8) + (1 << 20)
    assert full.export_bytes >= (tiny_parler / "model.safetensors").stat().st_size
    lora = engine.disk_needs(TrainConfig(engine="parler", base_model_dir=str(tiny_parler), lora_rank=4,
                                         mixed_precision="bf16"))
    adapters = m.lora_parameters(4, info.decoder)
    assert lora.checkpoint_bytes == info.parameters * 2 + adapters * (4 + 8) + (1 << 20) < full.checkpoint_bytes
    assert engine.disk_needs(TrainConfig(engine="parler", base_model_dir=str(tmp_path))) is None


def test_the_cpu_time_is_calibrated_by_the_measured_medium_step():
    """A machine without a CUDA GPU is told how long a Parler run takes (the Train page's Auto, ``alltalk-gui gpu``):
    from the benchmark's real-size Medium step on 2 cores, which recomputed its forward pass."""
    import json
    from pathlib import Path

    from alltalk_gui.core.training import cpu_estimate

    rows = json.loads((Path(__file__).parents[4] / "benchmarks" / "results" /
                       "parler_memory_profiles_mini_2026-11-26_cpu.json").read_text(encoding="utf-8"))
    medium = next(r for r in rows if r["profile"] == "medium")
    assert medium["gradient_checkpointing"] and medium["precision"] == "no" and medium["threads"] == 2
    measured = medium["step_s"] / (medium["micro_batch"] * medium["clip_s"])
    assert cpu_estimate.seconds_per_audio_second(2, "no", True, engine="parler") == pytest.approx(measured, rel=1e-4)
    run = cpu_estimate.estimate_cpu(TrainConfig(engine="parler", epochs=10, eval_each_epoch=False),
                                    cpu_estimate.DatasetSize(100, 360.0), cores=2)
    assert run.hours == pytest.approx(10 * 360 * measured / 1.33 / 3600, rel=1e-3)  # TrainConfig: no checkpointing


# Mini v1 at real size (random weights) on an NVIDIA H200, 10 s clips, expandable segments (2026-11-27).
GPU_RUN = (Path(__file__).parents[4] / "benchmarks" / "results" / "gpu_kit_2026-11-27_h200_run2"
           / "parler_memory_profiles_mini_gpu.json")
GPU_RECORDS = json.loads(GPU_RUN.read_text(encoding="utf-8"))
# Parler's own settings (its README's: 3 x 8 clips, torch AdamW) ran with Flan-T5 and DAC on the card in every
# step and torch's default allocator; the app never trains that way and the engine's estimate does not describe it.
PROFILES = [r for r in GPU_RECORDS if r["profile"] != "parler-baseline"]


@pytest.mark.parametrize("record", PROFILES, ids=[r["profile"] for r in PROFILES])
def test_the_estimate_is_at_most_2_percent_under_and_10_percent_over_the_peak_measured_on_the_h200(record):
    """Until this run the overhead was 10 % plus 0.35 GiB and gradients were always added to the activations:
    Low 3.14 (+33 %), Medium 6.84, High 14.60, Auto 20.36 GiB (+22 %). Now the allocator's 2 % (reserved was 0.18 to
    0.33 GiB above allocated) with cuBLAS's workspace and, without accumulation, the larger of gradients and
    activations. Low stays the highest (+10 % at most): its activation figures were counted under CPU autocast,
    with the frozen embeddings' saved tensors, which LoRA never keeps (F5's count shows how much that is)."""
    assert record["device"].startswith("NVIDIA H200") and record["date"] == "2026-11-27" and "error" not in record
    config = dataclasses.replace(
        TrainConfig(engine="parler"), batch_size=record["micro_batch"], grad_accum_steps=record["grad_accum"],
        max_audio_seconds=record["clip_s"], mixed_precision=record["precision"], optimizer=record["optimizer"],
        lora_rank=record["lora_rank"], gradient_checkpointing=record["gradient_checkpointing"])
    estimate = get_engine("parler").estimate_memory(config, parameters=record["model_params"])
    assert estimate.calibrated
    measured = record["peak_reserved_gib"]
    assert measured * 0.98 <= estimate.total_gib <= measured * 1.10, (record["profile"], estimate, measured)


def test_every_profile_and_parlers_own_settings_were_measured():
    assert [r["profile"] for r in GPU_RECORDS] == ["low", "medium", "high", "auto", "parler-baseline"]
    assert all(r["size"] == "mini" and r["clip_s"] == 10.0 for r in GPU_RECORDS)
