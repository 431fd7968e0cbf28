"""The training tests' config: the tiny model on the CPU, quickly.

Shorter conditioning slices than coqui's 3-6 s keep the CPU steps fast (the espeak clips are 2-4 s anyway), a
memory sample comes every step, and a learning rate far above coqui's 5e-6 makes a few steps visible. The tests'
rates are absolute (``lr_batch=0``: not scaled with the effective batch), so a test's batch does not change them.
"""

from __future__ import annotations

from pathlib import Path

from alltalk_gui.core.training.config import TrainConfig


def fast_config(project: Path, tiny: Path, run: str, **settings) -> TrainConfig:
    """A config for run ``run`` of ``project`` from base model ``tiny``; ``settings`` override the defaults."""
    defaults = dict(project_dir=str(project), base_model_dir=str(tiny), run_name=run, device="cpu", language="en",
                    lr=1e-3, lr_batch=0, warmup_steps=0, memory_interval_s=0.0, min_conditioning_seconds=1.0,
                    max_conditioning_seconds=2.0)
    return TrainConfig().with_values({**defaults, **settings})  # options (the conditioning slices) by name too
