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
from tests.benchmarks.scripts import load_script


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
RESULTS = Path(__file__).parents[4] / "benchmarks" / "results"
GPU_RUN = RESULTS / "gpu_kit_2026-11-27_h200_run2" / "parler_memory_profiles_mini_gpu.json"
GPU_RECORDS = json.loads(GPU_RUN.read_text(encoding="utf-8"))
# Parler's own settings (its README's: 3 x 8 clips, torch AdamW) ran with Flan-T5 and DAC on the card in every
# step and torch's default allocator; the app never trains that way and the engine's estimate does not describe it.
PROFILES = [r for r in GPU_RECORDS if r["profile"] != "parler-baseline"]
# The kit's third run the same day: Mini (each profile, filled by the estimate of then) and Large v1's Low, whose
# JSON did not come back (8 files a call): their lines in its log, each case run with its profile's settings as
# the second run's record of that profile shows them (the line has the micro-batch, the clip and the peak).
RUN3_LOG = RESULTS / "gpu_kit_2026-11-27_h200_run3" / "gpu_more_2026-11-27.log"
_read = load_script("profile_cases.py").read_summaries
LOG_CASES = ([dict(line, size="mini") for line in _read(RUN3_LOG, "Parler-TTS Mini")
              if line["profile"] != "parler-baseline"]
             + [dict(line, size="large") for line in _read(RUN3_LOG, "Parler-TTS Large, Low")])


def estimate_of(case: dict, settings: dict):
    """The engine's estimate of a case: its micro-batch, accumulation and clip, its profile's ``settings``."""
    config = dataclasses.replace(
        TrainConfig(engine="parler"), batch_size=case["micro_batch"], grad_accum_steps=case["grad_accum"],
        max_audio_seconds=case["clip_s"], mixed_precision=settings["precision"], optimizer=settings["optimizer"],
        lora_rank=settings["lora_rank"], gradient_checkpointing=settings["gradient_checkpointing"])
    return get_engine("parler").estimate_memory(config, parameters=m.TRAINABLE_PARAMETERS[case.get("size", "mini")])


@pytest.mark.parametrize("record", PROFILES, ids=[r["profile"] for r in PROFILES])
def test_the_estimate_is_at_most_2_percent_under_and_10_percent_over_the_peak_measured_on_the_h200(record):
    """Until this run the overhead was 10 % plus 0.35 GiB and gradients were always added to the activations:
    Low 3.14 (+33 %), Medium 6.84, High 14.60, Auto 20.36 GiB (+22 %). Then the allocator's 2 % with cuBLAS's
    workspace and, without accumulation, the larger of gradients and activations: Low 2.58 (+9.5 %), its
    checkpointed layers' inputs counted in fp32 (the calibration's fp32-weight model) where Low's bf16 frozen
    weights pass bf16 ones; counted in bf16 (2.24, -5 %), what the card reserved above what it allocated (0.18 to
    0.33 GiB, 0.18 for Low) was then short: :data:`~.memory_estimate.RESERVE_GIB`."""
    assert record["device"].startswith("NVIDIA H200") and record["date"] == "2026-11-27" and "error" not in record
    assert record["model_params"] == m.TRAINABLE_PARAMETERS["mini"]
    estimate = estimate_of(record, record)
    assert estimate.calibrated
    measured = record["peak_reserved_gib"]
    assert measured * 0.98 <= estimate.total_gib <= measured * 1.10, (record["profile"], estimate, measured)


@pytest.mark.parametrize("case", LOG_CASES, ids=[f"{c['size']}-{c['profile']}" for c in LOG_CASES])
def test_the_third_runs_cases_are_held_from_its_log(case):
    """Large v1's Low (8 x 1, 6.31 GiB) was 14.4 % over (7.21) while a checkpointed layer's input was counted in
    fp32: 48 layers x 8 clips of 912 positions x 1,536 values, 1.0 GiB too much; Mini's at the micro-batches the
    estimate of then filled (Medium 8 x 1 instead of 4 x 2)."""
    settings = {r["profile"]: r for r in PROFILES}[case["profile"]]
    assert (case["clip_s"], settings["clip_s"]) == (10.0, 10.0)
    estimate = estimate_of(case, settings)
    assert estimate.calibrated
    measured = case["peak_reserved_gib"]
    assert measured * 0.98 <= estimate.total_gib <= measured * 1.10, (case, estimate, measured)


def test_the_third_runs_log_has_every_case():
    assert [(c["size"], c["profile"], c["micro_batch"], c["grad_accum"]) for c in LOG_CASES] == [
        ("mini", "low", 8, 1), ("mini", "medium", 8, 1), ("mini", "high", 4, 2), ("mini", "auto", 8, 1),
        ("large", "low", 8, 1)]


def test_low_keeps_bf16_layer_inputs_measured_on_the_cpu():
    """Low's checkpointed layers keep their bf16 inputs: half what the fp32-weight model's calibration counts."""
    for size in m.SIZES:
        per_position, calibrated = m.load_calibration(size)
        assert calibrated
        assert per_position["bf16_lora"]["layer_input"][1] == pytest.approx(2 * m.SIZES[size]["hidden_size"])
        assert per_position["bf16"]["layer_input"][1] == pytest.approx(4 * m.SIZES[size]["hidden_size"])
    low = m.ParlerSetting(size="large", batch_size=8, gradient_checkpointing=True, lora_rank=16)
    fp16 = m.estimate(dataclasses.replace(low, mixed_precision="fp16"))  # frozen weights stay fp32 under fp16
    inputs = 8 * 48 * 2 * 1536 * m.positions(10.0) / m.GIB
    assert fp16.activations_gib - m.estimate(low).activations_gib == pytest.approx(inputs)


def test_every_profile_and_parlers_own_settings_were_measured():
    assert [r["profile"] for r in GPU_RECORDS] == ["low", "medium", "high", "auto", "parler-baseline"]
    assert all(r["size"] == "mini" and r["clip_s"] == 10.0 for r in GPU_RECORDS)
