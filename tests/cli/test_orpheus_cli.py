"""An Orpheus-TTS voice from the command line, as real processes on the tiny Orpheus model: a new project for
Orpheus, train with a profile (its engine option set by name), preview A/B as the run's speaker name with Orpheus's
sampling flags, export both formats; the refusals on the way; and ``make-test-model --engine orpheus``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from alltalk_gui.cli import main
from alltalk_gui.core.engines.orpheus.files import validate_base_model
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.testing.speech import make_speech_dataset
from tests.cli.test_train_cli import cli
from tests.orpheus_tiny import tiny_orpheus_folder

FAST = ["--set", "device=cpu", "--set", "lr=0.003", "--set", "lr_batch=0", "--set", "warmup_steps=0",
        "--set", "base_weights=fp32", "--set", "checkpoint_every_epochs=1"]


@pytest.fixture(scope="module")
def tiny_orpheus(tmp_path_factory) -> Path:
    return tiny_orpheus_folder(tmp_path_factory)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("voice") / "voice"
    assert main(["new", str(root), "--language", "en", "--engine", "orpheus"]) == 0  # in-process: no torch needed
    assert VoiceProject.open(root).engine == "orpheus"
    make_speech_dataset(root / "dataset", n_train=3, n_eval=1, speaker="voice")
    return root


@pytest.fixture(scope="module")
def trained(project, tiny_orpheus) -> Path:
    result = cli("train", str(project), "--base-model", str(tiny_orpheus), "--profile", "low", "--epochs", "1",
                 "--run", "orpheus", *FAST)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "Profile low:" in result.stdout and "Done (finished) after step" in result.stdout
    return project


def test_train_uses_orpheus_profile_and_its_option(trained):
    events = [json.loads(line) for line in (trained / "runs" / "orpheus" / "events.jsonl").read_text().splitlines()]
    config = next(e for e in events if e["type"] == "started")["config"]
    assert config["engine"] == "orpheus" and config["profile"] == "low" and config["lora_rank"] == 16
    assert config["options"] == {"base_weights": "fp32"} and config["mixed_precision"] == "no"
    steps = [e for e in events if e["type"] == "step"]
    assert steps and all(set(s["parts"]) == {"audio_ce", "end_ce"} for s in steps)
    assert (trained / "runs" / "orpheus" / "speakers.json").read_text().count("voice") == 1


def test_preview_ab_as_the_speaker_name(trained, tmp_path):
    out = tmp_path / "hello.wav"
    result = cli("preview", str(trained), "--text", "Hello there.", "--out", str(out), "--ab",
                 "--max-seconds", "0.9", "--temperature", "0.7", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    assert 'speaker: "voice"' in result.stdout  # the name it speaks as, not an empty list of clips
    assert out.is_file() and (tmp_path / "hello_base.wav").is_file()
    info = json.loads(out.with_suffix(".json").read_text())
    assert info["reference_text"] == "voice" and info["sample_rate"] == 24000  # the run's speaker, suggested
    assert info["settings"]["options"]["temperature"] == 0.7 and info["references"] == []


@pytest.mark.parametrize("fmt, files", [("orpheus", ("model.safetensors", "config.json", "snac/config.json")),
                                        ("lora", ("adapter_model.safetensors", "adapter_config.json"))])
def test_export_writes_both_formats(trained, tmp_path, fmt, files):
    result = cli("export", str(trained), "--format", fmt, "--out", str(tmp_path), "--name", "voice")
    assert result.returncode == 0, result.stderr
    folder = tmp_path / "voice"
    assert all((folder / name).is_file() for name in files)
    assert "`voice`" in (folder / "README.md").read_text()
    if fmt == "orpheus":
        validate_base_model(folder)  # an exported voice is a base folder itself


def test_export_without_a_format_writes_the_engines_own(trained, tmp_path):
    """Orpheus has no format AllTalk loads: the default is its Hugging Face folder, not a refusal."""
    result = cli("export", str(trained), "--out", str(tmp_path), "--name", "plain")
    assert result.returncode == 0, result.stderr
    assert "as orpheus format" in result.stdout and (tmp_path / "plain" / "model.safetensors").is_file()


def test_refusals(trained, tiny_orpheus, capsys):
    # In-process (the same code as the command, without another interpreter's start): both are refused before any
    # model loads.
    assert main(["train", str(trained), "--base-model", str(tiny_orpheus), "--profile", "low", "--run", "bad",
                 "--set", "lora_rank=0", "--set", "base_weights=nf4", "--set", "device=cpu"]) != 0
    said = capsys.readouterr()
    assert "lora_rank" in said.err + said.out
    assert main(["train", str(trained), "--base-model", str(tiny_orpheus), "--set", "ema_decay=0.9"]) != 0
    assert "ema_decay" in capsys.readouterr().err


def test_make_test_model_writes_a_tiny_orpheus(tmp_path, capsys):
    assert main(["make-test-model", str(tmp_path / "tiny"), "--engine", "orpheus-tts"]) == 0
    assert "tiny random Orpheus-TTS 3B test model" in capsys.readouterr().out
    assert validate_base_model(tmp_path / "tiny").parameters < 1_000_000



def test_half_says_an_orpheus_export_is_always_16_bit(trained, tmp_path):
    result = cli("export", str(trained), "--out", str(tmp_path), "--half")
    assert result.returncode == 0, result.stderr
    assert "Orpheus-TTS 3B's exports always hold the weights in 16 bits: --half changes nothing." in result.stdout
