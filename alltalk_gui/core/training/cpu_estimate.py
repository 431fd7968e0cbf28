"""How long fine-tuning an engine's real-size model takes on the CPU: the number a machine without a CUDA GPU is
told before it starts ("about 12 hours for 10 epochs of 6 minutes of audio on 2 cores").

Each engine is calibrated by measurement in ``resources/profiles/<engine>/cpu_speed.json`` (F5-TTS's from
``benchmarks/cpu_step.py --engine f5``, fp32 only, bf16 by a stated factor). XTTS v2's comes from
one measurement, copied from
``benchmarks/results/xtts_cpu_step_2026-11-22.json``: a full fp32 training step of the 441 M-parameter GPT on
2 clips of 6 s took 145.39 s on 2 cores, i.e. about 12.1 s of work per second of training audio. The time is taken
to grow with the seconds of audio trained on (the GPT's work grows with its sequence, and at these lengths the
per-token layers outweigh attention's square) and to shrink with the cores as the data file's assumptions say.
The frozen DVAE and mel front end, data loading and checkpoint saving are not counted: the estimate is a floor
for the GPT's arithmetic, stated as "about".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataError, read_metadata
from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, get_engine

# Stands in for the dataset when there is none to measure: the middle of the 3-10 minutes the app asks for.
REFERENCE_MINUTES = 6.0


@dataclass(frozen=True)
class DatasetSize:
    train_clips: int
    train_seconds: float
    eval_clips: int = 0
    eval_seconds: float = 0.0


@dataclass(frozen=True)
class CpuEstimate:
    hours: float
    epochs: int  # epochs asked for
    steps: int  # optimizer steps when max_steps stops the run before its epochs end; 0 when all epochs run
    train_minutes: float  # minutes of training audio (one epoch)
    cores: int

    def sentence(self) -> str:
        """ "about 12 hours for 10 epochs of 6 minutes of audio on 2 cores" """
        what = (f"{self.steps} step{'s' if self.steps != 1 else ''} on" if self.steps
                else f"{self.epochs} epoch{'s' if self.epochs != 1 else ''} of")
        audio = (f"{round(self.train_minutes, 1):g} minutes" if self.train_minutes >= 1
                 else f"{round(self.train_minutes * 60)} seconds")
        return (f"about {duration_words(self.hours)} for {what} {audio} of audio "
                f"on {self.cores} core{'s' if self.cores != 1 else ''}")


def seconds_per_audio_second(cores: int, precision: str = "no", gradient_checkpointing: bool = False,
                             engine: str = DEFAULT_ENGINE) -> float:
    """Seconds of CPU training per second of training audio, with ``cores`` cores.

    Args:
        cores: cores the training process may use (at least 1).
        precision: TrainConfig.mixed_precision ("no", "bf16" or "fp16").
        gradient_checkpointing: whether the forward pass is recomputed during backward.
        engine: whose measured step time to use (``resources/profiles/<engine>/cpu_speed.json``).
    """
    cal = _calibration(engine)
    assumed = cal["assumptions"]
    measured = cal["mean_step_s"]
    if precision == "no":
        step_s = measured["no"]
    else:  # fp16: assumed like bf16 (not measured); bf16 where not measured: fp32 x the file's stated factor
        step_s = measured.get("bf16") or measured["no"] * assumed["bf16_factor"]
    per_second = step_s / (cal["batch"] * cal["clip_seconds"])
    per_second *= cal["cores"] / min(max(cores, 1), assumed["core_scaling_limit"])
    if gradient_checkpointing:
        per_second *= assumed["checkpointing_factor"]
    return per_second


def estimate_cpu(config: TrainConfig, size: DatasetSize, cores: int) -> CpuEstimate:
    """Hours of CPU training for ``config`` on a dataset of ``size``, eval passes included."""
    per_second = seconds_per_audio_second(cores, config.mixed_precision, config.gradient_checkpointing, config.engine)
    epochs_run: float = config.epochs
    steps = 0
    if config.max_steps and size.train_clips:
        # As the training loop counts: micro-batches per epoch, then optimizer steps of grad_accum_steps of them.
        per_epoch = math.ceil(math.ceil(size.train_clips / config.batch_size) / config.grad_accum_steps)
        if config.max_steps < per_epoch * config.epochs:
            steps, epochs_run = config.max_steps, config.max_steps / per_epoch
    seconds = epochs_run * size.train_seconds * per_second
    if config.eval_each_epoch:  # after every checkpoint_every_epochs-th epoch and the last
        evals = math.ceil(math.floor(epochs_run) / config.checkpoint_every_epochs)
        seconds += evals * size.eval_seconds * per_second * _calibration(config.engine)["assumptions"]["eval_share"]
    return CpuEstimate(seconds / 3600, config.epochs, steps, size.train_seconds / 60, max(cores, 1))


def estimate_for_config(config: TrainConfig, cores: int) -> CpuEstimate:
    """:func:`estimate_cpu` on the config's dataset, or on REFERENCE_MINUTES of audio when it has none yet."""
    size = None
    if config.project_dir or config.dataset_dir:
        size = dataset_size(config.dataset_path)
    if size is None or not size.train_clips:
        size = DatasetSize(train_clips=0, train_seconds=REFERENCE_MINUTES * 60)
    return estimate_cpu(config, size, cores)


def typical_run(cores: int) -> CpuEstimate:
    """The default training settings (fp32, as auto picks on a CPU) on REFERENCE_MINUTES of audio: the number to
    give before there is a dataset (``alltalk-gui gpu``, the first-run check)."""
    return estimate_for_config(TrainConfig(), cores)


def dataset_size(folder: str | Path) -> DatasetSize | None:
    """Clips and seconds of audio in a dataset folder's metadata CSVs; None when it has no readable training CSV.
    Clips whose audio cannot be read are left out (training reports them by name)."""
    import soundfile

    folder = Path(folder)
    counts: dict[str, tuple[int, float]] = {}
    for name in (TRAIN_CSV, EVAL_CSV):
        try:
            rows = read_metadata(folder / name)
        except (MetadataError, OSError, ValueError):  # missing, malformed, or not UTF-8
            if name == TRAIN_CSV:
                return None
            rows = []
        seconds = 0.0
        for row in rows:
            try:
                seconds += soundfile.info(str(folder / row.audio_file)).duration
            except (RuntimeError, OSError):  # soundfile.LibsndfileError is a RuntimeError
                pass
        counts[name] = (len(rows), seconds)
    return DatasetSize(*counts[TRAIN_CSV], *counts[EVAL_CSV])


def duration_words(hours: float) -> str:
    """ "25 minutes", "1.5 hours", "12 hours", "3 days (70 hours)" """
    if hours < 55 / 60:
        return f"{max(5, round(hours * 60 / 5) * 5)} minutes"
    if hours < 10:
        half = round(hours * 2) / 2
        return f"{half:g} hour{'s' if half != 1 else ''}"
    if hours < 48:
        return f"{round(hours)} hours"
    return f"{round(hours / 24)} days ({round(hours)} hours)"


@lru_cache(maxsize=4)
def _calibration(engine: str = DEFAULT_ENGINE) -> dict[str, Any]:
    """The engine's measured CPU step time and the assumptions scaling it (one file per engine)."""
    return json.loads((get_engine(engine).profiles_dir() / "cpu_speed.json").read_text(encoding="utf-8"))
