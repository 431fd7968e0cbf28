"""Parler-TTS on a real CUDA GPU, in its own environment as the app runs it: each memory profile trains the tiny
Parler model through the training child (auto with its micro-batch probe; Medium keeps 8-bit AdamW; Low keeps the
frozen weights in bf16). DDP, preview and export: ``test_parler_ddp_preview_cuda.py``. The real-size step per
profile is benchmarks/parler_memory_profiles.py.

The engine's environment comes from the kit's wheels (``ALLTALK_GUI_ENGINE_PIP_ARGS="--no-index --find-links
<bundles>"``) when the machine has none yet: the GPU machine has no package index."""

from __future__ import annotations

import pytest

from tests.gpu.parler_training import assert_trained_on_cuda, train_parler


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
