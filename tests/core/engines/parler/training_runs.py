"""Running Parler-TTS trainings the way the app does: the launcher's child in the engine's environment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from alltalk_gui.core.training.config import TrainConfig


def parler_config(project: Path, tiny: Path, run: str, **settings) -> TrainConfig:
    """The tiny Parler model on the CPU, quickly: a rate far above the profiles' makes a few steps visible."""
    defaults = dict(engine="parler", project_dir=str(project), base_model_dir=str(tiny), run_name=run, device="cpu",
                    language="en", lr=3e-3, lr_batch=0, warmup_steps=0, memory_interval_s=0.0, batch_size=2,
                    max_audio_seconds=30.0, min_audio_seconds=1.0, epochs=1)
    return TrainConfig(**{**defaults, **settings})


def train(config: TrainConfig, *, resume: bool = False, processes: int = 1, timeout: float = 600) -> list[dict[str, Any]]:
    """Start the training child (in the engine's environment) and return this session's events."""
    from alltalk_gui.core.training.launch import start_training

    events_path = config.run_dir / f"events-{'resume' if resume else 'start'}-{processes}.jsonl"
    child = start_training(config, resume=resume, processes=processes, events_path=events_path, lower_priority=False)
    child.process.wait(timeout=timeout)
    events = [json.loads(line) for line in events_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert events and events[-1]["type"] == "done", events[-3:]
    return events


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def checkpoint_state(run_dir: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    from alltalk_gui.core.training.loop import latest_checkpoint

    return load_file(str(latest_checkpoint(run_dir) / "model.safetensors"))


def base_state(tiny: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(tiny / "model.safetensors"))
