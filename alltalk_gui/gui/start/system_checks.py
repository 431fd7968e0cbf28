"""The facts the first-run page and the About dialog show: graphics card, disk space, an engine's base model.

Each check returns a :class:`Check` in plain words (what was found, what it means, what to do). The work is
done by the core (:mod:`alltalk_gui.core.machine.gpu`, the engine's ``describe_base_model``,
:mod:`alltalk_gui.core.app_settings`); this module only turns their answers into sentences. The GPU and
base-model checks import torch, which takes seconds, so callers run them in a worker thread. Nothing here
touches Qt, so the checks are tested without a window.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

OK, WARNING, PROBLEM = "ok", "warning", "problem"

# Disk space: a base model is about 2 GB, Whisper models up to 3 GB, and each resumable training checkpoint
# about 5 GB (441 M weights in fp32 plus AdamW's two moment buffers), of which the last two are kept.
DISK_GOOD_GB = 20.0
DISK_MIN_GB = 8.0
GB = 1000**3

# GPU memory: full fp32 AdamW fine-tuning of a 441 M-parameter model peaked at 10.7 GiB (measured, batch 2 x 6 s).
GPU_GOOD_GIB = 12.0
GPU_MIN_GIB = 6.0


@dataclass(frozen=True)
class Check:
    status: str  # OK, WARNING or PROBLEM
    headline: str  # one line: what was found
    details: str  # what it means and what to do (plain text)


def check_gpu() -> Check:
    """Which NVIDIA GPUs torch can use, how much memory they have and what other programs hold on them. "CPU
    only" when there is none, with about how long training takes on the processor (the default run on a typical
    dataset, since there is none yet).

    Slow (imports torch): call it from a worker thread.
    """
    from alltalk_gui.core.machine import gpu
    from alltalk_gui.core.training.cpu_estimate import typical_run

    devices = gpu.list_devices()
    cuda = [d for d in devices if d.kind == "cuda"]
    cpu = next(d for d in devices if d.kind == "cpu")
    if not cuda:
        return Check(WARNING, "CPU only: no NVIDIA graphics card with CUDA was found.",
                     f"Training will run on the processor ({cpu.name}, {cpu.total_gib:.0f} GiB of memory): "
                     f"{typical_run(cpu.cores).sentence()}. It works, but slowly. "
                     + (cpu.warning or "If this computer has an NVIDIA card, install its driver and the CUDA "
                        "build of PyTorch (see the README)."))
    best = max(cuda, key=lambda d: d.total_gib)
    names = "; ".join(_gpu_words(d) for d in cuda)
    unusable = " ".join(d.warning for d in cuda if d.warning)
    if unusable:  # PyTorch has no kernels for a card: nothing else about it matters until that is fixed
        return Check(PROBLEM, names, unusable)
    if best.total_gib >= GPU_GOOD_GIB:
        return Check(OK, names, "Enough graphics memory for full fine-tuning; the app picks a profile that fits.")
    if best.total_gib >= GPU_MIN_GIB:
        return Check(OK, names, "Training fits with the low-memory profile (8-bit optimiser, smaller batches); "
                     "it is slower than on a card with 12 GiB or more.")
    return Check(WARNING, names, f"Under {GPU_MIN_GIB:.0f} GiB of graphics memory: training may not fit even with "
                 "the low-memory profile. It can still run on the processor, slowly.")


def _gpu_words(device) -> str:
    """ "NVIDIA GeForce RTX 3060, 12.0 GiB (9.8 GiB free; 1.9 GiB used by 2 other programs: chrome, python)" """
    from alltalk_gui.core.machine.gpu import other_use

    others = other_use(device)
    return (f"{device.name}, {device.total_gib:.1f} GiB ({device.free_gib:.1f} GiB free"
            + (f"; {others})" if others else ")"))


def check_disk(folder: str | Path) -> Check:
    """Free space on the drive that holds ``folder`` (or its nearest existing parent)."""
    path = Path(folder).expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    usage = shutil.disk_usage(path)
    free = usage.free / GB
    headline = f"{free:.1f} GB free of {usage.total / GB:.0f} GB on the drive holding {path}."
    needs = (f"A voice project needs about {DISK_GOOD_GB:.0f} GB: the base model ({_engine().download_size}), "
             "Whisper models (up to 3 GB) and training checkpoints (about 5 GB each; the last two are kept).")
    if free >= DISK_GOOD_GB:
        return Check(OK, headline, needs)
    if free >= DISK_MIN_GB:
        return Check(WARNING, headline, needs + " Keep fewer checkpoints or free some space before training.")
    return Check(PROBLEM, headline, needs + " Free some space or put your projects on another drive.")


def _engine(name: str | None = None):
    """The engine a check is about: ``name``, or the one new projects start with."""
    from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, get_engine

    return get_engine(name or DEFAULT_ENGINE)


def base_model_folder(engine: str | None = None) -> Path | None:
    """The engine's base-model folder the user chose, from the app settings; None when none was chosen."""
    from alltalk_gui.core import app_settings

    value = app_settings.get(_engine(engine).base_model_setting)
    return Path(value) if value else None


def set_base_model_folder(folder: str | Path, engine: str | None = None) -> None:
    from alltalk_gui.core import app_settings

    app_settings.set_value(_engine(engine).base_model_setting, str(Path(folder).absolute()))


def check_base_model(folder: str | Path | None = None, engine: str | None = None) -> Check:
    """Whether ``folder`` (default: the chosen one) holds a usable base model of ``engine`` (default: the one
    new projects start with).

    Slow when a folder is set (the engine may import torch and read tensor shapes): call it from a worker thread.
    """
    from alltalk_gui.core import app_settings
    from alltalk_gui.core.engine_api.engine import BaseModelError

    chosen = _engine(engine)
    try:
        folder = Path(folder) if folder is not None else base_model_folder(chosen.name)
    except app_settings.SettingsError as exc:
        return Check(PROBLEM, "The app's settings file cannot be read.", str(exc))
    if folder is None:
        from alltalk_gui.core.engine_api.shared_files import in_words

        files = in_words(chosen.base_model_files)
        return Check(WARNING, f"No {chosen.title} base model chosen yet.",
                     f"Training starts from the {chosen.title} base model. Choose its folder "
                     f"({chosen.base_model_hint}): it must hold {files}. You can do this later.")
    try:
        description = chosen.describe_base_model(folder)
    except BaseModelError as exc:
        return Check(PROBLEM, f"The base model in {folder} cannot be used.", str(exc))
    return Check(OK, f"{chosen.title} base model in {folder}.", f"{description} Ready for training.")


def torch_build() -> str:
    """The CUDA version PyTorch was built with, or "CPU build". Imports torch: call it from a worker thread."""
    import torch

    return f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU build (no CUDA)"
