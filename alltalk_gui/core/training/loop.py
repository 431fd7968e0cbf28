"""The fine-tuning recipe: ``train(config) -> Iterator[Event]``, for any engine behind the engine boundary.

Read top to bottom, like torchtune's single-device recipe or nanoGPT's ``train.py``:

1. :meth:`TrainingRun._check_inputs` checks everything that can fail cheaply (config, base model, dataset, disk,
   resume) and returns what it read, so a bad input is reported before any model loads;
2. :func:`setup_accelerator` returns the Accelerator (mixed precision, gradient accumulation, device);
3. :meth:`TrainingRun._setup` has the engine build the model, its loss and the data, then builds the optimiser,
   the schedule and the loaders, restores a checkpoint, and returns them all as :class:`Prepared`;
4. :meth:`TrainingRun._train` is the loop: forward and backward (through the out-of-memory retry of
   :mod:`~alltalk_gui.core.training.levers`), clip, step, report, stop or save; it returns the outcome, a
   :class:`~alltalk_gui.core.training.events.FinishReason`.

Everything leaves the recipe as plain events (:mod:`alltalk_gui.core.training.events`); only the main process
yields them. The same code runs in one process or under ``accelerate launch --multi_gpu --num_processes N`` (DDP,
or FSDP through accelerate's own config file): accelerate shards the batches, synchronises the gradients and
tells us which process is the main one. There is no distribution code of our own.

Checkpoints are ``accelerator.save_state`` folders (model weights as safetensors, optimizer, scheduler, scaler,
RNG states) plus our ``train_state.json`` (step, epoch, batches done in the epoch, best eval loss) and
``train_config.json``. Each is written into ``checkpoints/.tmp-step_N`` and renamed to ``checkpoints/step_N``
only when complete, so a crash at any moment leaves the previous checkpoints intact and no half-written one
that a resume could pick up. Before each one the free space is checked against the last checkpoint's size (the
engine's :meth:`~alltalk_gui.core.engine_api.engine.Engine.disk_needs` before the first); a write that fails all
the same (the disk filled meanwhile, an I/O error) removes the partial folder and ends the run with an
:class:`~alltalk_gui.core.training.events.Error` that says where, how much is needed and how much is free. Old
checkpoints are pruned only after a new one is complete, so the earlier ones are always kept. Resume restores all
of it and skips the batches already seen in the epoch (``skip_first_batches``); data order and conditioning
slices depend only on (seed, epoch, index), so 2 + 2 steps with a resume in between give the same weights as 4
steps straight.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import time
import traceback
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator

from alltalk_gui.core import atomic, folders, safe_paths
from alltalk_gui.core.machine import disk
from alltalk_gui.core.training import schedule
from alltalk_gui.core.engine_api.engine import BaseModelError, TrainingSetup, get_engine
from alltalk_gui.core.training.checkpoints import (CHECKPOINTS, CONFIG_FILE, KEEP_MARK, STATE_FILE, CheckpointError,
                                                   read_state)
from alltalk_gui.core.training.config import ConfigError, TrainConfig, incompatible_for_resume
from alltalk_gui.core.training.data import BucketBatchSampler, DatasetError
from alltalk_gui.core.training.events import (Checkpoint, CheckpointReason, Done, Error, ErrorKind, Eval, Event,
                                              FinishReason, Log, LogLevel, Memory, MicroBatch, MicroBatchCause,
                                              Preparing, Started, Step)
from alltalk_gui.core.training.feature_cache import StoppedComputing, reporting
from alltalk_gui.core.training.levers import (OutOfMemory, OutOfMemoryRetry, init_optimizer_state,
                                              out_of_memory_advice)
from alltalk_gui.core.training.run_folders import EVENTS_FILE, MEMORY_FILE, STOP_FILE, new_run_name  # noqa: F401
from alltalk_gui.core.training.profiles import sized_for
# Test hook for the crash-safety test: "STEP:SECONDS" makes the save at STEP wait SECONDS between writing the
# checkpoint's files and publishing it, so a test can kill the process at exactly that moment.
SLOW_SAVE_ENV = "ALLTALK_GUI_TEST_SLOW_SAVE"
# Said when a stop ends the set-up while it computes the clips' features (feature_cache.StoppedComputing).
STOPPED_IN_SETUP = ("Stopped before the first step, while the clips' features were computed: {kept}, in the "
                    "project's feature_cache. Start the run again to go on: it reads them and computes the rest. There "
                    "is no checkpoint to resume.")
# Said before the engine's set-up, which can run for minutes with nothing else to say: the base model loads, and
# each clip's codec features (XTTS's DVAE codes, F5's mels, Orpheus's SNAC and Parler's DAC codes) are computed
# once into the project's feature cache (Parler's DAC on a CPU: about 1.3 s per second of audio).
SETTING_UP = ("Setting up: loading the base model and preparing the {clips} clips' features (computed once into the "
              "project's feature_cache, read from it afterwards; the first run on a CPU can take minutes).")


class CheckpointWriteError(RuntimeError):
    """A checkpoint could not be written; the partial one was removed and the earlier ones are kept. Carries where
    it was to go and, when known, about how many bytes it needs and how many were free."""

    def __init__(self, message: str, *, folder: Path | None = None, needed: int | None = None,
                 free: int | None = None) -> None:
        super().__init__(message)
        self.folder, self.needed, self.free = folder, needed, free

    def event_fields(self) -> dict[str, Any]:
        return {"folder": str(self.folder) if self.folder else None, "needed_bytes": self.needed,
                "free_bytes": self.free}


class DiskFullError(CheckpointWriteError):
    """Not enough free disk space for the next checkpoint, found before writing it or while writing it."""


class ResumeError(RuntimeError):
    """--resume was asked for but there is nothing (compatible) to resume."""


# Problems that end a run with an Error event of this kind and a clean Done: bad inputs, found before any model is
# loaded, and a checkpoint that could not be written (the earlier ones kept). The first match wins.
_INPUT_ERRORS: dict[type[Exception], ErrorKind] = {
    ConfigError: ErrorKind.CONFIG, BaseModelError: ErrorKind.BASE_MODEL, DatasetError: ErrorKind.DATASET,
    DiskFullError: ErrorKind.DISK_FULL, CheckpointWriteError: ErrorKind.SAVE_FAILED, ResumeError: ErrorKind.RESUME,
    OutOfMemory: ErrorKind.OUT_OF_MEMORY,
}


def disk_free_bytes(path: Path) -> int:
    """Free bytes on the file system holding ``path`` (a function so tests can simulate a full disk)."""
    return disk.free_bytes(path)


def latest_checkpoint(run_dir: str | os.PathLike[str]) -> Path | None:
    """The newest complete checkpoint folder of a run (``.tmp-*`` folders are never complete)."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return None
    done = [p for p in root.glob("step_*") if (p / STATE_FILE).is_file() and safe_paths.is_inside(p, root)]
    return max(done, key=lambda p: int(p.name.split("_")[1]), default=None)


def train(config: TrainConfig, *, resume: bool = False, stop: Callable[[], bool] | None = None,
          announce: Callable[[Event], None] | None = None) -> Iterator[Event]:
    """Run (or resume) training and yield its events; the last one is always :class:`Done`.

    Args:
        config: the run's settings; see :class:`TrainConfig`.
        resume: continue from the newest complete checkpoint in the run folder (``config.run_name`` must name it).
        stop: polled once per optimizer step; when it returns True (or the run folder holds a ``STOP`` file)
            the loop finishes the step, saves a checkpoint and ends with ``Done(reason=FinishReason.STOPPED)``.
            During a one-process set-up it is also polled before each clip whose features are computed, and the
            run ends there, without a checkpoint (the clips computed are kept).
        announce: takes the events the loop has while it cannot yield, at once: the progress of the engine's
            set-up, which may compute the clips' features for minutes (:func:`.feature_cache.reporting`). Without
            it they are not made.

    Problems with the inputs (config, base model, dataset, disk space) come out as an :class:`Error` event before
    any model is loaded, followed by ``Done(reason=FinishReason.ERROR)``; nothing in the project is changed by them.
    """
    run = TrainingRun(config, resume=resume, stop=stop, announce=announce)
    for event in run.events():
        # Every process runs the recipe (they must stay in step); only the main process reports.
        if run.accelerator is None or run.accelerator.is_main_process:
            while run.warnings:  # raised while making ``event`` (e.g. a checkpoint that could not be pruned)
                yield Log(level=LogLevel.WARNING, message=run.warnings.pop(0))
            yield event


@dataclass
class TrainState:
    """What train_state.json holds: where the loop is and what it has seen."""

    global_step: int = 0
    epoch: int = 0
    batches_done: int = 0  # micro-batches of `epoch` already trained on (this process)
    best_eval_loss: float | None = None
    best_checkpoint: str | None = None
    last_loss: float | None = None
    history: list[dict[str, Any]] = field(default_factory=list)  # eval results: the base model (step 0), each epoch
    schedule: dict[str, Any] | None = None  # the learning-rate schedule (schedule.Schedule.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in TrainState.__dataclass_fields__}


@dataclass
class Inputs:
    """What :meth:`TrainingRun._check_inputs` read and checked."""

    parameters: int                   # the trainable model's size, from the base model's files
    train_clips: list[Any]
    eval_clips: list[Any]
    resume_from: Path | None


@dataclass
class Prepared:
    """What :meth:`TrainingRun._setup` builds: the engine's parts and the prepared optimiser, schedule and data."""

    engine: TrainingSetup
    model: Any                        # prepared by accelerate
    optimizer: Any
    scheduler: Any
    train_loader: Any
    eval_loader: Any
    sampler: BucketBatchSampler
    retry: OutOfMemoryRetry
    steps_per_epoch: int
    total_steps: int


def setup_accelerator(config: TrainConfig):
    """The Accelerator for ``config`` (mixed precision, accumulation, CPU or GPU), with every RNG seeded."""
    import torch
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration, InitProcessGroupKwargs, set_seed

    from alltalk_gui.core.machine.memory import use_expandable_segments
    from alltalk_gui.core.training.launch import distributed_backend

    use_expandable_segments()  # before the first CUDA allocation, which comes below
    forget_earlier_runs()
    accelerator = Accelerator(
        mixed_precision=config.mixed_precision,
        gradient_accumulation_steps=config.grad_accum_steps,
        cpu=config.device == "cpu" or not torch.cuda.is_available(),
        # Windows builds of PyTorch have no NCCL: several processes meet over gloo there.
        kwargs_handlers=[InitProcessGroupKwargs(backend=backend)] if (backend := distributed_backend()) else None,
        # Batches go to the GPU without the host waiting: a blocking copy first waits for everything queued on the
        # card, so the host could not prepare the next micro-step while the card ran this one (the loaders pin
        # their batches on a GPU, which an asynchronous copy needs).
        dataloader_config=DataLoaderConfiguration(non_blocking=True),
    )
    set_seed(config.seed)
    return accelerator


def forget_earlier_runs() -> None:
    """Start accelerate's process-wide state afresh, so that a run does not inherit an earlier run's in this process.

    accelerate keeps its state in singletons shared by every Accelerator of a process: ``AcceleratorState`` (mixed
    precision, device; a second Accelerator with another precision is refused with "AcceleratorState has already
    been initialized and cannot be changed", and a CPU run after a CUDA one would be refused too),
    ``GradientState`` (the accumulation steps and the data loaders being iterated: an earlier run stopped at
    ``max_steps`` in the middle of an epoch leaves its loader there) and ``PartialState`` (the device and the
    process group). :func:`setup_accelerator` is the only place the app builds an Accelerator; preview, export
    and the GUI's own process build none. ``alltalk-gui train`` and the training child (the GUI's runs,
    ``--processes``) train once per process; what trains several times in one process - the tests, the GPU
    suite's fixtures, the card rehearsal, a script driving :func:`train` - gets a clean state for each run.
    Under ``accelerate launch`` the process group is kept: it is the launcher's, and each of its processes runs
    one training.
    """
    import torch.distributed as dist
    from accelerate.state import AcceleratorState, GradientState

    launched = dist.is_available() and dist.is_initialized()
    AcceleratorState._reset_state(reset_partial_state=not launched)
    GradientState._reset_state()


class TrainingRun:
    """One training run of :func:`train`: set-up in cheap-to-fail order, the loop, checkpoints."""

    def __init__(self, config: TrainConfig, *, resume: bool, stop: Callable[[], bool] | None,
                 announce: Callable[[Event], None] | None = None) -> None:
        self.config = config
        self.resume = resume
        self.stop_requested = stop or (lambda: False)
        self.announce = announce  # see train()
        self.engine = get_engine(config.engine)
        self.state = TrainState()
        self.accelerator = None            # set by setup_accelerator (step 2)
        self.prepared: Prepared | None = None  # set by _setup (step 3)
        self.run_dir: Path | None = None   # known once the run is named (step 1)
        self.started_at = time.time()
        self.peaks: dict[str, float] = {}  # the run's peak memory figures (GiB), kept across memory samples
        self.probe_peak: float | None = None  # Auto's probe's own peak (GiB), kept apart from the run's
        self.parameters = 0                # the trained model's size, once it is built
        self.schedule: schedule.Schedule | None = None  # the learning-rate schedule, planned in _setup
        self.warnings: list[str] = []      # problems that do not stop the run, reported as Log events
        self.warned: set[str] = set()      # each of them is reported once

    # ------------------------------------------------------------------------------------------------ driver
    def events(self) -> Iterator[Event]:
        outcome = FinishReason.ERROR
        try:
            inputs = self._check_inputs()
            self.accelerator = setup_accelerator(self.config)
            self.prepared = yield from self._setup(inputs)
            outcome = yield from self._train(self.prepared)
        except StoppedComputing as exc:  # a stop asked for during the set-up (one process)
            yield Log(level=LogLevel.INFO, message=STOPPED_IN_SETUP.format(kept=exc))
            outcome = FinishReason.STOPPED
        except tuple(_INPUT_ERRORS) as exc:
            kind = next(kind for error, kind in _INPUT_ERRORS.items() if isinstance(exc, error))
            yield Error(kind=kind, message=str(exc),
                        **(exc.event_fields() if isinstance(exc, CheckpointWriteError) else {}))
        except Exception as exc:
            yield Error(kind=ErrorKind.CRASH, message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            yield self._done(FinishReason.ERROR)
            raise
        yield self._done(outcome)

    # ------------------------------------------------------------------------------------------------ 1. inputs
    def _check_inputs(self) -> Inputs:
        """Everything that can be wrong with the inputs, checked before the model is loaded."""
        import importlib.util

        import torch

        cfg = self.config
        cfg.validate(cuda_available=torch.cuda.is_available())
        if cfg.optimizer != "adamw" and importlib.util.find_spec("bitsandbytes") is None:
            raise ConfigError(f"optimizer={cfg.optimizer} needs the bitsandbytes package (pip install "
                              "bitsandbytes), which is not installed; use optimizer=adamw.")
        if not cfg.language:
            cfg.language = self._project_language()
        if not cfg.run_name:
            if self.resume:
                raise ResumeError("--resume needs the run to continue: give its name (run_name).")
            cfg.run_name = new_run_name()
        self.run_dir = cfg.run_dir
        base = self.engine.validate_base_model(cfg.base_model_dir)
        train_clips, eval_clips = self.engine.load_clips(cfg)
        resume_from = self._checkpoint_to_resume() if self.resume else None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / CHECKPOINTS).mkdir(exist_ok=True)
        self._check_disk(self._checkpoint_size_estimate(base.parameters))
        return Inputs(base.parameters, train_clips, eval_clips, resume_from)

    def _checkpoint_to_resume(self) -> Path:
        cfg = self.config
        resume_from = latest_checkpoint(self.run_dir)
        if resume_from is None:
            raise ResumeError(f"There is no complete checkpoint in {self.run_dir / CHECKPOINTS} to resume from.")
        try:
            read_state(resume_from)
        except CheckpointError as exc:
            raise ResumeError(str(exc)) from exc
        saved = TrainConfig.load(resume_from / CONFIG_FILE)
        if cfg.auto_micro_batch and saved.auto_micro_batch and (
                saved.batch_size * saved.grad_accum_steps == cfg.batch_size * cfg.grad_accum_steps):
            # Auto sizing chose the saved micro-batch: keep it, for an exact continuation.
            cfg.batch_size, cfg.grad_accum_steps = saved.batch_size, saved.grad_accum_steps
        changed = incompatible_for_resume(saved, cfg)
        if changed:
            raise ResumeError(
                f"The run was started with different {', '.join(changed)}; a resume must keep them. "
                "Start a new run to train with other settings."
            )
        return resume_from

    def _project_language(self) -> str:
        from alltalk_gui.core.project.folder import PROJECT_FILE, VoiceProject

        root = Path(self.config.project_dir) if self.config.project_dir else None
        if root is not None and (root / PROJECT_FILE).is_file():
            return VoiceProject.open(root).language
        return "en"

    def _checkpoint_size_estimate(self, parameters: int) -> int:
        """The size of the run's last checkpoint; before the first, what the engine expects of this config."""
        last = latest_checkpoint(self.run_dir) if self.run_dir.exists() else None
        if last is not None:
            return sum(f.stat().st_size for f in last.iterdir() if f.is_file())
        needs = self.engine.disk_needs(self.config)
        if needs is not None:
            return needs.checkpoint_bytes
        moments = 2 if "8bit" in self.config.optimizer else 8  # bytes per parameter of optimizer state
        return parameters * (4 + moments) + (1 << 20)

    def _check_disk(self, needed: int) -> None:
        target = self.run_dir / CHECKPOINTS
        free = disk_free_bytes(target)
        needed = int(needed * 1.05) + (64 << 20)  # headroom for the json files and the file system
        if free < needed:
            raise DiskFullError(
                f"Not enough free disk space for a checkpoint in {target}: about {disk.size_text(needed)} needed, "
                f"{disk.size_text(free)} free. {self._what_is_kept()}", folder=target, needed=needed, free=free)

    def _what_is_kept(self) -> str:
        last = latest_checkpoint(self.run_dir)
        kept = f"The last checkpoint ({last.name}) is kept. " if last else ""
        return (f"{kept}Free some space (delete old runs, or keep fewer checkpoints: keep_last), then "
                f"{'resume the run (Resume, or --resume)' if last else 'start it again'} to go on.")

    # ------------------------------------------------------------------------------------------------ 3. set-up
    def _setup_progress(self) -> Any:
        """While the engine sets up, the clips it computes report to :attr:`announce` (the main process), and a stop
        asked for ends the set-up before the next clip (one process only: several stop together at a step)."""
        acc = self.accelerator
        say = None
        if self.announce is not None and acc.is_main_process:
            def say(what: str, computed: int, read: int) -> None:
                self.announce(Preparing(what=what, computed=computed, read=read))
        return reporting(say, stop=self._stop_asked if acc.num_processes == 1 else None)

    def _setup(self, inputs: Inputs) -> Iterator[Event]:
        """Model, loss and data from the engine; optimiser, schedule and loaders; the checkpoint to resume.
        Returns :class:`Prepared`."""
        from accelerate.utils import DistributedType

        from alltalk_gui.core.training.levers import make_optimizer

        cfg, acc = self.config, self.accelerator
        if cfg.auto_micro_batch:
            yield from self._cap_gpu_memory()
        clips = len(inputs.train_clips) + len(inputs.eval_clips)
        yield Log(level=LogLevel.INFO, message=SETTING_UP.format(clips=clips))
        with self._setup_progress():
            parts = self.engine.training_setup(cfg, (inputs.train_clips, inputs.eval_clips), acc.device)
        self.parameters = parts.parameters
        optimizer = make_optimizer(parts.model, cfg)
        # The model first: on the device, wrapped for the run's mixed precision (and DDP/FSDP), as it trains. Auto
        # sizing's probe trains through this prepared model, so it measures what a training step costs.
        model, prepared_optimizer = acc.prepare(parts.model, optimizer)
        if cfg.auto_micro_batch and inputs.resume_from is None:  # a resume keeps the micro-batch it was saved with
            yield from self._probe_micro_batch(parts, model)
        sampler = BucketBatchSampler(parts.lengths, cfg.batch_size, seed=cfg.seed, bucket_batches=cfg.bucket_batches)
        train_loader = self._data_loader(parts.train_set, sampler, parts.collate)
        eval_loader = self._data_loader(parts.eval_set, BucketBatchSampler(
            parts.eval_lengths, cfg.batch_size, seed=cfg.seed, shuffle=False), parts.collate)
        self.schedule = schedule.plan(cfg, schedule.micro_batches_per_epoch(
            len(inputs.train_clips), cfg.batch_size, acc.num_processes), acc.num_processes)
        scheduler = self._build_scheduler(optimizer)  # on the optimizer itself: accelerate pairs them by it

        train_loader, eval_loader, scheduler = acc.prepare(train_loader, eval_loader, scheduler)
        optimizer = prepared_optimizer
        for extra in parts.checkpointed:  # saved and restored with the model (e.g. an EMA of the weights)
            acc.register_for_checkpointing(extra)
        for note in parts.notes:
            yield Log(level=LogLevel.INFO, message=note)
        steps_per_epoch = math.ceil(len(train_loader) / cfg.grad_accum_steps)
        total_steps = min(steps_per_epoch * cfg.epochs, cfg.max_steps) if cfg.max_steps else steps_per_epoch * cfg.epochs
        retry = OutOfMemoryRetry(model, acc, cfg, loss=parts.loss, batch_size=parts.batch_size, split=parts.split,
                                 sums=partial(_loss_sums, parts=parts.loss_parts))

        if inputs.resume_from is not None:
            if acc.distributed_type == DistributedType.FSDP:
                # accelerate's sharded FSDP load fills only the state the optimizer already holds, and a new one
                # holds none before its first step: without this a resumed run restarts its Adam moments.
                init_optimizer_state(optimizer.optimizer)
            acc.load_state(str(inputs.resume_from))
            saved = read_state(inputs.resume_from)  # type-checked in _check_inputs, before the model was built
            self.state = TrainState(**saved)
            self._resume_schedule()
            yield Log(level=LogLevel.INFO,
                      message=f"Resumed from {inputs.resume_from.name} (step {self.state.global_step}).")
        else:
            self.state.schedule = self.schedule.to_dict()
            atomic.write_json(self.run_dir / CONFIG_FILE, cfg.to_dict())

        yield Started(
            run_dir=str(self.run_dir), device=str(acc.device), processes=acc.num_processes,
            train_clips=len(inputs.train_clips), eval_clips=len(inputs.eval_clips),
            steps_per_epoch=steps_per_epoch, total_steps=total_steps,
            start_step=self.state.global_step, start_epoch=self.state.epoch,
            trainable_parameters=parts.trainable, config=cfg.to_dict(),
        )
        return Prepared(parts, model, optimizer, scheduler, train_loader, eval_loader, sampler, retry,
                        steps_per_epoch, total_steps)

    # -- learning-rate schedule (core/training/schedule.py) -------------------------------------------------------
    def _build_scheduler(self, optimizer):
        """A LambdaLR that follows ``self.schedule``. accelerate steps a prepared scheduler once per process per
        optimizer step, hence the division. A plain function (not a callable object) keeps the schedule out of the
        scheduler's saved state: the checkpoint's train_state.json holds it, and a resume may move its horizon."""
        import torch

        processes = self.accelerator.num_processes
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda k: self.schedule.factor(k // processes) * self.schedule.peak_lr / self.config.lr)

    def _resume_schedule(self) -> None:
        """Go on with the schedule the run was saved with; a changed number of epochs only moves its horizon."""
        saved = schedule.Schedule.from_dict(self.state.schedule) if self.state.schedule else None
        self.schedule = schedule.resume(saved, self.schedule, self.state.global_step)
        self.state.schedule = self.schedule.to_dict()

    def _cap_gpu_memory(self) -> Iterator[Event]:
        """Auto sizing uses at most 90 % of the GPU memory that was free at the start (see ``cap_gpu_memory``)."""
        import torch

        from alltalk_gui.core.training.levers import cap_gpu_memory
        from alltalk_gui.core.training.profiles import AUTO_HEADROOM

        device = self.accelerator.device
        capped = cap_gpu_memory(device, AUTO_HEADROOM)
        if capped is not None:
            cap, free = capped
            yield Log(level=LogLevel.INFO,
                      message=f"Auto sizing: using at most {cap / 2**30:.1f} GiB, {AUTO_HEADROOM:.0%} of the "
                              f"{free / 2**30:.1f} GiB free on {torch.cuda.get_device_name(device)}.")

    def _data_loader(self, dataset, batch_sampler, collate):
        """A torch DataLoader of ``dataset`` in the batches ``batch_sampler`` gives (not yet prepared by accelerate).
        Its own generator: creating a DataLoader iterator draws a seed, and drawing it from the global RNG would
        shift dropout after a resume."""
        import torch

        return torch.utils.data.DataLoader(dataset, batch_sampler=batch_sampler, collate_fn=collate,
                                           num_workers=self.config.num_workers,
                                           pin_memory=self.accelerator.device.type == "cuda",
                                           generator=torch.Generator().manual_seed(self.config.seed))

    def _probe_micro_batch(self, parts: TrainingSetup, model) -> Iterator[Event]:
        """Find the largest micro-batch whose forward and backward pass on the longest clips fits, with
        accelerate's ``find_executable_batch_size`` (it halves the size after each out-of-memory error), and
        accumulate enough micro-batches to keep the effective batch.

        Each try is a training step's pass (:func:`~alltalk_gui.core.training.levers.probe_micro_batch`): the
        prepared ``model`` (its mixed precision, its frozen parts), the engine's loss, and a batch of the longest
        clips from a loader built and prepared as the training loader is, so it reaches the model on the device
        exactly as every training batch does."""
        import torch

        from alltalk_gui.core.training.levers import probe_micro_batch

        cfg, acc = self.config, self.accelerator
        effective = cfg.batch_size * cfg.grad_accum_steps
        # The clips batches are padded to: the longest by the length the batches are bucketed by.
        longest = sorted(range(len(parts.lengths)), key=parts.lengths.__getitem__, reverse=True)

        def longest_batch(size: int):
            clips = [longest[i % len(longest)] for i in range(size)]
            [batch] = acc.prepare_data_loader(self._data_loader(parts.train_set, [clips], parts.collate))
            return batch

        micro = probe_micro_batch(model, longest_batch, parts.loss, cfg, acc, effective)
        self._end_the_probes_memory_window()
        if not micro:
            raise OutOfMemory(out_of_memory_advice(cfg.profile, "even one clip of the longest length"))
        # Every process must train with the same micro-batch: the smallest that fit anywhere.
        micro = int(acc.gather(torch.tensor([micro], device=acc.device)).min())
        accum = math.ceil(effective / micro)
        cfg.batch_size, cfg.grad_accum_steps = micro, accum
        acc.gradient_accumulation_steps = accum
        yield MicroBatch(cause=MicroBatchCause.PROBE, step=0, micro_batch=micro, grad_accum=accum,
                         effective_batch=micro * accum * acc.num_processes,
                         message=f"Auto sizing: {micro} clip(s) of the longest length ({parts.longest_seconds:.1f} s) "
                                 f"fit per micro-batch; {accum} micro-batch(es) per step keep the effective batch "
                                 f"of {micro * accum * acc.num_processes}.")

    # ------------------------------------------------------------------------------------------------ 4. the loop
    def _train(self, p: Prepared) -> Iterator[Event]:
        """The training loop; returns the outcome (a :class:`FinishReason`)."""
        import torch

        cfg, acc, st = self.config, self.accelerator, self.state
        last_memory = 0.0
        if cfg.max_steps and st.global_step >= cfg.max_steps:
            # Resumed at the step limit (a stop that came during the last step checkpoints it as stopped): no
            # step is left. The loop below checks the limit only after a step, so it would train one beyond it.
            yield self._save(CheckpointReason.FINAL)
            return FinishReason.MAX_STEPS
        if st.batches_done >= len(p.train_loader):  # the checkpoint was taken at the end of an epoch
            st.epoch, st.batches_done = st.epoch + 1, 0
        if cfg.eval_each_epoch and st.global_step == 0 and st.batches_done == 0 and not st.history:
            yield from self._evaluate(p)  # the base model's eval loss: the baseline the run's evals are read against
        while st.epoch < cfg.epochs:
            for data in (p.train_loader, p.sampler, p.engine.train_set):
                data.set_epoch(st.epoch)
            loader = acc.skip_first_batches(p.train_loader, st.batches_done) if st.batches_done else p.train_loader
            sums, step_start = None, time.time()  # loss sums over this step's micro-batches
            for batch in loader:
                with acc.accumulate(p.model):
                    # 1. forward and backward; out of memory: the step's micro-batches again, in smaller chunks
                    try:
                        batch_sums, redone = yield from p.retry.backward(batch, st.global_step + 1)
                    except OutOfMemory as exc:
                        st.batches_done -= len(p.retry.window) - 1  # the unfinished step is trained again after a resume
                        yield self._save(CheckpointReason.OUT_OF_MEMORY)
                        yield Error(kind=ErrorKind.OUT_OF_MEMORY, message=str(exc))
                        return FinishReason.ERROR
                    sums = batch_sums if redone or sums is None else sums + batch_sums
                    # 2. clip and step (accelerate's prepared optimizer steps only at the end of the accumulation)
                    if acc.sync_gradients:
                        grad_norm = yield from self._clip_gradients(p)
                    p.optimizer.step()
                    p.scheduler.step()
                    # Free the gradients right away: no need for this memory until the next backward.
                    p.optimizer.zero_grad(set_to_none=True)
                st.batches_done += 1
                if not acc.sync_gradients:
                    continue

                # 3. report the step (losses of all processes)
                p.retry.step_done()
                st.global_step += 1
                if p.engine.after_step is not None:
                    p.engine.after_step(acc.unwrap_model(p.model))
                yield self._step_event(p, acc.reduce(sums, reduction="sum"), grad_norm, time.time() - step_start)
                if time.time() - last_memory >= cfg.memory_interval_s:
                    last_memory = time.time()
                    yield Memory(step=st.global_step, stats=self._sample_memory())
                sums, step_start = None, time.time()

                # 4. stop, or save
                if self._should_stop():
                    yield self._save(CheckpointReason.STOPPED)
                    return FinishReason.STOPPED
                if cfg.max_steps and st.global_step >= cfg.max_steps:
                    yield self._save(CheckpointReason.FINAL)
                    return FinishReason.MAX_STEPS
                if cfg.save_every_steps and st.global_step % cfg.save_every_steps == 0:
                    yield self._save(CheckpointReason.INTERVAL)

            # The epoch ran to its end: eval and checkpoint (every checkpoint_every_epochs-th epoch, and the last).
            if (st.epoch + 1) % cfg.checkpoint_every_epochs == 0 or st.epoch + 1 >= cfg.epochs:
                if cfg.eval_each_epoch:
                    yield from self._evaluate(p)
                yield self._save(CheckpointReason.EPOCH, eval_loss=st.history[-1]["loss"] if st.history else None)
            st.epoch, st.batches_done = st.epoch + 1, 0
        return FinishReason.FINISHED

    def _clip_gradients(self, p: Prepared) -> Iterator[Event]:
        """Clip to ``max_grad_norm``; a non-finite gradient drops this update. Returns the norm before clipping."""
        import torch

        cfg, acc = self.config, self.accelerator
        # clip_grad_norm_ unscales fp16 gradients first and returns the norm before clipping.
        max_norm = cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")
        grad_norm = acc.clip_grad_norm_(p.model.parameters(), max_norm)
        # A NaN or infinite gradient would spoil every weight it touched: skip this update.
        # (fp16 is left to its loss scaler, which skips such steps and lowers its scale.)
        if cfg.mixed_precision != "fp16" and not torch.isfinite(grad_norm):
            p.optimizer.zero_grad(set_to_none=True)
            yield Log(level=LogLevel.WARNING, message=f"Step {self.state.global_step + 1}: the gradient was not a "
                      "finite number, so this update was skipped; training goes on.")
        return grad_norm

    def _step_event(self, p: Prepared, totals, grad_norm, elapsed: float) -> Step:
        st = self.state
        clips = totals[-1]
        st.last_loss = float(totals[0] / clips)
        return Step(step=st.global_step, epoch=st.epoch, loss=st.last_loss,
                    parts=_part_means(totals, p.engine.loss_parts), lr=float(p.scheduler.get_last_lr()[0]),
                    grad_norm=float(grad_norm),
                    samples_per_s=float(clips) / max(elapsed, 1e-9), step_time_s=elapsed,
                    total_steps=p.total_steps)

    def _sample_memory(self) -> dict[str, float]:
        """A memory sample; the run's peaks are kept across samples (each sample starts a new CUDA peak window)."""
        from alltalk_gui.core.machine.memory import memory_stats

        stats = memory_stats(self.accelerator.device, reset_peak=True)
        for key in ("cuda_peak_reserved", "cuda_peak_allocated", "rss_peak"):
            if key in stats:
                self.peaks[key] = max(self.peaks.get(key, 0.0), stats[key])
        return stats

    def _end_the_probes_memory_window(self) -> None:
        """Keep the probe's peak memory apart from the run's. A size that does not fit fills the allocator up to
        Auto's cap before it runs out (that is how the probe learns it is too big), so the probe's peak is the cap,
        whatever the steps need: counted as the run's, it read 13.93 GiB (the cap) for F5 High at 2 x 4 on the card
        rehearsal's 16 GiB card (H200, 2026-11-27), where the memory benchmark measures that setting's steps at
        12.26, and the cap again on every pretended card whose probe had to cut the micro-batch. So the probe's
        cached blocks go back to the card and a new CUDA peak window starts: the run's peak (its Done event, its
        memory.json) is its steps'. The probe's own is recorded beside it. On the CPU resident memory has no such
        window: there the run's peak includes the probe's."""
        import torch

        from alltalk_gui.core.machine.memory import memory_stats

        device = self.accelerator.device
        if device.type == "cuda":
            torch.cuda.empty_cache()
        stats = memory_stats(device, reset_peak=True)
        self.probe_peak = stats.get("cuda_peak_reserved", stats["rss_peak"])

    def _stop_asked(self) -> bool:
        """Whether this process was asked to stop: by the caller, or by a STOP file in the run folder."""
        return self.stop_requested() or (self.run_dir / STOP_FILE).exists()

    def _should_stop(self) -> bool:
        """Stop when asked by the caller or a STOP file; all processes agree through accelerate's trigger."""
        acc = self.accelerator
        if self._stop_asked():
            acc.set_trigger()
        return acc.check_trigger()

    def _evaluate(self, p: Prepared) -> Iterator[Event]:
        import torch

        acc, st = self.accelerator, self.state
        p.model.eval()
        sums = None
        with torch.no_grad():
            for batch in p.eval_loader:
                losses = p.engine.loss(p.model, batch, eval_mode=True)
                batch_sums = _loss_sums(losses, p.engine.batch_size(batch), p.engine.loss_parts)
                sums = batch_sums if sums is None else sums + batch_sums
        p.model.train()
        totals = acc.reduce(sums, reduction="sum")
        clips = totals[-1]
        loss = float(totals[0] / clips)
        # The step-0 eval measures the base model: no checkpoint to be "best" yet.
        best = st.global_step > 0 and (st.best_eval_loss is None or loss < st.best_eval_loss)
        st.history.append({"epoch": st.epoch, "step": st.global_step, "loss": loss})
        yield Eval(step=st.global_step, epoch=st.epoch, loss=loss, parts=_part_means(totals, p.engine.loss_parts),
                   clips=len(p.engine.eval_lengths), best=best)

    # ------------------------------------------------------------------------------------------------ checkpoints
    def _save(self, reason: CheckpointReason, eval_loss: float | None = None) -> Checkpoint:
        acc, st = self.accelerator, self.state
        root = self.run_dir / CHECKPOINTS
        name = f"step_{st.global_step:07d}"
        final, tmp = root / name, root / f".tmp-{name}"
        if eval_loss is not None and (st.best_eval_loss is None or eval_loss < st.best_eval_loss):
            st.best_eval_loss, st.best_checkpoint = eval_loss, name
        if not final.exists():
            needed = self._checkpoint_size_estimate(self.parameters)
            self._check_disk(needed)  # every process checks: they must agree
            if acc.is_main_process and tmp.exists():
                shutil.rmtree(tmp)
            acc.wait_for_everyone()
            self._write_checkpoint(tmp, final, needed)
            if acc.is_main_process:
                self._prune()  # only now: until a new checkpoint is complete, the earlier ones all stay
            acc.wait_for_everyone()
        elif acc.is_main_process:  # already saved at this step (e.g. interval and epoch end coincide)
            atomic.write_json(final / STATE_FILE, st.to_dict())
            self._prune()  # this checkpoint may just have become the best one
        return Checkpoint(step=st.global_step, epoch=st.epoch, path=str(final), reason=reason, eval_loss=eval_loss)

    def _write_checkpoint(self, tmp: Path, final: Path, needed: int) -> None:
        """``save_state`` into ``tmp``, then our JSON files, flushed, renamed to ``final``. A write that fails on any
        process (the disk filled up, an I/O error) removes ``tmp`` and raises :class:`DiskFullError` or
        :class:`CheckpointWriteError` on every process, so that they all stop together."""
        acc, st = self.accelerator, self.state
        error = None
        try:
            acc.save_state(str(tmp))
        except (OSError, RuntimeError) as exc:  # torch's file writer raises RuntimeError for a failed write
            error = disk.as_os_error(exc, tmp.parent)
        error = self._agree(error)
        if error is None and acc.is_main_process:
            try:
                atomic.write_json(tmp / CONFIG_FILE, self.config.to_dict())
                atomic.write_json(tmp / STATE_FILE, st.to_dict())  # last: its presence marks a complete checkpoint
                atomic.fsync_tree(tmp)
                slow_step, _, slow_s = os.environ.get(SLOW_SAVE_ENV, "").partition(":")
                if slow_step and int(slow_step) == st.global_step:
                    time.sleep(float(slow_s))
                folders.rename(tmp, final)  # retried while an antivirus scans the new files (Windows)
                atomic.fsync_dir(final.parent)
            except OSError as exc:
                error = exc
        error = self._agree(error)
        if error is not None:
            raise self._write_failed(tmp, error, needed)

    def _agree(self, error: OSError | None) -> OSError | None:
        """``error``, or one standing for another process's failed write: every process must take the same way."""
        acc = self.accelerator
        if acc.num_processes == 1:
            return error
        import torch

        failed = acc.reduce(torch.tensor([float(error is not None)], device=acc.device), reduction="sum")
        if error is None and float(failed.item()) > 0:
            return OSError(errno.EIO, "another training process could not write its part of the checkpoint")
        return error

    def _write_failed(self, tmp: Path, error: OSError, needed: int) -> CheckpointWriteError:
        """Remove the partial checkpoint and say what happened, where, and what is needed there."""
        root = tmp.parent
        failed = disk.write_failed(f"The checkpoint at step {self.state.global_step}", root, error, needed)  # as it was
        left = folders.remove_tree(tmp) if self.accelerator.is_main_process else None
        text = f"{failed} {left or 'The partial checkpoint was removed.'} {self._what_is_kept()}"
        kind = DiskFullError if disk.is_full(error) else CheckpointWriteError
        return kind(text, folder=root, needed=needed, free=disk.free_bytes(root))

    def _prune(self) -> None:
        """Keep the newest ``keep_last`` checkpoints, the best by eval loss and those marked to keep (the judge's
        choice); delete the rest."""
        root = self.run_dir / CHECKPOINTS
        done = sorted((p for p in root.glob("step_*") if (p / STATE_FILE).is_file()),
                      key=lambda p: int(p.name.split("_")[1]))
        keep = {p.name for p in done[-self.config.keep_last:]} | {p.name for p in done if (p / KEEP_MARK).is_file()}
        if self.state.best_checkpoint:
            keep.add(self.state.best_checkpoint)
        doomed = [p for p in done if p.name not in keep]
        doomed += [stale for stale in root.glob(".tmp-*")  # left by a crash during an earlier save
                   if stale.name != f".tmp-step_{self.state.global_step:07d}"]
        for path in doomed:
            problem = folders.remove_tree(path)
            if problem and problem not in self.warned:  # a checkpoint is gigabytes: say so, once
                self.warned.add(problem)
                self.warnings.append(problem)

    # ------------------------------------------------------------------------------------------------ the end
    def _done(self, reason: FinishReason) -> Done:
        st = self.state
        known = self.run_dir is not None and self.run_dir.exists()
        last = latest_checkpoint(self.run_dir) if known else None
        best = str(self.run_dir / CHECKPOINTS / st.best_checkpoint) if known and st.best_checkpoint else None
        peak, estimated = self._record_memory() if self.parameters else (None, None)
        return Done(step=st.global_step, epoch=st.epoch, reason=reason, final_loss=st.last_loss,
                    best_eval_loss=st.best_eval_loss, best_checkpoint=best,
                    base_eval_loss=next((h["loss"] for h in st.history if h["step"] == 0), None),
                    last_checkpoint=str(last) if last else None, elapsed_s=time.time() - self.started_at,
                    peak_memory_gib=peak, estimated_memory_gib=estimated)

    def _record_memory(self) -> tuple[float | None, float | None]:
        """Write the run's measured peak memory next to the engine's prediction (``memory.json`` in the run
        folder, one entry per session of the run), so that the estimate can be checked against real runs."""
        self._sample_memory()
        acc, cfg = self.accelerator, self.config
        on_gpu = acc.device.type == "cuda"
        peak = self.peaks.get("cuda_peak_reserved" if on_gpu else "rss_peak")
        # The estimator describes the real-size model; a run on another size (the tests' tiny model) gets none. It
        # is asked, as the profiles were, for the longest clip this run trains on.
        longest = self.prepared.engine.longest_seconds if self.prepared is not None else None
        estimate = self.engine.estimate_memory(sized_for(cfg, longest), attention_scores=not on_gpu,
                                               parameters=self.parameters)
        predicted = estimate.total_gib if estimate is not None else None
        retry = self.prepared.retry if self.prepared is not None else None
        if acc.is_main_process:
            path = self.run_dir / MEMORY_FILE
            try:
                sessions = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
            except ValueError:
                sessions = []
            if not isinstance(sessions, list):  # valid JSON of another shape: start the record again
                sessions = []
            sessions.append({
                "date": time.strftime("%Y-%m-%d %H:%M:%S"), "device": str(acc.device), "profile": cfg.profile,
                "micro_batch": retry.micro_batch if retry else cfg.batch_size,
                "grad_accum": retry.grad_accum if retry else cfg.grad_accum_steps, "processes": acc.num_processes,
                "max_audio_seconds": cfg.max_audio_seconds, "steps": self.state.global_step,
                # Both peaks rounded alike, so that the probe's never reads above the run's that includes it.
                "measured_peak_gib": _gib(peak), "measured": dict(self.peaks), "estimated_peak_gib": predicted,
                "probe_peak_gib": _gib(self.probe_peak),
                "measure": "cuda max_memory_reserved" if on_gpu else "peak RSS",
            })
            try:
                atomic.write_json(path, sessions)
            except OSError as exc:  # a full disk must not turn a clean end into a crash; the record is optional
                self.warnings.append(f"The memory record {path} could not be written: {disk.reason(exc)}.")
        return _gib(peak), predicted


def _part_means(totals, parts: tuple[str, ...]) -> dict[str, float]:
    """The engine's loss parts by name, each a mean per clip, from :func:`_loss_sums`' totals."""
    return {name: float(totals[1 + i] / totals[-1]) for i, name in enumerate(parts)}


def _loss_sums(losses: dict[str, Any], clips: int, parts: tuple[str, ...]):
    """(loss, its named parts...) x clips, and clips: what a step or an eval adds up over its batches."""
    import torch

    loss = losses["loss"].detach()
    # The clip count is filled on the device (new_full): torch.tensor(..., device=) would copy it from the host,
    # and a blocking copy to a GPU waits for the card to finish the micro-step first.
    return torch.stack([loss.float() * clips, *(losses[name].detach().float() * clips for name in parts),
                        loss.new_full((), float(clips), dtype=torch.float32)])


def _gib(value: float | None) -> float | None:
    """A memory figure as recorded and reported: GiB to the MiB's thousandth, or None where none was measured."""
    return round(value, 3) if value is not None else None
