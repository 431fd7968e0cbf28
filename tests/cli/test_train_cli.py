"""``alltalk-gui train / gpu / make-test-model`` run as real processes on the tiny model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from alltalk_gui.testing.speech import make_speech_dataset

FAST = ["--set", "min_conditioning_seconds=1", "--set", "max_conditioning_seconds=2", "--set", "device=cpu",
        "--set", "lr=0.001", "--set", "warmup_steps=0"]


def cli(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "alltalk_gui", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300, **kw)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny") / "xtts"
    result = cli("make-test-model", str(folder))
    assert result.returncode == 0, result.stderr
    assert "not a voice" in result.stdout
    return folder


@pytest.fixture()
def project(tmp_path) -> Path:
    root = tmp_path / "voice"
    result = cli("new", str(root), "--language", "en")
    assert result.returncode == 0, result.stderr
    make_speech_dataset(root / "dataset", n_train=4, n_eval=1)
    return root


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_train_runs_writes_events_and_summarises(project, tiny):
    result = cli("train", str(project), "--base-model", str(tiny), "--epochs", "2", "--run", "r",
                 "--set", "batch_size=2", *FAST)
    assert result.returncode == 0, result.stderr + result.stdout
    out = result.stdout
    assert "step 4/4" in out and "samples/s" in out and "ETA" in out
    assert "Done (finished) after step 4" in out and "Best checkpoint:" in out
    assert "Eval of the base model (step 0): loss" in out and "(base model: " in out
    events = _events(project / "runs" / "r" / "events.jsonl")
    assert all("type" in e for e in events)
    steps = [e for e in events if e["type"] == "step"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    assert all({"step", "epoch", "loss"} <= s.keys() for s in steps)
    assert [e["type"] for e in events].count("eval") == 3 and events[-1]["type"] == "done"
    saved = json.loads((project / "runs" / "r" / "checkpoints" / "step_0000004" / "train_config.json").read_text())
    assert saved["epochs"] == 2 and saved["batch_size"] == 2


def test_train_rejects_unknown_setting_and_missing_base_model(project, tiny, tmp_path):
    result = cli("train", str(project), "--base-model", str(tiny), "--set", "batchsize=2")
    assert result.returncode == 2 and "Unknown training setting 'batchsize'" in result.stderr
    result = cli("train", str(project), env={"ALLTALK_GUI_CONFIG_DIR": str(tmp_path / "cfg")})
    assert result.returncode == 2 and "No base model" in result.stderr
    assert not (project / "runs").exists()


def test_bad_dataset_is_reported_before_training_and_nothing_changes(project, tiny):
    (project / "dataset" / "wavs" / "clip_001.wav").write_bytes(b"RIFF....not audio")
    before = {p: p.read_bytes() for p in (project / "dataset").rglob("*") if p.is_file()}
    result = cli("train", str(project), "--base-model", str(tiny), "--run", "bad", *FAST)
    assert result.returncode == 2
    assert "metadata_train.csv line 3 (wavs/clip_001.wav): the audio file cannot be read" in result.stdout
    assert "step 1" not in result.stdout
    assert {p: p.read_bytes() for p in (project / "dataset").rglob("*") if p.is_file()} == before
    assert not list((project / "runs" / "bad").glob("checkpoints/step_*"))


def test_gpu_lists_the_cpu_at_least(tmp_path):
    result = cli("gpu", "--json")
    assert result.returncode == 0
    devices = json.loads(result.stdout)
    assert devices[-1]["kind"] == "cpu" and devices[-1]["total_gib"] > 0
    assert cli("gpu").stdout.strip()


def test_sigkill_during_a_checkpoint_save_then_resume(project, tiny):
    """Kill -9 while step 2's checkpoint is being written: resume starts from step 1's and the run completes."""
    run_dir = project / "runs" / "crash"
    args = ["train", str(project), "--base-model", str(tiny), "--run", "crash", "--epochs", "2",
            "--set", "batch_size=1", "--set", "save_every_steps=1", *FAST]
    child = subprocess.Popen([sys.executable, "-m", "alltalk_gui", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             env={**os.environ, "ALLTALK_GUI_TEST_SLOW_SAVE": "2:60"})
    partial = run_dir / "checkpoints" / ".tmp-step_0000002"
    deadline = time.time() + 240
    while not (partial / "train_state.json").exists():  # every file of step 2 is written, not yet published
        assert child.poll() is None, child.stdout.read()
        assert time.time() < deadline, "the checkpoint save never started"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == [".tmp-step_0000002", "step_0000001"]

    result = cli(*args, "--resume")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Resumed from step_0000001 (step 1)" in result.stdout
    assert "Done (finished) after step 8" in result.stdout
    events = _events(run_dir / "events.jsonl")
    steps = [e["step"] for e in events if e["type"] == "step"]
    # Step 2 was trained before the kill, but its checkpoint never completed: the resume trains it again.
    assert steps == [1, 2, 2, 3, 4, 5, 6, 7, 8]
    names = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert ".tmp-step_0000002" not in names and "step_0000008" in names


def test_train_with_two_processes_follows_one_events_file(project, tiny):
    result = cli("train", str(project), "--base-model", str(tiny), "--epochs", "1", "--run", "two",
                 "--processes", "2", "--set", "batch_size=1", *FAST)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "on cpu:0 x 2: 2 steps/epoch" in result.stdout and "Done (finished) after step 2" in result.stdout
    events = _events(project / "runs" / "two" / "events.jsonl")
    assert [e["type"] for e in events].count("started") == 1
    assert [e["step"] for e in events if e["type"] == "step"] == [1, 2]


def test_download_refuses_without_the_licence_and_downloads_nothing(tmp_path):
    result = cli("download-base-model", str(tmp_path / "xtts"), env={"ALLTALK_GUI_CONFIG_DIR": str(tmp_path / "c")},
                 stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert "Coqui Public Model License" in result.stdout and "nothing was downloaded" in result.stderr
    assert not (tmp_path / "xtts").exists() and not (tmp_path / "c" / "settings.json").exists()


def test_ctrl_c_checkpoints_and_exits_cleanly(project, tiny):
    run_dir = project / "runs" / "int"
    child = subprocess.Popen([sys.executable, "-m", "alltalk_gui", "train", str(project), "--base-model", str(tiny),
                              "--run", "int", "--epochs", "50", "--set", "batch_size=1", *FAST],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events_file = run_dir / "events.jsonl"
    deadline = time.time() + 240
    while not (events_file.exists() and '"type": "step"' in events_file.read_text()):
        assert child.poll() is None and time.time() < deadline
        time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert "Done (stopped)" in out and "run again with --resume" in out
    events = _events(events_file)
    stopped_at = events[-1]["step"]
    assert events[-1]["reason"] == "stopped" and stopped_at < 200
    assert (run_dir / "checkpoints" / f"step_{stopped_at:07d}" / "train_state.json").is_file()
