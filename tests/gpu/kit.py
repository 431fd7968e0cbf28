"""Helpers of the GPU suite: train through the app's own command line and read what the run wrote."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

# Settings that keep the tiny model's CUDA runs short: the espeak clips are 2-4 s, so conditioning slices of
# 1-2 s; a memory sample every step; a learning rate high enough that a few steps move the loss.
QUICK = ("max_steps=3", "memory_interval_s=0", "min_conditioning_seconds=1", "max_conditioning_seconds=2",
         "lr=1e-4", "eval_each_epoch=false")


def train_cli(project: Path, base: Path, run: str, *args: str, settings: tuple[str, ...] = QUICK,
              timeout: int = 600) -> list[dict]:
    """``alltalk-gui train`` in a child process, as a user runs it; returns the run's events (as JSON dicts).

    Fails the test with the command's output when it does not exit 0.
    """
    cmd = [sys.executable, "-m", "alltalk_gui", "train", str(project), "--base-model", str(base), "--run", run,
           *args]
    for setting in settings:
        cmd += ["--set", setting]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ})
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return events_of(project, run)


def events_of(project: Path, run: str) -> list[dict]:
    path = Path(project) / "runs" / run / "events.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def of_type(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e.get("type") == kind]


def assert_trained(events: list[dict], steps: int) -> None:
    """The run finished its steps on CUDA with finite losses, and said so."""
    started = of_type(events, "started")[0]
    assert started["device"].startswith("cuda"), started["device"]
    step_events = of_type(events, "step")
    assert [e["step"] for e in step_events][-1] == steps, [e["step"] for e in step_events]
    assert all(math.isfinite(e["loss"]) for e in step_events), [e["loss"] for e in step_events]
    done = of_type(events, "done")[-1]
    assert done["reason"] in ("max_steps", "finished"), done
    assert done["peak_memory_gib"] and done["peak_memory_gib"] > 0, done
    memory = of_type(events, "memory")
    assert memory and "cuda_peak_reserved" in memory[-1]["stats"], memory[-1:] if memory else "no memory events"


# What the GPU suite speaks (the fixtures and render_speech use the same values, so the speech cache that the
# kit carries to a machine without espeak-ng holds exactly what the tests ask for).
DATASET_CLIPS = {"n_train": 8, "n_eval": 2}
WHISPER_SENTENCE = "The weather was calm over the harbour this morning."
WHISPER_WPM = 150


def render_speech(folder: str | Path) -> None:
    """Synthesize everything the GPU suite speaks into ``folder`` (with ALLTALK_SPEECH_CACHE set, this fills
    the cache: see benchmarks/gpu/bundles.py)."""
    from alltalk_gui.testing.speech import make_speech_dataset
    from alltalk_gui.testing.speech import synthesize

    folder = Path(folder)
    make_speech_dataset(folder / "dataset", **DATASET_CLIPS)
    synthesize(WHISPER_SENTENCE, folder / "weather.wav", words_per_minute=WHISPER_WPM)
