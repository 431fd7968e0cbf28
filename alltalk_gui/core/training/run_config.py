"""One function builds the TrainConfig of a run: :func:`build_train_config`.

A run's settings come from three places, applied in this order: the project (its folder and language) and the
base model; a memory profile (low / medium / high, or auto, which picks one for the GPU) adapted to the device
training will use; the user's own values (the CLI's ``--epochs`` / ``--set``, the Train page's Advanced panel),
which always win over the profile. The CLI and the Train page both call this function, so a run started from
either gets the same config for the same choices.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, get_engine
from alltalk_gui.core.machine.gpu import DeviceInfo
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.dataset.clip_lengths import longest_clip_seconds
from alltalk_gui.core.training.profiles import (
    PROFILE_NAMES, apply_profile, choose_auto, profile_settings, sized_for,
)

AUTO = "auto"
# Under Low on a GPU with less memory than this, the checkpoint judge starts switched off: its models (the voice,
# Whisper and two small ones, 2-4 GB while it runs) would not fit beside training.
JUDGE_MIN_GPU_GIB = 8.0


@dataclass
class RunConfig:
    """The built config and what was decided on the way, for the CLI to print and the page to show."""

    config: TrainConfig
    profile: str | None = None          # the profile applied (auto resolved to the one it picked)
    auto_reason: str | None = None      # why auto picked it
    notes: list[str] = field(default_factory=list)  # how the profile was adapted to the device
    device: DeviceInfo | None = None    # the device the profile was adapted to
    estimate_gib: float | None = None   # the engine's estimated peak GPU memory (on a CUDA device), for the
                                        # dataset's longest training clip where it is shorter than the limit


def training_device(devices: Sequence[DeviceInfo]) -> DeviceInfo | None:
    """The device a run trains on: the GPU with the most free memory, else the CPU (None: nothing listed)."""
    gpus = [d for d in devices if d.kind == "cuda"]
    if gpus:
        return max(gpus, key=lambda d: d.free_gib)
    return next((d for d in devices if d.kind == "cpu"), None)


def build_train_config(project: Any, base_model_dir: str | os.PathLike[str] | None, *, profile: str | None = None,
                       devices: Sequence[DeviceInfo] = (), overrides: dict[str, Any] | None = None,
                       pairs: Sequence[str] = (), auto: bool = False, engine: str = DEFAULT_ENGINE,
                       longest_clip_s: float | None = None) -> RunConfig:
    """The TrainConfig for a run of ``project``: project and base model, then ``profile``, then the user's values.

    Args:
        project: the voice project (``root`` and ``language`` are read, and its dataset's clip lengths), or None
            before one is open.
        base_model_dir: the engine's base-model folder ("" or None: not chosen yet; ``validate`` says so).
        profile: ``low`` / ``medium`` / ``high`` / ``auto``, or None for the TrainConfig defaults.
        devices: the machine's devices (:func:`alltalk_gui.core.machine.gpu.list_devices`); the profile is
            adapted to :func:`training_device` of them, and auto chooses for them.
        overrides: values the user set by name, TrainConfig fields or the engine's options (they win over the
            profile).
        pairs: ``key=value`` strings (the CLI's ``--set``), applied after ``overrides``.
        auto: ``profile`` is what auto already picked (the Train page shows its pick before Start), so the run
            sizes its micro-batch as an auto run does.
        engine: the engine that trains.
        longest_clip_s: the dataset's longest training clip, where the caller has read it (the Train page, with
            the dataset's facts); None: read from ``project``'s dataset here. Memory estimates and the profiles'
            filled micro-batches size for it where it is shorter than the run's limit.

    Returns:
        the config (not validated: :meth:`TrainConfig.validate` names a wrong field) and what was decided.

    Raises:
        ConfigError: a ``key=value`` pair names no field or has a value of the wrong type.
        ProfileError: an unknown profile name or a broken profile file.
    """
    base = TrainConfig(engine=engine, project_dir=str(project.root) if project is not None else "",
                       base_model_dir=str(base_model_dir or ""),
                       language=project.language if project is not None else "")
    wanted = _with_user_values(base, overrides, pairs)
    if not profile:
        return RunConfig(wanted)
    device = training_device(devices)
    result = RunConfig(base, device=device)
    # Memory is sized for the dataset's longest training clip where it is shorter than the run's limit.
    longest = longest_clip_s
    if longest is None and getattr(project, "dataset_dir", None) is not None:
        longest = longest_clip_seconds(project.dataset_dir)
    name = profile
    if profile == AUTO:
        # The user's values count (clip length, epochs for CPU time).
        choice = choose_auto(list(devices), wanted, longest)
        name, result.auto_reason = choice.profile, choice.reason
    result.profile = name
    sized = auto or profile == AUTO  # the run sizes its micro-batch on the card: the profile is not filled
    result.notes = list(profile_settings(name, device, engine, None if sized else base, longest)[1])
    profiled = apply_profile(base, name, device, auto=sized, longest_clip_s=longest)
    if name == "low" and device is not None and device.kind == "cuda" and device.total_gib < JUDGE_MIN_GPU_GIB:
        profiled = dataclasses.replace(profiled, judge=False)
        result.notes.append(f"The checkpoint judge is off under Low on this {device.total_gib:.0f} GB card: it "
                            "needs 2-4 GB beside training. Switch it on in Advanced if the card has room, or "
                            "judge after training (alltalk-gui judge).")
    result.config = _with_user_values(profiled, overrides, pairs)
    if device is not None and device.kind == "cuda":  # the profile's own need, before the user's changes
        # None: a model size the engine has no figures for.
        estimate = get_engine(engine).estimate_memory(sized_for(profiled, longest))
        result.estimate_gib = float(estimate.total_gib) if estimate is not None else None
    return result


def profile_names() -> tuple[str, ...]:
    """The profiles a user can choose, auto included."""
    return (*PROFILE_NAMES, AUTO)


def _with_user_values(config: TrainConfig, overrides: dict[str, Any] | None, pairs: Sequence[str]) -> TrainConfig:
    if overrides:
        config = config.with_values(overrides)
    return config.with_overrides(list(pairs)) if pairs else config
