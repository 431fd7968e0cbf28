"""Orpheus-TTS's memory estimate against what was measured: the Low, Medium and High profiles at real size (random
weights) on one NVIDIA H200 (2026-11-27, ``benchmarks/results/orpheus_memory_profiles_10s_2026-11-27_gpu.json``:
10 s clips, micro-batch 1 x 8, expandable segments), each within 10 % of its peak reserved memory, and Low never
below it (a 6 GB card must not be promised too little).

That run trained with the loss as it was then: each 256-token chunk of the output projection checkpointed apart,
whose full-size gradients of the tied embedding autograd summed out of place (three 0.9 GiB matrices at once). The
engine's loss now sums them in one buffer in place (``linear_cross_entropy``: two at once, counted on the CPU,
``benchmarks/results/orpheus_embedding_gradient_transient_fused_vs_checkpointed_2026-11-27_cpu.json``), into which
the embedding lookup adds its rows, or both add straight into ``.grad`` (``tied_gradient``: one, or none in a process of
its own, ``..._tied_2026-11-27_cpu.json``), so the
measurement is compared with the estimate of the loss it ran (``fused_loss=False``), made from the settings each case
ran with as the engine makes it (``memory_estimate.setting_for``); the engine's own estimate (``Engine
.estimate_memory``, which the profile picker, Auto and the run's ``memory.json`` ask) is that estimate with the new
loss and lookup: the same for the LoRA profiles, no matrix in High's gradient buffers instead of three. Until a
GPU measures them, High's new estimate rests on those CPU counts."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.engines.orpheus.memory_estimate import (
    FRAGMENTATION, GIB, ORPHEUS_3B, estimate, setting_for,
)
from alltalk_gui.core.training.config import TrainConfig

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
GPU_RUN = RESULTS / "orpheus_memory_profiles_10s_2026-11-27_gpu.json"
RECORDS = json.loads(GPU_RUN.read_text(encoding="utf-8"))


def config_of(record: dict) -> TrainConfig:
    """The TrainConfig a benchmark case ran with (its recorded settings)."""
    return dataclasses.replace(
        TrainConfig(), engine="orpheus", batch_size=record["micro_batch"], grad_accum_steps=record["grad_accum"],
        max_audio_seconds=record["clip_s"], mixed_precision=record["precision"],
        optimizer="adamw8bit" if "8bit" in record["optimizer"] else "adamw", lora_rank=record["lora_rank"],
        gradient_checkpointing=record["gradient_checkpointing"], options={"base_weights": record["base_weights"]})


def measured_loss_estimate(record: dict):
    """The estimate of the case with the loss the H200 run trained with (the checkpointed chunks)."""
    return estimate(setting_for(config_of(record), fused_loss=False))


@pytest.mark.parametrize("record", RECORDS, ids=[r["profile"] for r in RECORDS])
def test_the_estimate_is_within_10_percent_of_the_peak_measured_on_the_h200(record):
    assert record["device"].startswith("NVIDIA H200") and record["date"] == "2026-11-27" and "error" not in record
    estimate = measured_loss_estimate(record)
    assert estimate.calibrated
    measured = record["peak_reserved_gib"]
    assert estimate.total_gib == pytest.approx(measured, rel=0.10), (record["profile"], estimate, measured)
    if record["profile"] == "low":
        assert estimate.total_gib >= measured, (estimate, measured)


def test_the_estimate_explains_highs_gradient_buffers_and_nothing_else_has_them():
    """Full training's tied embedding: its gradient buffers are what High allocated beyond the other parts."""
    parts = {r["profile"]: measured_loss_estimate(r) for r in RECORDS}
    assert parts["low"].gradient_buffers_gib == parts["medium"].gradient_buffers_gib == 0.0
    high = next(r for r in RECORDS if r["profile"] == "high")
    rest = parts["high"].total_gib - parts["high"].overhead_gib - parts["high"].gradient_buffers_gib
    assert high["peak_allocated_gib"] - rest == pytest.approx(parts["high"].gradient_buffers_gib, rel=0.10)


def test_each_profile_was_measured_with_its_own_settings():
    cases = {r["profile"]: r for r in RECORDS}
    assert set(cases) == {"low", "medium", "high"}
    assert (cases["low"]["base_weights"], cases["medium"]["base_weights"], cases["high"]["base_weights"]) == (
        "nf4", "bf16", "bf16")
    assert cases["high"]["lora_rank"] == 0 and cases["high"]["optimizer"] == "adamw8bit"


@pytest.mark.parametrize("record", RECORDS, ids=[r["profile"] for r in RECORDS])
def test_the_engines_estimate_is_the_measured_one_with_the_new_loss(record):
    """The engine asks about the loss and lookup it trains with on one card: LoRA profiles as measured; High one
    bf16 embedding-sized gradient buffer less for the loss (two at once instead of three), one with the lookup
    adding its rows into the loss's buffer (under torch.distributed), and none where both add straight into
    ``.grad``."""
    # No ``parameters``: the benchmark counted Low's NF4 weights as stored (two to a byte), not the model's 3.3 B.
    engines = get_engine("orpheus").estimate_memory(config_of(record))
    assert engines == estimate(setting_for(config_of(record)))
    old = measured_loss_estimate(record)
    unshared = estimate(setting_for(config_of(record), tied_gradient="separate"))
    handed = estimate(setting_for(config_of(record), tied_gradient="handed"))
    matrix = ORPHEUS_3B.embedding * 2 / GIB
    if record["profile"] == "high":
        assert old.gradient_buffers_gib - unshared.gradient_buffers_gib == pytest.approx(matrix)
        assert old.total_gib - unshared.total_gib == pytest.approx(matrix * (1 + FRAGMENTATION))
        assert handed.gradient_buffers_gib == pytest.approx(matrix) and engines.gradient_buffers_gib == 0.0
        assert 0.3 < unshared.total_gib - handed.total_gib < matrix
    else:
        assert engines == old == unshared == handed
