"""Orpheus-TTS on a real CUDA GPU: each memory profile trains the tiny Orpheus model through the training loop
(Low with its base in 4-bit NF4 on the card, High with bitsandbytes' 8-bit AdamW), auto probes its micro-batch,
FSDP trains in one process through ``accelerate launch`` with the app's FSDP config, and a CUDA-trained checkpoint
previews (A/B) and exports. The real-size step per profile is ``benchmarks/orpheus_memory_profiles.py``.

The runs go through ``build_train_config`` (the builder the CLI and the Train page share) and
``alltalk_gui.core.training.loop.train`` in this process, on the espeak-ng dataset of the other GPU tests."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.gpu.test_f5_cuda import assert_trained_on_cuda

QUICK = {"max_steps": 3, "memory_interval_s": 0.0, "lr": 1e-3, "eval_each_epoch": False}


@pytest.fixture(scope="module")
def tiny_orpheus_gpu(tmp_path_factory) -> Path:
    from alltalk_gui.core.engines.orpheus.tiny_model import build_tiny_orpheus

    return build_tiny_orpheus(tmp_path_factory.mktemp("tiny_orpheus_gpu") / "orpheus_tiny")


def train_orpheus(project: Path, base: Path, run: str, profile: str, **settings) -> list:
    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.loop import train
    from alltalk_gui.core.training.run_config import build_train_config

    built = build_train_config(VoiceProject.open(project), base, profile=profile, devices=list_devices(),
                               overrides={**QUICK, "run_name": run, "device": "cuda", **settings}, engine="orpheus")
    return list(train(built.config))


def _config(events: list) -> dict:
    from alltalk_gui.core.training.events import Started

    return next(e for e in events if isinstance(e, Started)).config


@pytest.mark.parametrize("profile", ["low", "medium", "high"])
def test_each_orpheus_profile_trains_on_cuda(gpu_project, tiny_orpheus_gpu, profile):
    events = train_orpheus(gpu_project, tiny_orpheus_gpu, f"orpheus_profile_{profile}", profile)
    assert_trained_on_cuda(events, steps=3)
    config = _config(events)
    assert config["engine"] == "orpheus" and config["profile"] == profile
    weights = config["options"]["base_weights"]
    if profile == "low":
        assert weights == "nf4" and config["lora_rank"] > 0 and config["gradient_checkpointing"]
    if profile == "medium":
        assert weights == "bf16" and config["lora_rank"] > 0
    if profile == "high":
        assert weights == "bf16" and config["lora_rank"] == 0 and config["optimizer"] == "adamw8bit"


def test_the_4bit_base_sits_on_the_card_and_trains_lora(tiny_orpheus_gpu, gpu_project):
    """NF4 weights quantised on the card (bitsandbytes' CUDA kernels), LoRA gradients finite, the loss falls."""
    import torch
    from bitsandbytes.nn import Linear4bit

    from alltalk_gui.core.engines.orpheus.data import Sample, collate
    from alltalk_gui.core.engines.orpheus.files import special_tokens
    from alltalk_gui.core.engines.orpheus.model import OrpheusLM, add_lora, load_lm, loss, set_checkpointing

    special = special_tokens(tiny_orpheus_gpu)
    model = OrpheusLM(load_lm(tiny_orpheus_gpu, "nf4", "cuda"), special)
    layers = [m for m in model.modules() if isinstance(m, Linear4bit)]
    assert layers and all(m.weight.device.type == "cuda" and m.weight.dtype == torch.uint8 for m in layers)
    add_lora(model.lm, 8, 16.0)
    set_checkpointing(model.lm, True)
    model.cuda().train()
    ids = torch.tensor([special.start_of_speech] + [special.audio_base + (i % 7) * special.codebook_size + i % 5
                                                   for i in range(70)] + [special.end_of_speech, special.end_of_ai])
    batch = {k: v.cuda() for k, v in collate([Sample(ids, 1)], special.pad).items()}
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(10):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            value = loss(model, batch)["loss"]
        value.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(value))
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0], losses


def test_orpheus_auto_probes_on_the_card(gpu_project, tiny_orpheus_gpu):
    from alltalk_gui.core.training.events import MicroBatch

    events = train_orpheus(gpu_project, tiny_orpheus_gpu, "orpheus_profile_auto", "auto")
    assert_trained_on_cuda(events, steps=3)
    config = _config(events)
    assert config["auto_micro_batch"] is True and config["profile"] in ("low", "medium", "high")
    assert [e for e in events if isinstance(e, MicroBatch) and e.cause == "probe"]


def test_fsdp_in_one_process_through_accelerate_launch(gpu_project, tiny_orpheus_gpu, tmp_path):
    """The app's FSDP config with one process (a one-GPU machine): accelerate wraps the decoder layers, saves a
    sharded checkpoint, and the export gathers it into a model transformers loads."""
    from transformers import AutoModelForCausalLM

    from alltalk_gui.core.engines.orpheus.fsdp import fsdp_config
    from alltalk_gui.core.training.checkpoints import read_checkpoint
    from alltalk_gui.core.training.config import TrainConfig
    from alltalk_gui.core.training.launch import RUNNER_MODULE, write_launch_config
    from alltalk_gui.core.voice.export import ExportOptions, export_voice

    config_file = tmp_path / "fsdp.yaml"
    config_file.write_text(json.dumps(dict(fsdp_config(2), num_processes=1)))  # YAML reads JSON
    train_config = TrainConfig(engine="orpheus", project_dir=str(gpu_project), base_model_dir=str(tiny_orpheus_gpu),
                               run_name="orpheus_fsdp", device="cuda", language="en", lr=1e-3, max_steps=2,
                               mixed_precision="bf16", batch_size=1, memory_interval_s=0.0, eval_each_epoch=False,
                               max_audio_seconds=30.0, min_audio_seconds=1.0).with_values({"base_weights": "fp32"})
    events = train_config.run_dir / "events.jsonl"
    # The launcher as launch.py starts it for N processes, here with one (the app starts one process directly).
    command = [sys.executable, "-u", "-m", "accelerate.commands.launch", "--config_file", str(config_file),
               "--num_processes", "1", "--main_process_ip", "127.0.0.1", "-m", RUNNER_MODULE,
               "--config", str(write_launch_config(train_config)), "--events", str(events)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    assert lines[-1]["type"] == "done" and lines[-1]["reason"] == "max_steps", lines[-3:]
    checkpoint = Path(lines[-1]["last_checkpoint"])
    assert (checkpoint / "pytorch_model_fsdp_0").is_dir()
    result = export_voice(read_checkpoint(checkpoint), tmp_path, ExportOptions(format="orpheus", name="fsdp_voice"))
    model = AutoModelForCausalLM.from_pretrained(result.folder)
    assert sum(p.numel() for p in model.parameters()) > 0


@pytest.fixture(scope="module")
def orpheus_cuda_checkpoint(gpu_project, tiny_orpheus_gpu):
    """A 4-bit LoRA run (low) trained and saved on CUDA."""
    events = train_orpheus(gpu_project, tiny_orpheus_gpu, "orpheus_voice", "low", max_steps=4, save_every_steps=2)
    assert_trained_on_cuda(events, steps=4)
    from alltalk_gui.core.training.checkpoints import read_checkpoint

    return read_checkpoint(events[-1].last_checkpoint)


def test_orpheus_preview_on_cuda(orpheus_cuda_checkpoint, tmp_path):
    import soundfile as sf

    from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, generate_ab

    engine = PreviewEngine(device="cuda", engine="orpheus")
    base, tuned = generate_ab(engine, checkpoint=orpheus_cuda_checkpoint, text="Hello from the graphics card.",
                              references=[], reference_text="tester", language="en",
                              settings=GenerationSettings(options={"max_seconds": 1.75}), out_dir=tmp_path)
    for take in (base, tuned):
        audio, rate = sf.read(take.wav)
        assert rate == 24000 and len(audio) > rate // 10 and np.isfinite(audio).all(), take.wav
    voice = engine.model(orpheus_cuda_checkpoint.base_model_dir, orpheus_cuda_checkpoint.weights)
    assert next(voice.lm.parameters()).device.type == "cuda"


@pytest.mark.parametrize("fmt", ["orpheus", "lora"])
def test_orpheus_export_of_a_cuda_checkpoint_loads_on_the_cpu(orpheus_cuda_checkpoint, tmp_path, fmt):
    from safetensors.torch import load_file

    from alltalk_gui.core.voice.export import ExportOptions, export_voice

    result = export_voice(orpheus_cuda_checkpoint, tmp_path, ExportOptions(format=fmt, name=f"gpu_orpheus_{fmt}"))
    weights = next(result.folder.glob("*.safetensors"))
    state = load_file(str(weights), device="cpu")
    assert state and all(t.isfinite().all() for t in state.values() if t.is_floating_point())
    assert ("lora_" in next(iter(state))) == (fmt == "lora")
