"""F5-TTS on a real CUDA GPU: each memory profile trains the tiny F5 model through the training loop (auto with its
micro-batch probe), fp16 with loss scaling and the EMA on the card, and preview (A/B) and both export formats of a
CUDA-trained checkpoint. The real-size DiT trains in the card rehearsal (test_card_rehearsal_cuda.py) and in the
kit's F5 memory benchmark.

The runs go through ``build_train_config`` (the builder the CLI and the Train page share) and
``alltalk_gui.core.training.loop.train`` in this process, on the espeak-ng dataset of the XTTS tests."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

QUICK = {"max_steps": 3, "memory_interval_s": 0.0, "lr": 1e-4, "eval_each_epoch": False}


def train_f5(project: Path, base: Path, run: str, profile: str, **settings) -> list:
    """Train the F5 engine on ``project`` with ``profile`` adapted to this card, plus ``settings``; the events."""
    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.loop import train
    from alltalk_gui.core.training.run_config import build_train_config

    built = build_train_config(VoiceProject.open(project), base, profile=profile, devices=list_devices(),
                               overrides={**QUICK, "run_name": run, "device": "cuda", **settings}, engine="f5")
    return list(train(built.config))


def assert_trained_on_cuda(events: list, steps: int) -> None:
    """The run trained ``steps`` steps on CUDA with finite losses, sampled CUDA memory and said so at the end."""
    from alltalk_gui.core.training.events import Done, Error, Memory, Started, Step

    errors = [e.message for e in events if isinstance(e, Error)]
    assert not errors, errors[0][-3000:]
    started = next(e for e in events if isinstance(e, Started))
    assert started.device.startswith("cuda"), started.device
    losses = [e.loss for e in events if isinstance(e, Step)]
    assert len(losses) == steps and all(math.isfinite(x) for x in losses), losses
    done = events[-1]
    assert isinstance(done, Done) and done.reason in ("max_steps", "finished"), done
    assert done.peak_memory_gib and done.peak_memory_gib > 0, done
    memory = [e for e in events if isinstance(e, Memory)]
    assert memory and "cuda_peak_reserved" in memory[-1].stats, memory[-1:]


def _config(events: list) -> dict:
    from alltalk_gui.core.training.events import Started

    return next(e for e in events if isinstance(e, Started)).config


@pytest.mark.parametrize("profile", ["low", "medium", "high"])
def test_each_f5_profile_trains_on_cuda(gpu_project, tiny_f5_gpu, profile):
    import torch

    events = train_f5(gpu_project, tiny_f5_gpu, f"f5_profile_{profile}", profile)
    assert_trained_on_cuda(events, steps=3)
    config = _config(events)
    assert config["engine"] == "f5" and config["profile"] == profile
    assert config["mixed_precision"] == ("bf16" if torch.cuda.is_bf16_supported() else "fp16")
    if profile == "low":
        from alltalk_gui.core.training.events import Started

        started = next(e for e in events if isinstance(e, Started))
        assert config["lora_rank"] > 0 and config["gradient_checkpointing"]
        assert started.trainable_parameters < 100_000  # the adapters only (the tiny DiT has 0.19 M parameters)
    if profile == "medium":
        # On CUDA the 8-bit optimizer is kept (bitsandbytes runs): no fallback to AdamW.
        assert config["optimizer"] == "adamw8bit" and config["gradient_checkpointing"]
    if profile == "high":
        assert config["optimizer"] == "adamw" and config["lora_rank"] == 0 and not config["gradient_checkpointing"]


def test_f5_auto_probes_the_micro_batch_on_the_card(gpu_project, tiny_f5_gpu):
    from alltalk_gui.core.training.events import MicroBatch
    from alltalk_gui.core.training.profiles import load_profile

    events = train_f5(gpu_project, tiny_f5_gpu, "f5_profile_auto", "auto")
    assert_trained_on_cuda(events, steps=3)
    config = _config(events)
    assert config["auto_micro_batch"] is True and config["profile"] in ("low", "medium", "high")
    probe = [e for e in events if isinstance(e, MicroBatch) and e.cause == "probe"]
    assert probe, "auto sizing sent no probe result"
    wanted = load_profile(config["profile"], "f5").settings
    assert probe[0].effective_batch == wanted["batch_size"] * wanted["grad_accum_steps"], probe[0]
    assert probe[0].micro_batch * probe[0].grad_accum == probe[0].effective_batch, probe[0]


def test_f5_fp16_loss_scaling_and_the_ema_on_the_card(gpu_project, tiny_f5_gpu):
    """Pre-Ampere cards train in fp16 with a GradScaler (forced here on any card); the EMA (an fp32 copy of the
    model) lives on the card, is updated every step and saved with the checkpoint, which preview then uses."""
    import torch

    events = train_f5(gpu_project, tiny_f5_gpu, "f5_fp16_ema", "high", mixed_precision="fp16", ema_decay=0.9)
    assert_trained_on_cuda(events, steps=3)
    assert _config(events)["mixed_precision"] == "fp16"
    checkpoint = Path(events[-1].last_checkpoint)
    from alltalk_gui.core.engines.f5.tuned import EMA_STATE, tuned_cfm

    assert (checkpoint / EMA_STATE).is_file()
    tuned = tuned_cfm(tiny_f5_gpu, checkpoint)
    assert tuned.ema and tuned.step == 3
    assert all(torch.isfinite(p).all() for p in tuned.cfm.parameters())


@pytest.fixture(scope="module")
def f5_cuda_checkpoint(gpu_project, tiny_f5_gpu):
    """A LoRA run (low) trained and saved on CUDA: its adapters are merged when preview and export load it."""
    events = train_f5(gpu_project, tiny_f5_gpu, "f5_voice", "low", max_steps=4, save_every_steps=2)
    assert_trained_on_cuda(events, steps=4)
    from alltalk_gui.core.training.checkpoints import read_checkpoint

    return read_checkpoint(events[-1].last_checkpoint)


def test_f5_preview_on_cuda_from_a_cuda_checkpoint_with_the_base_model(f5_cuda_checkpoint, gpu_project, tmp_path):
    from alltalk_gui.core.dataset.metadata import TRAIN_CSV, read_metadata
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.voice.preview import GenerationSettings, PreviewEngine, generate_ab

    dataset = VoiceProject.open(gpu_project).dataset_dir
    row = read_metadata(dataset / TRAIN_CSV)[0]  # F5 speaks after a reference clip and needs its exact words
    engine = PreviewEngine(device="cuda", engine="f5")
    base, tuned = generate_ab(engine, checkpoint=f5_cuda_checkpoint, text="Hello from the graphics card.",
                              references=[dataset / row.audio_file], reference_text=row.text, language="en",
                              settings=GenerationSettings(options={"steps": 8}), out_dir=tmp_path)
    import soundfile as sf

    for take in (base, tuned):
        audio, rate = sf.read(take.wav)
        assert rate == 24000 and len(audio) > rate // 10 and np.isfinite(audio).all(), take.wav
    voice = engine.model(f5_cuda_checkpoint.base_model_dir, f5_cuda_checkpoint.weights)
    assert next(voice.cfm.parameters()).device.type == "cuda"


@pytest.mark.parametrize("fmt", ["alltalk", "f5"])
def test_f5_export_of_a_cuda_checkpoint_loads_on_the_cpu(f5_cuda_checkpoint, tmp_path, fmt):
    from safetensors.torch import load_file

    from alltalk_gui.core.engines.f5.files import find_weights, validate_base_model
    from alltalk_gui.core.voice.export import ExportOptions, export_voice

    result = export_voice(f5_cuda_checkpoint, tmp_path, ExportOptions(format=fmt, name="gpu_f5_voice"))
    info = validate_base_model(result.folder)  # every tensor with its shape, the vocabulary and the vocoder
    assert info.ema_keys and info.has_vocoder
    # Saved from CUDA tensors, the export must still load on a machine without a GPU; the adapters are merged.
    state = load_file(str(find_weights(result.folder)), device="cpu")
    assert state and not any("lora_" in k for k in state)
    assert all(t.device.type == "cpu" and t.isfinite().all() for t in state.values() if t.is_floating_point())
