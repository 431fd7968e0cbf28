"""The engines' memory estimates against what was measured: every memory profile (and Auto's pick) of both engines
at real size on an NVIDIA H100 80GB HBM3 (2026-11-26, ``benchmarks/results/*memory_profiles_2026-11-26_gpu.json``)
and on an NVIDIA H200 (2026-11-27, ``*memory_profiles_2026-11-27_gpu_h200.json``; and again with the front end
cached and the XTTS GPT streamlined, Low and High filling 8 x 1 where the card allows,
``gpu_kit_2026-11-27_h200_run2/``; the third run, ``_run3/``, with every profile), never more than 2 % under its
peak reserved memory (an estimate under the peak lets Auto or the micro-batch fill run a tight card out of memory)
nor more than 10 % over it; the app's own runs on the card rehearsal's pretended cards (``card_rehearsal_*.json``)
the same way; and the CPU's resident memory where glibc was told to return freed buffers
(``MALLOC_MMAP_THRESHOLD_``; with its defaults it keeps a few GiB more, which no estimate predicts).

The estimate is asked through the engine (``Engine.estimate_memory``), with the settings each case ran with, as
the profile picker, Auto and the run's ``memory.json`` ask it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.engines.xtts import memory_estimate
from alltalk_gui.core.training.config import TrainConfig

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
RUN2 = "gpu_kit_2026-11-27_h200_run2/"
RUN3 = "gpu_kit_2026-11-27_h200_run3/"
EVERY_PROFILE = ("low", "medium", "high", "auto")
# (engine, result file, the card it names, the day, the profiles it measured)
GPU_RUNS = [("xtts", "memory_profiles_2026-11-26_gpu.json", "NVIDIA H100", "2026-11-26", EVERY_PROFILE),
            ("f5", "f5_memory_profiles_2026-11-26_gpu.json", "NVIDIA H100", "2026-11-26", EVERY_PROFILE),
            ("xtts", "memory_profiles_2026-11-27_gpu_h200.json", "NVIDIA H200", "2026-11-27", EVERY_PROFILE),
            ("f5", "f5_memory_profiles_2026-11-27_gpu_h200.json", "NVIDIA H200", "2026-11-27", EVERY_PROFILE),
            # The kit's second H200 run had time for Low and High only (Medium and Auto were skipped: gpu_more.log).
            ("xtts", RUN2 + "memory_profiles_2026-11-27_gpu.json", "NVIDIA H200", "2026-11-27", ("low", "high")),
            ("f5", RUN2 + "f5_memory_profiles_2026-11-27_gpu.json", "NVIDIA H200", "2026-11-27", ("low", "high")),
            # The third: Low, High and the baselines in one call, Medium and Auto in another.
            ("xtts", RUN3 + "memory_profiles_2026-11-27_gpu.json", "NVIDIA H200", "2026-11-27", ("low", "high")),
            ("f5", RUN3 + "f5_memory_profiles_2026-11-27_gpu.json", "NVIDIA H200", "2026-11-27", ("low", "high")),
            ("xtts", RUN3 + "memory_profiles_medium_auto_gpu.json", "NVIDIA H200", "2026-11-27", ("medium", "auto")),
            ("f5", RUN3 + "f5_memory_profiles_medium_auto_gpu.json", "NVIDIA H200", "2026-11-27", ("medium", "auto"))]
BASELINES = ("alltalk-baseline", "f5-baseline")
UNDER, OVER = 0.02, 0.10  # how far under and over its peak an estimate may be
# Cases allowed further over, and why (the safe side: the card is not run out of memory, only under-filled).
# F5's Low at 4 x 2 (the app's fill of Low on this card): its checkpointed LoRA clips cost the card 0.32 GiB each
# (between 1 x 8 and 4 x 2), the estimate 0.50. Counted on the CPU, LoRA's frozen embeddings and output keep
# nothing a frame, where the estimate counts the whole model's 0.25 GiB a clip; left out, the estimate falls
# 9-13 % under every Low peak: the card holds about 0.08 GiB a clip more than the layers' inputs and one recomputed
# block (that block's backward, not counted yet), so the whole model's figure stands in for it until it is.
FURTHER_OVER = {("f5", RUN2 + "f5_memory_profiles_2026-11-27_gpu.json", "low"): 0.30,
                ("f5", RUN3 + "f5_memory_profiles_2026-11-27_gpu.json", "low"): 0.30,  # 4 x 2 again: +24.8 %
                ("f5", RUN3 + "card_rehearsal_2026-11-27.json", "low"): 0.30}  # the Low button: 4 x 2, +24.5 %
# The card rehearsals: the app's own runs (Auto, the Low VRAM button) at real size on pretended cards.
REHEARSALS = [RUN3 + "card_rehearsal_2026-11-27.json"]


def records(engine: str, name: str) -> list[dict]:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def config_of(engine: str, record: dict) -> TrainConfig:
    """The TrainConfig a benchmark case ran with (its recorded settings)."""
    settings = dict(engine=engine, batch_size=record["micro_batch"], grad_accum_steps=record["grad_accum"],
                    max_audio_seconds=record["clip_s"], mixed_precision=record["precision"],
                    optimizer="adamw8bit" if "8bit" in record["optimizer"] else "adamw",
                    lora_rank=record["lora_rank"], gradient_checkpointing=record["gradient_checkpointing"])
    if engine == "xtts":
        settings["options"] = {"freeze_conditioning": record["freeze_conditioning"]}
    else:
        settings["options"] = {"ema_decay": 0.999 if record["ema"] else 0.0}
    return dataclasses.replace(TrainConfig(), **settings)


GPU_CASES = [(engine, name, card, day, r) for engine, name, card, day, _ in GPU_RUNS for r in records(engine, name)]


def _run_of(name: str) -> str:
    return next((f"-{run.rstrip('/').rsplit('_', 1)[-1]}" for run in (RUN2, RUN3) if name.startswith(run)), "")


@pytest.mark.parametrize("engine, name, card, day, record", GPU_CASES,
                         ids=[f"{e}-{c.split()[-1]}{_run_of(n)}-{r['profile']}" for e, n, c, _, r in GPU_CASES])
def test_the_estimate_is_at_most_2_percent_under_and_10_percent_over_the_peak_measured_on_a_gpu(
        engine, name, card, day, record):
    assert record["device"].startswith(card) and record["date"] == day
    if engine == "xtts" and not record.get("streamlined"):
        # AllTalk's baseline, and our runs measured before training streamlined the GPT (fused GELU and
        # conditioning attention, ``engines/xtts/streamline.py``): they kept coqui's composite GELU's tensors.
        estimate = memory_estimate.estimate(config_of(engine, record), streamlined=False).total_gib
    else:
        estimate = get_engine(engine).estimate_memory(config_of(engine, record)).total_gib
    if engine == "xtts" and "front_end_once" not in record:
        # The DVAE's fp32 weights were on the card beside the GPT: in AllTalk's baseline (coqui's GPTTrainer holds
        # it) and in our runs measured before the front end was cached per clip (the app's runs no longer keep it
        # there, and the estimate no longer counts it).
        from alltalk_gui.core.engines.xtts.memory_estimate import GIB, XTTS_V2

        estimate += 4 * XTTS_V2.dvae_params / GIB
    if record["profile"] in BASELINES:
        # The references' own settings ran with torch's default allocator (no expandable segments, which the app's
        # training switches on): it reserved 0.6-2.0 GiB above what it allocated, which the estimate, made for the
        # app's runs, leaves out. Against what was allocated:
        measured = record["peak_allocated_gib"]
    else:
        measured = record["peak_reserved_gib"]
    over = FURTHER_OVER.get((engine, name, record["profile"]), OVER)
    assert measured * (1 - UNDER) <= estimate <= measured * (1 + over), (record["profile"], estimate, measured)


def test_every_profile_of_both_engines_was_measured():
    for engine, name, _, _, profiles in GPU_RUNS:
        cases = {r["profile"] for r in records(engine, name)}
        assert set(profiles) <= cases, (engine, name, cases)


def rehearsal_config(row: dict) -> TrainConfig:
    """The TrainConfig a rehearsal case trained with: its profile's settings, the micro-batch x accumulation it
    ran, and its clips' length (every clip as long as the engine trains on: ``benchmarks/gpu/rehearsal_inputs.py``),
    for which the run asks its estimate (``profiles.sized_for``)."""
    from alltalk_gui.core.training.profiles import profile_settings
    from tests.benchmarks.scripts import load_script

    inputs = load_script("gpu/rehearsal_inputs.py")
    settings, _ = profile_settings(row["profile"], engine=row["engine"])
    return TrainConfig().with_values({**settings, "engine": row["engine"], "batch_size": row["micro_batch"],
                                      "grad_accum_steps": row["grad_accum"],
                                      "max_audio_seconds": inputs.F5_CLIP_S if row["engine"] == "f5" else
                                      inputs.XTTS_CLIP_S})


REHEARSED = [(name, row) for name in REHEARSALS for row in json.loads((RESULTS / name).read_text(encoding="utf-8"))
             if row["outcome"] == "trained"]


@pytest.mark.parametrize("name, row", REHEARSED, ids=[row["case"] for _, row in REHEARSED])
def test_the_app_runs_on_the_rehearsals_cards_peak_where_the_estimate_says(name, row):
    """Each trained case of the card rehearsal: its peak within 2 % under and 10 % over the estimate, as the
    benchmark's. Where Auto's probe ran, the rehearsal of 2026-11-27 recorded the probe inside the run's peak (the
    app has kept it apart since: ``loop._end_the_probes_memory_window``), and a probe whose micro-batch did not fit
    fills the allocator up to Auto's cap before it fails: F5 High at 2 x 4 on the 16 GiB card read 13.93 GiB
    against an estimate of 12.31, its cap being 13.94; the same steps peak at 12.26 in the memory benchmark
    (``RUN3`` above, held within the band). Those rows are held to what they measured: the cap, over which the
    estimate puts the size the probe tried last (one clip more than it chose, accumulating as it tries it) too."""
    from alltalk_gui.core.training.profiles import AUTO_HEADROOM, profile_settings

    config = rehearsal_config(row)
    estimate = get_engine(row["engine"]).estimate_memory(config).total_gib
    measured = row["peak_reserved_gib"]
    if row["probed"] and "probe_peak_reserved_gib" not in row:  # the probe inside the peak
        cap = AUTO_HEADROOM * row["allowed_gib"]
        settings, _ = profile_settings(row["profile"], engine=row["engine"])
        if row["micro_batch"] < settings["batch_size"] * settings["grad_accum_steps"]:  # the probe cut it
            bigger = get_engine(row["engine"]).estimate_memory(config.with_values(
                {"batch_size": row["micro_batch"] + 1})).total_gib
            assert measured == pytest.approx(cap, abs=0.02) and bigger > cap, (measured, cap, bigger)
        else:  # the probe's one pass at the full size, then the steps: the peak is at least the steps'
            over = FURTHER_OVER.get((row["engine"], name, row["profile"]), OVER)
            assert estimate <= measured * (1 + over) and measured <= cap + 0.02, (estimate, measured, cap)
        return
    over = FURTHER_OVER.get((row["engine"], name, row["profile"]), OVER)
    assert measured * (1 - UNDER) <= estimate <= measured * (1 + over), (row["case"], estimate, measured)


@pytest.mark.parametrize("profile", ["low", "medium", "high", "f5-baseline"])
def test_the_cpu_estimate_is_within_10_percent_of_resident_memory_without_glibcs_kept_buffers(profile):
    record = next(r for r in records("f5", "f5_memory_profiles_2026-11-26_cpu_mmap64k.json") if r["profile"] == profile)
    assert record["malloc_mmap_threshold"] == "65536"
    estimate = get_engine("f5").estimate_memory(config_of("f5", record), attention_scores=True).total_gib
    assert estimate == pytest.approx(record["peak_rss_gib"], rel=0.10), (profile, estimate, record["peak_rss_gib"])
