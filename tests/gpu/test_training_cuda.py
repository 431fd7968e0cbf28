"""Training on a real CUDA GPU: each memory profile through the command line and auto's micro-batch probe. fp16
loss scaling, a real out-of-memory error and its recovery, and an exact resume are in
test_training_recovery_cuda.py (a file of their own so that the kit's test processes share the work evenly)."""

from __future__ import annotations

import pytest

from tests.gpu.kit import assert_trained, of_type, train_cli


@pytest.mark.parametrize("profile", ["low", "medium", "high"])
def test_each_profile_trains_on_cuda(gpu_project, tiny_gpu, profile):
    events = train_cli(gpu_project, tiny_gpu, f"profile_{profile}", "--profile", profile)
    assert_trained(events, steps=3)
    config = of_type(events, "started")[0]["config"]
    import torch

    expected_precision = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    assert config["mixed_precision"] == expected_precision
    if profile == "low":
        assert config["lora_rank"] > 0 and config["gradient_checkpointing"]
        started = of_type(events, "started")[0]
        assert started["trainable_parameters"] < 1_000_000  # the adapters only
    if profile == "medium":
        # On CUDA the 8-bit optimizer is kept (bitsandbytes runs): no fallback to AdamW.
        assert config["optimizer"] == "adamw8bit" and config["gradient_checkpointing"]
    if profile == "high":
        assert config["optimizer"] == "adamw" and config["lora_rank"] == 0


def test_auto_probes_the_micro_batch_on_the_card(gpu_project, tiny_gpu):
    events = train_cli(gpu_project, tiny_gpu, "profile_auto", "--profile", "auto")
    assert_trained(events, steps=3)
    config = of_type(events, "started")[0]["config"]
    assert config["auto_micro_batch"] is True and config["profile"] in ("low", "medium", "high")
    probe = [e for e in of_type(events, "micro_batch") if e["cause"] == "probe"]
    assert probe, "auto sizing sent no probe result"
    # The effective batch the profile asked for is kept whatever the probe found.
    from alltalk_gui.core.training.profiles import load_profile

    wanted = load_profile(config["profile"]).settings
    assert probe[0]["effective_batch"] == wanted["batch_size"] * wanted["grad_accum_steps"], probe[0]
    assert probe[0]["micro_batch"] * probe[0]["grad_accum"] == probe[0]["effective_batch"], probe[0]
