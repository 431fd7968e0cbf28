"""Parler-TTS from the command line as real processes: its environment (``engine-env``), a training that runs in
the engine's environment although the CLI runs in the app's, and the export of its checkpoint. (The session's tiny
model is made by the engine's ``make_test_model``, which ``make-test-model --engine NAME`` calls for every engine:
tests/core/engine_api/test_front_end_members.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from alltalk_gui.core.engines.parler.files import validate_base_model
from tests.engine_envs import parler_python, tiny_parler  # noqa: F401  (fixtures)


def cli(*args: str, timeout: float = 900, **env: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "alltalk_gui", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **env})


@pytest.fixture(scope="module")
def jenny_parler(parler_python, tmp_path_factory) -> Path:
    """A project made for Parler-TTS (so training does not switch its dataset) with espeak-ng clips."""
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.testing.speech import make_speech_dataset, speech_available

    if not speech_available():
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng)")
    root = tmp_path_factory.mktemp("cli") / "Jenny"
    VoiceProject.create(root, name="Jenny", language="en", engine="parler")
    make_speech_dataset(root / "dataset", n_train=4, n_eval=1)
    return root


def test_engine_env_says_it_is_ready_and_others_need_none(parler_python):
    ready = cli("engine-env", "parler")
    assert ready.returncode == 0 and "Parler-TTS v1's environment is ready in" in ready.stdout
    assert cli("engine-env", "f5").stdout.startswith("F5-TTS v1 runs in the app's own environment")
    unknown = cli("engine-env", "vall-e")
    assert unknown.returncode == 2 and "Unknown engine 'vall-e'" in unknown.stderr


def test_train_and_export(jenny_parler, tiny_parler, tmp_path):
    trained = cli("train", str(jenny_parler), "--engine", "parler-tts", "--base-model", str(tiny_parler),
                  "--run", "cli", "--set", "device=cpu", "--set", "max_steps=2", "--set", "lr=0.003",
                  "--set", "max_audio_seconds=30", "--set", "min_audio_seconds=1", "--set", "memory_interval_s=0")
    assert trained.returncode == 0, trained.stdout[-2000:] + trained.stderr[-2000:]
    events = [json.loads(line) for line in (jenny_parler / "runs" / "cli" / "events.jsonl").read_text().splitlines()]
    done = events[-1]
    assert done["type"] == "done" and done["reason"] == "max_steps" and done["step"] == 2
    assert (jenny_parler / "runs" / "cli" / "description.txt").read_text().startswith("Jenny speaks")

    exported = cli("export", str(jenny_parler), "--format", "parler", "--out", str(tmp_path / "out"))
    assert exported.returncode == 0, exported.stderr[-2000:]
    folder = tmp_path / "out" / "Jenny"
    assert (folder / "model.safetensors").is_file() and (folder / "description.txt").is_file()
    assert validate_base_model(folder).parameters == validate_base_model(tiny_parler).parameters
