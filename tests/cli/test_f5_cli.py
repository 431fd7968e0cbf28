"""An F5-TTS voice from the command line, as real processes on the tiny F5 model: download (from a local Hub,
after the licence), train with a profile, preview A/B, export both formats; and the refusals on the way."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from alltalk_gui.core.engine_api.engine import engine_names
from alltalk_gui.core.engines.f5.files import validate_base_model
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.testing.speech import make_speech_dataset
from tests.cli.test_train_cli import cli
from tests.core.engines.f5.test_download import LocalHub, hub_files

FAST = ["--set", "device=cpu", "--set", "lr=0.003", "--set", "lr_batch=0", "--set", "warmup_steps=0"]


@pytest.fixture(scope="module")
def tiny_f5(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny") / "f5tts_v1_tiny"
    result = cli("make-test-model", str(folder), "--engine", "f5-tts")
    assert result.returncode == 0, result.stderr
    return folder


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("voice") / "voice"
    assert cli("new", str(root), "--language", "en").returncode == 0
    make_speech_dataset(root / "dataset", n_train=3, n_eval=1)
    return root


@pytest.fixture(scope="module")
def trained(project, tiny_f5) -> Path:
    result = cli("train", str(project), "--engine", "f5-tts", "--base-model", str(tiny_f5), "--profile", "low",
                 "--epochs", "2", "--run", "f5", *FAST)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "Profile low:" in result.stdout and "Done (finished) after step 2" in result.stdout
    # --engine switched the project first and said so; its dataset was made by hand, so it stays at 22,050 Hz.
    assert "The project now trains with F5-TTS v1 instead of XTTS v2." in result.stdout
    assert "so it stays as it is, at 22,050 Hz; F5-TTS v1 trains at 24 kHz" in result.stdout
    return project


def test_train_uses_the_engines_profile_and_says_how_it_was_adapted(trained):
    events = [json.loads(line) for line in (trained / "runs" / "f5" / "events.jsonl").read_text().splitlines()]
    started = next(e for e in events if e["type"] == "started")
    config = started["config"]
    assert config["engine"] == "f5" and config["profile"] == "low" and config["lora_rank"] == 16
    assert config["max_audio_seconds"] == 30.0 and config["mixed_precision"] == "no"  # bf16 -> fp32 on the CPU
    steps = [e for e in events if e["type"] == "step"]
    assert steps and all(s["parts"] == {} for s in steps)  # one loss, no parts


def test_preview_ab_with_the_steps_and_the_clips_words(trained, tmp_path):
    out = tmp_path / "hello.wav"
    result = cli("preview", str(trained), "--text", "Hello there.", "--out", str(out), "--ab", "--steps", "4",
                 "--device", "cpu")
    assert result.returncode == 0, result.stderr
    assert out.is_file() and (tmp_path / "hello_base.wav").is_file()
    assert '("' in result.stdout  # the reference clip's words, which F5 continues
    info = json.loads(out.with_suffix(".json").read_text())
    assert info["settings"]["options"]["steps"] == 4 and info["reference_text"] and len(info["references"]) == 1


def test_preview_with_an_own_clip_needs_its_words(trained, tmp_path):
    clip = next((trained / "dataset" / "wavs").glob("*.wav"))
    own = tmp_path / "own.wav"
    own.write_bytes(clip.read_bytes())
    args = ["preview", str(trained), "--text", "Hi.", "--out", str(tmp_path / "x.wav"), "--steps", "2",
            "--reference", str(own)]
    refused = cli(*args)
    assert refused.returncode == 2 and "exact transcript" in refused.stderr and not (tmp_path / "x.wav").exists()
    assert cli(*args, "--reference-text", "the quick brown fox jumps over the lazy dog.").returncode == 0


@pytest.mark.parametrize("fmt, folder", [("alltalk", "f5tts_v1_voice"), ("f5", "voice")])
def test_export_writes_a_folder_f5_tts_loads(trained, tmp_path, fmt, folder):
    result = cli("export", str(trained), "--format", fmt, "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert f"Exported to {tmp_path / folder}" in result.stdout
    info = validate_base_model(tmp_path / folder)  # the export can be the base of the next fine-tune
    assert info.weights.name.startswith("model_") and (tmp_path / folder / "voices").is_dir()


def test_an_alltalk_export_goes_into_the_alltalk_folders_models_f5tts(trained, tmp_path):
    root = tmp_path / "alltalk_tts"
    (root / "models" / "xtts").mkdir(parents=True)
    result = cli("export", str(trained), "--format", "alltalk", "--out", str(root / "models" / "xtts"))
    assert result.returncode == 0, result.stderr
    assert f"into {root / 'models' / 'f5tts' / 'f5tts_v1_voice'}" in result.stdout and "warning" not in result.stderr
    assert list((root / "models" / "f5tts" / "f5tts_v1_voice").glob("model_*.safetensors"))
    plain = cli("export", str(trained), "--format", "alltalk", "--out", str(tmp_path / "plain"))
    assert plain.returncode == 0 and "is not an AllTalk folder" in plain.stderr and "models/f5tts/" in plain.stderr


def test_export_refuses_a_format_of_the_other_engine(trained, tmp_path):
    result = cli("export", str(trained), "--format", "coqui", "--out", str(tmp_path))
    assert result.returncode == 2 and "F5-TTS v1 cannot export the format 'coqui'" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_engine_is_remembered_per_project_and_an_unknown_one_refused(trained, tiny_f5, tmp_path):
    assert VoiceProject.open(trained).engine == "f5"  # recorded by the first train --engine f5-tts
    no_base = cli("train", str(trained), env={"ALLTALK_GUI_CONFIG_DIR": str(tmp_path / "c")})
    assert no_base.returncode == 2 and "F5-TTS v1 folder" in no_base.stderr  # no --engine: the project's
    assert "download-base-model DIR --engine f5" in no_base.stderr
    unknown = cli("train", str(trained), "--engine", "tortoise", "--base-model", str(tiny_f5))
    assert unknown.returncode == 2 and f"Unknown engine 'tortoise'; the engines are {', '.join(engine_names())}" in unknown.stderr


def test_download_base_model_for_f5_after_the_licence(tiny_f5, tmp_path):
    config = tmp_path / "config"
    env = {"ALLTALK_GUI_CONFIG_DIR": str(config), "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "0",
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    folder = tmp_path / "F5TTS_v1_Base"
    refused = cli("download-base-model", str(folder), "--engine", "f5", env=env, stdin=subprocess.DEVNULL)
    assert refused.returncode == 2 and "CC BY-NC 4.0" in refused.stdout and not folder.exists()
    folder.mkdir()
    # The tiny weights stand in for v1 Base's, so the folder needs the tiny architecture to validate.
    (folder / "model_cfg.yaml").write_bytes((tiny_f5 / "model_cfg.yaml").read_bytes())
    with LocalHub(hub_files(tiny_f5)) as hub:
        result = cli("download-base-model", str(folder), "--engine", "f5-tts", "--accept-licence",
                     env={**env, "HF_ENDPOINT": hub.endpoint})
    assert result.returncode == 0, result.stderr
    assert "F5-TTS v1 base model ready" in result.stdout and "[4/4] vocos/pytorch_model.bin" in result.stdout
    settings = json.loads((config / "settings.json").read_text())
    assert settings["f5_base_model_dir"] == str(folder) and "base_model_dir" not in settings
