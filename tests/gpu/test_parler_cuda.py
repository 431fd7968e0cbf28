"""Parler-TTS on a real CUDA GPU, in its own environment as the app runs it: each memory profile trains the tiny
Parler model through the training child (auto with its micro-batch probe; Medium keeps 8-bit AdamW; Low keeps the
frozen weights in bf16), DDP in one process (NCCL, world size 1: the model wrapped as for several GPUs), and preview
and export of a CUDA-trained checkpoint. The real-size step per profile is benchmarks/parler_memory_profiles.py.

The engine's environment comes from the kit's wheels (``ALLTALK_GUI_ENGINE_PIP_ARGS="--no-index --find-links
<bundles>"``) when the machine has none yet: the GPU machine has no package index."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

QUICK = {"max_steps": 3, "memory_interval_s": 0.0, "lr": 1e-4, "eval_each_epoch": False}


@pytest.fixture(scope="session")
def parler_gpu(tmp_path_factory) -> Path:
    """The engine's environment (made from the kit's wheels if needed) and the tiny Parler model made with it."""
    from alltalk_gui.core.engine_api import environment
    from alltalk_gui.core.engine_api.engine import get_engine

    engine = get_engine("parler")
    environment.create(engine.environment, progress=print)
    return engine.make_test_model(tmp_path_factory.mktemp("tiny_parler_gpu") / "tiny")


def train_parler(project: Path, base: Path, run: str, profile: str, env: dict[str, str] | None = None,
                 **settings) -> list[dict]:
    """Train through the launcher's child (the engine's environment) with ``profile`` adapted to this card."""
    import json
    import os

    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.launch import start_training
    from alltalk_gui.core.training.run_config import build_train_config

    built = build_train_config(VoiceProject.open(project), base, profile=profile, devices=list_devices(),
                               overrides={**QUICK, "run_name": run, "device": "cuda", "max_audio_seconds": 30.0,
                                          "min_audio_seconds": 1.0, **settings}, engine="parler")
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        child = start_training(built.config, lower_priority=False)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert child.process.wait(timeout=900) == 0
    return [json.loads(line) for line in child.events_path.read_text(encoding="utf-8").splitlines() if line.strip()]


def assert_trained_on_cuda(events: list[dict], steps: int) -> dict:
    errors = [e["message"] for e in events if e["type"] == "error"]
    assert not errors, errors[0][-3000:]
    started = next(e for e in events if e["type"] == "started")
    assert started["device"].startswith("cuda"), started["device"]
    losses = [e["loss"] for e in events if e["type"] == "step"]
    assert len(losses) == steps and all(math.isfinite(x) for x in losses), losses
    assert events[-1]["type"] == "done" and events[-1]["peak_memory_gib"] > 0
    return started


@pytest.mark.parametrize("profile", ["low", "medium", "high", "auto"])
def test_each_parler_profile_trains_on_cuda(gpu_project, parler_gpu, profile):
    import torch

    started = assert_trained_on_cuda(train_parler(gpu_project, parler_gpu, f"parler_{profile}", profile), steps=3)
    config = started["config"]
    assert config["engine"] == "parler"
    assert config["mixed_precision"] == ("bf16" if torch.cuda.is_bf16_supported() else "fp16")
    if profile == "low":
        assert config["lora_rank"] > 0 and config["gradient_checkpointing"]
    if profile == "medium":
        assert config["optimizer"] == "adamw8bit" and config["gradient_checkpointing"]
    if profile == "high":
        assert config["optimizer"] == "adamw" and not config["gradient_checkpointing"]
    if profile == "auto":
        assert config["auto_micro_batch"]


def test_ddp_in_one_process_on_cuda(gpu_project, parler_gpu):
    """What accelerate does under ``accelerate launch`` (a NCCL process group, the model in DDP), with one process:
    the only way one GPU can run it (NCCL refuses two ranks on one device)."""
    from alltalk_gui.core.training.launch import LOOPBACK, free_port

    env = {"LOCAL_RANK": "0", "RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1",
           "MASTER_ADDR": LOOPBACK, "MASTER_PORT": str(free_port())}
    events = train_parler(gpu_project, parler_gpu, "parler_ddp1", "high", env=env)
    started = assert_trained_on_cuda(events, steps=3)
    assert started["processes"] == 1  # one rank of a process group (CPU twin: test_training.py, 2 ranks on gloo)


def test_preview_and_export_of_a_cuda_checkpoint(gpu_project, parler_gpu, tmp_path):
    import soundfile as sf

    from alltalk_gui.core.engine_api.engine import Reference
    from alltalk_gui.core.training.checkpoints import resolve_checkpoint
    from alltalk_gui.core.voice.export import ExportOptions, export_voice
    from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, generate_preview

    assert_trained_on_cuda(train_parler(gpu_project, parler_gpu, "parler_voice", "low"), steps=3)
    checkpoint = resolve_checkpoint(gpu_project, "latest", run="parler_voice")
    engine = PreviewEngine(device="cuda", engine="parler")
    settings = GenerationSettings.for_engine(engine.engine).with_values({"max_seconds": 0.5})
    result = generate_preview(engine, base_model_dir=checkpoint.base_model_dir, checkpoint=checkpoint,
                              text="Hello there.", references=[], language="en", settings=settings, out_dir=tmp_path,
                              reference_text=engine.engine.reference_suggestion(checkpoint))
    audio, rate = sf.read(result.wav, dtype="float32")
    assert rate == 44_100 and audio.size > 0 and np.isfinite(audio).all()
    spoken = engine.synthesize(checkpoint.base_model_dir, None, "Hello.", Reference.description("Anna speaks."), "en",
                               settings)
    assert spoken.size > 0
    engine._models.clear()
    exported = export_voice(checkpoint, tmp_path / "out", ExportOptions(format="parler", name="gpu_voice"))
    assert (exported.folder / "model.safetensors").is_file() and (exported.folder / "description.txt").is_file()
