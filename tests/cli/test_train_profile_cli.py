"""``alltalk-gui train --profile``: a profile fills the config, adapted to this (CPU-only) machine and saved with
the run; --set still overrides it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_train_cli import FAST, cli
from alltalk_gui.testing.speech import make_speech_dataset


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[Path, Path]:
    tiny = tmp_path_factory.mktemp("tiny") / "xtts"
    assert cli("make-test-model", str(tiny)).returncode == 0
    project = tmp_path_factory.mktemp("p") / "voice"
    assert cli("new", str(project)).returncode == 0
    make_speech_dataset(project / "dataset", n_train=2, n_eval=1)
    return project, tiny


def test_auto_on_a_cpu_only_machine_says_so_and_trains_with_the_saved_profile(setup):
    project, tiny = setup
    result = cli("train", str(project), "--base-model", str(tiny), "--profile", "auto", "--run", "auto",
                 "--set", "max_steps=1", *FAST)
    assert result.returncode == 0, result.stderr + result.stdout
    # The CPU time estimate counts the --set max_steps=1 (the tiny dataset is a few seconds of audio).
    assert "Profile (auto): No CUDA GPU was found: training runs on the CPU, about " in result.stdout
    assert " for 1 step on " in result.stdout and " seconds of audio on " in result.stdout
    saved = json.loads((project / "runs" / "auto" / "train_config.json").read_text())
    assert saved["profile"] == "high" and saved["mixed_precision"] == "no"
    assert saved["batch_size"] * saved["grad_accum_steps"] == 8


def test_medium_on_the_cpu_swaps_the_8bit_optimizer_and_set_overrides_the_profile(setup):
    project, tiny = setup
    result = cli("train", str(project), "--base-model", str(tiny), "--profile", "medium", "--run", "medium",
                 "--set", "max_steps=1", "--set", "grad_accum_steps=1", *FAST)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "8-bit optimizers need a CUDA GPU" in result.stdout
    saved = json.loads((project / "runs" / "medium" / "train_config.json").read_text())
    assert (saved["profile"], saved["optimizer"], saved["options"]["freeze_conditioning"]) == ("medium", "adamw", True)
    assert saved["grad_accum_steps"] == 1  # --set wins over the profile


def test_low_trains_lora_adapters(setup):
    project, tiny = setup
    result = cli("train", str(project), "--base-model", str(tiny), "--profile", "low", "--run", "low",
                 "--set", "max_steps=1", *FAST)
    assert result.returncode == 0, result.stderr + result.stdout
    saved = json.loads((project / "runs" / "low" / "train_config.json").read_text())
    assert saved["profile"] == "low" and saved["lora_rank"] == 16
    assert (project / "runs" / "low" / "checkpoints").is_dir()


def test_unknown_profile_is_a_usage_error(setup):
    project, tiny = setup
    result = cli("train", str(project), "--base-model", str(tiny), "--profile", "ultra")
    assert result.returncode == 2 and "invalid choice" in result.stderr
