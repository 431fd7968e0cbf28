"""A third engine, plugged in: the toy engine of tests/toy_engine, registered only through an entry point (a
temporary ``*.dist-info`` on the child processes' path), goes through the whole command line as the built-in engines
do: listed, chosen for a new project, its dataset written at its own 16 kHz from 44.1 kHz recordings, trained by
the app's loop (its own loss parts and option in the events and the saved config), previewed from a description
and exported. Nothing neutral names it (tests/architecture/test_engine_names.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.transcript.test_segments_support import segment, voice_like
from tests.engine_plugins import child_env, plugin_site

SOURCE_RATE = 44_100
LINES = ["The quick brown fox jumps.", "Over the lazy dog again.", "A calm voice reads this.",
         "Every clip is a few seconds.", "The toy engine hears them all.", "And one more for the eval."]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return plugin_site(tmp_path_factory.mktemp("plugins"), {"toy": "tests.toy_engine.engine:ENGINE"}, dist="toy-tts")


def toy_cli(site: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "alltalk_gui", *map(str, args)], capture_output=True, text=True,
                          env=child_env(site, HF_HUB_OFFLINE="1"), timeout=600)


@pytest.fixture(scope="module")
def project(site, tmp_path_factory) -> Path:
    """A toy project: a 44.1 kHz recording imported, its transcript (as Whisper would give it), the dataset."""
    root = tmp_path_factory.mktemp("toy") / "voice"
    made = toy_cli(site, "new", root, "--engine", "toy-tts", "--language", "en")
    assert made.returncode == 0, made.stderr
    recording = root.parent / "reading.wav"
    pause = np.zeros(int(0.4 * SOURCE_RATE), np.float32)
    takes = [voice_like(2.5 + 0.3 * i, SOURCE_RATE, seed=i) for i in range(len(LINES))]
    sf.write(recording, np.concatenate([x for take in takes for x in (take, pause)]), SOURCE_RATE)
    imported = toy_cli(site, "import", root, recording)
    assert imported.returncode == 0, imported.stderr
    project = VoiceProject.open(root)
    source = project.sources[0]
    start, segments = 0, []
    for i, (line, take) in enumerate(zip(LINES, takes)):
        end = start + int(len(take) / SOURCE_RATE * 1000)
        segments.append(segment(f"c{i:05d}", source.id, start + 20, end - 20, line))
        start = end + 400
    SegmentList.create(project, segments).close()
    dataset = toy_cli(site, "dataset", root, "--eval-split", "0.2")
    assert dataset.returncode == 0, dataset.stderr + dataset.stdout
    return root


@pytest.fixture(scope="module")
def base_model(site, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("toy_base") / "toy"
    made = toy_cli(site, "make-test-model", folder, "--engine", "toy")
    assert made.returncode == 0 and "Toy TTS test model" in made.stdout, made.stderr
    return folder


@pytest.fixture(scope="module")
def trained(site, project, base_model) -> Path:
    result = toy_cli(site, "train", project, "--base-model", base_model, "--epochs", "6", "--run", "toy",
                     "--set", "device=cpu", "--set", "lr=0.02", "--set", "lr_batch=0", "--set", "warmup_steps=0",
                     "--set", "duration_weight=0.25", "--set", "voice_description=a deep, slow voice")
    assert result.returncode == 0, result.stderr + result.stdout
    return project


def test_the_plugin_is_listed_beside_the_built_in_engines(site):
    listed = toy_cli(site, "engines", "--options")
    assert listed.returncode == 0, listed.stderr
    assert "toy, also toy-tts: Toy TTS" in listed.stdout and "clips at 16000 Hz, up to 8.0 s" in listed.stdout
    assert "train option duration_weight = 0.5" in listed.stdout and "generation option brightness" in listed.stdout
    assert "xtts" in listed.stdout and "\nleft out: " not in listed.stdout
    in_json = json.loads(toy_cli(site, "engines", "--json").stdout)
    assert [e["name"] for e in in_json["engines"]][-1] == "toy"
    assert next(e for e in in_json["engines"] if e["name"] == "toy")["reference_kind"] == "description"


def test_the_project_is_the_toys_and_its_dataset_is_at_16_khz(site, project):
    shown = toy_cli(site, "engine", project)
    assert shown.returncode == 0 and "Toy TTS" in shown.stdout, shown.stderr + shown.stdout
    assert json.loads((project / "project.json").read_text())["engine"] == "toy"
    wavs = sorted((project / "dataset").rglob("*.wav"))
    assert len(wavs) == len(LINES)
    assert {sf.info(str(w)).samplerate for w in wavs} == {16_000}  # the engine's rate, from 44.1 kHz recordings


def test_it_trains_through_the_apps_loop_with_its_own_loss_parts_and_option(trained):
    run = trained / "runs" / "toy"
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    steps = [e for e in events if e["type"] == "step"]
    assert steps and all(set(s["parts"]) == {"duration", "spectrum"} for s in steps)
    evals = [e for e in events if e["type"] == "eval"]
    assert evals[0]["step"] == 0 and evals[-1]["loss"] < evals[0]["loss"]  # it learned
    done = events[-1]
    assert done["type"] == "done" and done["reason"] == "finished"
    config = json.loads(next((run / "checkpoints").iterdir()).joinpath("train_config.json").read_text())
    assert config["engine"] == "toy" and config["options"] == {"duration_weight": 0.25,
                                                               "voice_description": "a deep, slow voice"}


def test_another_engines_option_is_refused_by_name(site, trained, base_model):
    result = toy_cli(site, "train", trained, "--base-model", base_model, "--run", "refused",
                     "--set", "ema_decay=0.9")
    assert result.returncode == 2 and "ema_decay is a setting of F5-TTS v1; it does nothing for Toy TTS" in (
        result.stderr + result.stdout)


def test_it_previews_from_a_description_and_exports(site, trained, tmp_path):
    out = tmp_path / "take.wav"
    spoken = toy_cli(site, "preview", trained, "--text", "Hello there.", "--out", out, "--brightness", "1.5",
                     "--device", "cpu")
    assert spoken.returncode == 0, spoken.stderr + spoken.stdout
    assert '"a deep, slow voice"' in spoken.stdout  # the run's own description, the engine's suggestion
    samples, rate = sf.read(out)
    assert rate == 16_000 and len(samples) > 1600 and np.abs(samples).max() > 0.1
    saved = json.loads(out.with_suffix(".json").read_text())
    assert saved["settings"]["options"]["brightness"] == 1.5 and saved["reference_text"] == "a deep, slow voice"
    refused = toy_cli(site, "preview", trained, "--text", "Hi.", "--out", tmp_path / "x.wav", "--steps", "4")
    assert refused.returncode == 2 and "--steps is not a setting of Toy TTS" in refused.stderr

    exported = toy_cli(site, "export", trained, "--format", "plain", "--out", tmp_path / "models", "--name", "Deep",
                       "--reference-text", "a deep voice, exported")
    assert exported.returncode == 0, exported.stderr + exported.stdout
    folder = tmp_path / "models" / "Deep"
    assert (folder / "voice.txt").read_text().strip() == "a deep voice, exported"
    info = json.loads((folder / "export_info.json").read_text())
    assert info["engine"] == "toy" and info["training_settings"]["duration_weight"] == 0.25
    assert not [p for p in (tmp_path / "models").iterdir() if p.name.startswith(".")]  # no staging folder left


def test_a_broken_plugin_beside_it_is_left_out_and_said(site, tmp_path):
    broken = plugin_site(tmp_path / "broken", {"ghost": "tests.toy_engine.no_such_module:ENGINE"}, dist="ghost-tts")
    env = child_env(site)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(broken)])
    listed = subprocess.run([sys.executable, "-m", "alltalk_gui", "engines"], capture_output=True, text=True,
                            env=env, timeout=300)
    assert listed.returncode == 0, listed.stderr
    assert "toy, also toy-tts" in listed.stdout
    assert "left out: ghost: it cannot be loaded: ModuleNotFoundError" in listed.stdout
