"""Training the tiny Parler model on the card through the launcher's child, in the engine's own environment, as the
app runs it: shared by ``test_parler_cuda.py`` (each profile) and ``test_parler_ddp_preview_cuda.py`` (DDP,
preview and export), two files so that pytest-xdist runs them side by side (one was the kit's longest, 354 s, on
the H200 of 2026-11-27). The ``parler_gpu`` fixture (the environment and the tiny model) is in ``conftest.py``."""

from __future__ import annotations

import math
from pathlib import Path

QUICK = {"max_steps": 3, "memory_interval_s": 0.0, "lr": 1e-4, "eval_each_epoch": False}


def train_parler(project: Path, base: Path, run: str, profile: str, env: dict[str, str] | None = None,
                 **settings) -> list[dict]:
    """Train through the launcher's child (the engine's environment) with ``profile`` adapted to this card."""
    import json
    import os

    from alltalk_gui.core.machine.gpu import list_devices
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.core.training.launch import start_training
    from alltalk_gui.core.training.run_config import build_train_config

    built = build_train_config(VoiceProject.open(project), base, profile=profile, devices=list_devices(),
                               overrides={**QUICK, "run_name": run, "device": "cuda", "max_audio_seconds": 30.0,
                                          "min_audio_seconds": 1.0, **settings}, engine="parler")
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        child = start_training(built.config, lower_priority=False)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert child.process.wait(timeout=900) == 0
    return [json.loads(line) for line in child.events_path.read_text(encoding="utf-8").splitlines() if line.strip()]


def assert_trained_on_cuda(events: list[dict], steps: int) -> dict:
    errors = [e["message"] for e in events if e["type"] == "error"]
    assert not errors, errors[0][-3000:]
    started = next(e for e in events if e["type"] == "started")
    assert started["device"].startswith("cuda"), started["device"]
    losses = [e["loss"] for e in events if e["type"] == "step"]
    assert len(losses) == steps and all(math.isfinite(x) for x in losses), losses
    assert events[-1]["type"] == "done" and events[-1]["peak_memory_gib"] > 0
    return started
