"""The XTTS v2 GPT training loop: ``train(config) -> Iterator[Event]``.

Read top to bottom: :class:`TrainingRun` sets things up in the order they can fail cheaply (config, base
model, dataset, disk) so a bad input is reported before any model loads, then builds the model, optimiser and
data with HuggingFace accelerate, then runs the loop. Everything leaves the loop as plain events
(:mod:`alltalk_gui.core.training.events`); only the main process yields them.

The same code runs in one process or under ``accelerate launch --multi_gpu --num_processes N`` (DDP, or FSDP
through accelerate's own config file): accelerate shards the batches, synchronises the gradients and tells us
which process is the main one. There is no distribution code of our own.

Checkpoints are ``accelerator.save_state`` folders (GPT weights as safetensors, optimizer, scheduler, scaler,
RNG states) plus our ``train_state.json`` (step, epoch, batches done in the epoch, best eval loss) and
``train_config.json``. Each is written into ``checkpoints/.tmp-step_N`` and renamed to ``checkpoints/step_N``
only when complete, so a crash at any moment leaves the previous checkpoints intact and no half-written one
that a resume could pick up. Resume restores all of it and skips the batches already seen in the epoch
(``skip_first_batches``); data order and conditioning slices depend only on (seed, epoch, index), so 2 + 2 steps
with a resume in between give the same weights as 4 steps straight.
"""

from __future__ import annotations

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

from alltalk_gui.core import atomic, folders
from alltalk_gui.core.training.checkpoints import CHECKPOINTS, CONFIG_FILE, STATE_FILE, CheckpointError, read_state
from alltalk_gui.core.training.config import ConfigError, TrainConfig, incompatible_for_resume
from alltalk_gui.core.engines.xtts.files import BaseModelError, validate_base_model
from alltalk_gui.core.training.events import Checkpoint, Done, Error, Eval, Event, Log, Memory, MicroBatch, Started, Step
from alltalk_gui.core.training.data import DatasetError
from alltalk_gui.core.training.run_folders import EVENTS_FILE, MEMORY_FILE, STOP_FILE, new_run_name  # noqa: F401

MAX_OOM_SPLIT = 64  # a micro-batch is cut into at most this many chunks after out-of-memory errors
# Test hook for the crash-safety test: "STEP:SECONDS" makes the save at STEP wait SECONDS between writing the
# checkpoint's files and publishing it, so a test can kill the process at exactly that moment.
SLOW_SAVE_ENV = "ALLTALK_GUI_TEST_SLOW_SAVE"


class DiskFullError(RuntimeError):
    """Not enough free disk space for the next checkpoint."""


class OutOfMemory(RuntimeError):
    """The GPU ran out of memory even with the smallest micro-batch; the message says what to change."""


class ResumeError(RuntimeError):
    """--resume was asked for but there is nothing (compatible) to resume."""


def disk_free_bytes(path: Path) -> int:
    """Free bytes on the file system holding ``path`` (a function so tests can simulate a full disk)."""
    return shutil.disk_usage(path).free


def latest_checkpoint(run_dir: str | os.PathLike[str]) -> Path | None:
    """The newest complete checkpoint folder of a run (``.tmp-*`` folders are never complete)."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return None
    done = [p for p in root.glob("step_*") if (p / STATE_FILE).is_file()]
    return max(done, key=lambda p: int(p.name.split("_")[1]), default=None)


def train(config: TrainConfig, *, resume: bool = False, stop: Callable[[], bool] | None = None) -> Iterator[Event]:
    """Run (or resume) training and yield its events; the last one is always :class:`Done`.

    Args:
        config: the run's settings; see :class:`TrainConfig`.
        resume: continue from the newest complete checkpoint in the run folder (``config.run_name`` must name it).
        stop: polled once per optimizer step; when it returns True (or the run folder holds a ``STOP`` file)
            the loop finishes the step, saves a checkpoint and ends with ``Done(reason="stopped")``.

    Problems with the inputs (config, base model, dataset, disk space) come out as an :class:`Error` event before
    any model is loaded, followed by ``Done(reason="error")``; nothing in the project is changed by them.
    """
    run = TrainingRun(config, resume=resume, stop=stop)
    yield from run.events()


@dataclass
class _State:
    """What train_state.json holds: where the loop is and what it has seen."""

    global_step: int = 0
    epoch: int = 0
    batches_done: int = 0  # micro-batches of `epoch` already trained on (this process)
    best_eval_loss: float | None = None
    best_checkpoint: str | None = None
    last_loss: float | None = None
    history: list[dict[str, Any]] = field(default_factory=list)  # eval results per epoch


class TrainingRun:
    """One training run: setup in cheap-to-fail order, the loop, checkpoints. Use :func:`train`."""

    def __init__(self, config: TrainConfig, *, resume: bool, stop: Callable[[], bool] | None) -> None:
        self.config = config
        self.resume = resume
        self.stop_requested = stop or (lambda: False)
        self.state = _State()
        self.accelerator = None
        self.t0 = time.time()
        self.peaks: dict[str, float] = {}  # the run's peak memory figures (GiB), kept across memory samples
        self.split = 1  # each micro-batch runs as this many chunks, raised after an out-of-memory error
        self.gpt_parameters = 0
        self.warnings: list[str] = []  # problems that do not stop the run, reported as Log events
        self.warned: set[str] = set()  # each of them is reported once

    # ------------------------------------------------------------------------------------------------ driver
    def events(self) -> Iterator[Event]:
        try:
            self._check_inputs()
            self._setup_accelerator()
            yield from self._main_only(self._setup_model_and_data())
            yield from self._main_only(self._loop())
        except (ConfigError, BaseModelError, DatasetError, DiskFullError, ResumeError, OutOfMemory) as exc:
            kind = {ConfigError: "config", BaseModelError: "base_model", DatasetError: "dataset",
                    DiskFullError: "disk_full", ResumeError: "resume", OutOfMemory: "out_of_memory"}[type(exc)]
            yield from self._main_only(iter([Error(kind=kind, message=str(exc)), self._done("error")]))
        except Exception as exc:
            yield from self._main_only(iter([
                Error(kind="crash", message=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"),
                self._done("error"),
            ]))
            raise

    def _main_only(self, events: Iterator[Event]) -> Iterator[Event]:
        """Every process runs the generator (they must stay in step); only the main process reports."""
        for event in events:
            if self.accelerator is None or self.accelerator.is_main_process:
                while self.warnings:  # raised while making ``event`` (e.g. a checkpoint that could not be pruned)
                    yield Log(level="warning", message=self.warnings.pop(0))
                yield event

    # ------------------------------------------------------------------------------------------------ setup
    def _check_inputs(self) -> None:
        """Everything that can be wrong with the inputs, checked before the model is loaded."""
        import torch

        from alltalk_gui.core.engines.xtts.files import load_tokenizer
        from alltalk_gui.core.training.data import load_dataset

        from alltalk_gui.core.engines.xtts.model import import_coqui_trainer

        # First import of coqui's trainer modules under our control: it sets torch to one thread; this undoes it.
        import_coqui_trainer()
        cfg = self.config
        cfg.validate(cuda_available=torch.cuda.is_available())
        if cfg.optimizer != "adamw":
            import importlib.util

            if importlib.util.find_spec("bitsandbytes") is None:
                raise ConfigError(f"optimizer={cfg.optimizer} needs the bitsandbytes package (pip install "
                                  "bitsandbytes), which is not installed; use optimizer=adamw.")
        if not cfg.language:
            cfg.language = self._project_language()
        if not cfg.run_name:
            if self.resume:
                raise ResumeError("--resume needs the run to continue: give its name (run_name).")
            cfg.run_name = new_run_name()
        self.run_dir = cfg.run_dir
        self.base = validate_base_model(cfg.base_model_dir)
        self.tokenizer = load_tokenizer(cfg.base_model_dir)
        self.train_clips, self.eval_clips = load_dataset(
            cfg.dataset_path, self.tokenizer, cfg.language, max_audio_seconds=cfg.max_audio_seconds,
            min_audio_seconds=cfg.min_audio_seconds, max_text_tokens=cfg.max_text_tokens,
        )
        self.resume_from = None
        if self.resume:
            self.resume_from = latest_checkpoint(self.run_dir)
            if self.resume_from is None:
                raise ResumeError(f"There is no complete checkpoint in {self.run_dir / CHECKPOINTS} to resume from.")
            try:
                read_state(self.resume_from)
            except CheckpointError as exc:
                raise ResumeError(str(exc)) from exc
            saved = TrainConfig.load(self.resume_from / CONFIG_FILE)
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
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / CHECKPOINTS).mkdir(exist_ok=True)
        self._check_disk(self._checkpoint_size_estimate())

    def _project_language(self) -> str:
        from alltalk_gui.core.project.folder import PROJECT_FILE, VoiceProject

        root = Path(self.config.project_dir) if self.config.project_dir else None
        if root is not None and (root / PROJECT_FILE).is_file():
            return VoiceProject.open(root).language
        return "en"

    def _checkpoint_size_estimate(self) -> int:
        last = latest_checkpoint(self.run_dir) if self.run_dir.exists() else None
        if last is not None:
            return sum(f.stat().st_size for f in last.iterdir() if f.is_file())
        moments = 2 if "8bit" in self.config.optimizer else 8  # bytes per parameter of optimizer state
        return self.base.gpt_parameters * (4 + moments) + (1 << 20)

    def _check_disk(self, needed: int) -> None:
        target = self.run_dir / CHECKPOINTS
        free = disk_free_bytes(target)
        needed = int(needed * 1.05) + (64 << 20)  # headroom for the json files and the file system
        if free < needed:
            last = latest_checkpoint(self.run_dir)
            kept = f"The last checkpoint ({last.name}) is kept. " if last else ""
            raise DiskFullError(
                f"Not enough free disk space for a checkpoint in {target}: about {needed / 1e9:.2f} GB needed, "
                f"{free / 1e9:.2f} GB free. {kept}Free some space (or delete old runs) and run again"
                f"{' with --resume' if last else ''} to go on."
            )

    def _setup_accelerator(self) -> None:
        import torch
        from accelerate import Accelerator
        from accelerate.utils import InitProcessGroupKwargs, set_seed

        from alltalk_gui.core.machine.memory import use_expandable_segments
        from alltalk_gui.core.training.launch import distributed_backend

        cfg = self.config
        use_expandable_segments()  # before the first CUDA allocation, which comes below
        self.accelerator = Accelerator(
            mixed_precision=cfg.mixed_precision,
            gradient_accumulation_steps=cfg.grad_accum_steps,
            cpu=cfg.device == "cpu" or not torch.cuda.is_available(),
            # Windows builds of PyTorch have no NCCL: several processes meet over gloo there.
            kwargs_handlers=[InitProcessGroupKwargs(backend=backend)] if (backend := distributed_backend()) else None,
        )
        set_seed(cfg.seed)

    def _setup_model_and_data(self) -> Iterator[Event]:
        import torch

        from alltalk_gui.core.engines.xtts.model import LossWeights, XttsFeatures, load_gpt
        from alltalk_gui.core.training.levers import apply_memory_levers, make_optimizer
        from alltalk_gui.core.training.data import BucketBatchSampler, ClipDataset, collate

        cfg, acc = self.config, self.accelerator
        if cfg.auto_micro_batch:
            yield from self._cap_gpu_memory()
        gpt, xtts_config, _ = load_gpt(cfg.base_model_dir)
        trainable = apply_memory_levers(gpt, cfg)
        self.gpt_parameters = sum(p.numel() for p in gpt.parameters())
        gpt.train()
        # The frozen front end stays outside accelerate: it has no gradients to synchronise.
        self.features = XttsFeatures(cfg.base_model_dir, xtts_config).to(acc.device)
        self.loss_weights = LossWeights(cfg.text_ce_weight, cfg.mel_ce_weight)
        masking = bool(xtts_config.model_args.gpt_use_masking_gt_prompt_approach)

        cond = dict(min_cond_samples=int(cfg.min_conditioning_seconds * 22050),
                    max_cond_samples=int(cfg.max_conditioning_seconds * 22050), masking=masking)
        self.train_set = ClipDataset(self.train_clips, seed=cfg.seed, is_eval=False, **cond)
        eval_set = ClipDataset(self.eval_clips, seed=cfg.seed, is_eval=True, **cond)
        collate_fn = partial(collate, masking=masking)
        if cfg.auto_micro_batch and self.resume_from is None:  # a resume keeps the micro-batch it was saved with
            yield from self._probe_micro_batch(gpt.to(acc.device), collate_fn)
        optimizer = make_optimizer(gpt, cfg)
        self.sampler = BucketBatchSampler([c.samples for c in self.train_clips], cfg.batch_size, seed=cfg.seed,
                                          bucket_batches=cfg.bucket_batches)
        # Own generators: creating a DataLoader iterator draws a seed, and drawing it from the global RNG would
        # shift dropout after a resume.
        train_loader = torch.utils.data.DataLoader(
            self.train_set, batch_sampler=self.sampler, collate_fn=collate_fn, num_workers=cfg.num_workers,
            generator=torch.Generator().manual_seed(cfg.seed),
        )
        eval_loader = torch.utils.data.DataLoader(
            eval_set, batch_sampler=BucketBatchSampler([c.samples for c in self.eval_clips], cfg.batch_size,
                                                       seed=cfg.seed, shuffle=False),
            collate_fn=collate_fn, num_workers=cfg.num_workers, generator=torch.Generator().manual_seed(cfg.seed),
        )
        # The schedule's horizon counts optimizer steps as if on one process: accelerate steps a prepared
        # scheduler once per process per optimizer step. It ignores max_steps so a run cut short and resumed
        # follows the same curve.
        single_steps_per_epoch = math.ceil(len(train_loader) / cfg.grad_accum_steps)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, partial(_lr_factor, warmup=cfg.warmup_steps, total=single_steps_per_epoch * cfg.epochs,
                               schedule=cfg.lr_schedule))

        self.gpt, self.optimizer, self.train_loader, self.eval_loader, self.scheduler = acc.prepare(
            gpt, optimizer, train_loader, eval_loader, scheduler)
        self.steps_per_epoch = math.ceil(len(self.train_loader) / cfg.grad_accum_steps)
        self.total_steps = self.steps_per_epoch * cfg.epochs
        if cfg.max_steps:
            self.total_steps = min(self.total_steps, cfg.max_steps)

        if self.resume_from is not None:
            acc.load_state(str(self.resume_from))
            saved = read_state(self.resume_from)  # type-checked in _check_inputs, before the model was built
            self.state = _State(**saved)
            yield Log(level="info", message=f"Resumed from {self.resume_from.name} (step {self.state.global_step}).")
        else:
            atomic.write_json(self.run_dir / CONFIG_FILE, cfg.to_dict())

        yield Started(
            run_dir=str(self.run_dir), device=str(acc.device), processes=acc.num_processes,
            train_clips=len(self.train_clips), eval_clips=len(self.eval_clips),
            steps_per_epoch=self.steps_per_epoch, total_steps=self.total_steps,
            start_step=self.state.global_step, start_epoch=self.state.epoch,
            trainable_parameters=trainable,
            config=cfg.to_dict(),
        )

    def _cap_gpu_memory(self) -> Iterator[Event]:
        """Auto sizing uses at most 90 % of the GPU memory that was free at the start (see ``cap_gpu_memory``)."""
        import torch

        from alltalk_gui.core.training.profiles import AUTO_HEADROOM
        from alltalk_gui.core.training.levers import cap_gpu_memory

        device = self.accelerator.device
        capped = cap_gpu_memory(device, AUTO_HEADROOM)
        if capped is not None:
            cap, free = capped
            yield Log(level="info", message=f"Auto sizing: using at most {cap / 2**30:.1f} GiB, {AUTO_HEADROOM:.0%} "
                                            f"of the {free / 2**30:.1f} GiB free on {torch.cuda.get_device_name(device)}.")

    def _probe_micro_batch(self, gpt, collate_fn) -> Iterator[Event]:
        """Find the largest micro-batch whose forward and backward pass on the longest clips fits, with
        accelerate's ``find_executable_batch_size`` (it halves the size after each out-of-memory error), and
        accumulate enough micro-batches to keep the effective batch."""
        import torch

        from alltalk_gui.core.training.levers import probe_micro_batch

        cfg, acc = self.config, self.accelerator
        effective = cfg.batch_size * cfg.grad_accum_steps
        longest = sorted(range(len(self.train_clips)), key=lambda i: self.train_clips[i].samples, reverse=True)
        micro = probe_micro_batch(
            gpt, lambda size: collate_fn([self.train_set[longest[i % len(longest)]] for i in range(size)]),
            self.features, self.loss_weights, cfg, acc, effective)
        if not micro:
            raise OutOfMemory(self._out_of_memory_advice("even one clip of the longest length"))
        # Every process must train with the same micro-batch: the smallest that fit anywhere.
        micro = int(acc.gather(torch.tensor([micro], device=acc.device)).min())
        accum = math.ceil(effective / micro)
        cfg.batch_size, cfg.grad_accum_steps = micro, accum
        acc.gradient_accumulation_steps = accum
        seconds = self.train_clips[longest[0]].samples / 22050
        yield MicroBatch(cause="probe", step=0, micro_batch=micro, grad_accum=accum,
                         effective_batch=micro * accum * acc.num_processes,
                         message=f"Auto sizing: {micro} clip(s) of the longest length ({seconds:.1f} s) fit per "
                                 f"micro-batch; {accum} micro-batch(es) per step keep the effective batch of "
                                 f"{micro * accum * acc.num_processes}.")

    def _out_of_memory_advice(self, what: str) -> str:
        cfg = self.config
        lower = {"high": "medium", "medium": "low", "auto": "low"}.get(cfg.profile)
        if lower:
            change = f"Choose the {lower.capitalize()} VRAM profile"
        elif cfg.profile == "low":
            change = "Close other programs that use the GPU, or lower max_audio_seconds (shorter clips)"
        else:
            change = "Choose the Low VRAM profile (LoRA, 8-bit optimizer, checkpointing)"
        return (f"The GPU ran out of memory with {what}. {change}, and start a new run; "
                "clips of at most 8 s (max_audio_seconds) also need less memory.")

    # ------------------------------------------------------------------------------------------------ loop
    def _loop(self) -> Iterator[Event]:
        import torch

        cfg, acc, st = self.config, self.accelerator, self.state
        last_memory = 0.0
        reason = "finished"
        window: list[dict[str, Any]] = []  # this optimizer step's micro-batches, to redo after an out-of-memory error
        if st.batches_done >= len(self.train_loader):  # the checkpoint was taken at the end of an epoch
            st.epoch, st.batches_done = st.epoch + 1, 0
        while st.epoch < cfg.epochs and reason == "finished":
            self.train_loader.set_epoch(st.epoch)
            self.sampler.set_epoch(st.epoch)
            self.train_set.set_epoch(st.epoch)
            loader = acc.skip_first_batches(self.train_loader, st.batches_done) if st.batches_done else self.train_loader
            sums = torch.zeros(4, device=acc.device)  # loss, text, mel, samples over this step's micro-batches
            step_start = time.time()
            for batch in loader:
                window.append(batch)
                with acc.accumulate(self.gpt):
                    try:
                        batch_sums, redone = yield from self._forward_backward(window)
                    except OutOfMemory as exc:
                        st.batches_done -= len(window) - 1  # the unfinished step is trained again after a resume
                        self.oom_message = str(exc)
                        reason = "out_of_memory"
                        break
                    sums = batch_sums if redone else sums + batch_sums
                    if acc.sync_gradients:
                        # clip_grad_norm_ unscales fp16 gradients first and returns the norm before clipping.
                        max_norm = cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")
                        grad_norm = acc.clip_grad_norm_(self.gpt.parameters(), max_norm)
                        # A NaN or infinite gradient would spoil every weight it touched: skip this update.
                        # (fp16 is left to its loss scaler, which skips such steps and lowers its scale.)
                        if cfg.mixed_precision != "fp16" and not torch.isfinite(grad_norm):
                            self.optimizer.zero_grad(set_to_none=True)
                            yield Log(level="warning", message=f"Step {st.global_step + 1}: the gradient was not a "
                                      "finite number, so this update was skipped; training goes on.")
                    self.optimizer.step()
                    self.scheduler.step()
                    # Free the gradients right away: no need for this memory until the next backward.
                    self.optimizer.zero_grad(set_to_none=True)
                st.batches_done += 1
                if not acc.sync_gradients:
                    continue

                window.clear()
                st.global_step += 1
                totals = acc.reduce(sums, reduction="sum")  # losses of all processes
                elapsed = time.time() - step_start
                st.last_loss = float(totals[0] / totals[3])
                yield Step(
                    step=st.global_step, epoch=st.epoch, loss=st.last_loss,
                    loss_text_ce=float(totals[1] / totals[3]), loss_mel_ce=float(totals[2] / totals[3]),
                    lr=float(self.scheduler.get_last_lr()[0]), grad_norm=float(grad_norm),
                    samples_per_s=float(totals[3]) / max(elapsed, 1e-9), step_time_s=elapsed,
                    total_steps=self.total_steps,
                )
                if time.time() - last_memory >= cfg.memory_interval_s:
                    last_memory = time.time()
                    yield Memory(step=st.global_step, stats=self._sample_memory())
                sums.zero_()
                step_start = time.time()

                if self._should_stop():
                    reason = "stopped"
                elif cfg.max_steps and st.global_step >= cfg.max_steps:
                    reason = "max_steps"
                if reason != "finished":
                    break
                if cfg.save_every_steps and st.global_step % cfg.save_every_steps == 0:
                    yield self._save("interval")

            if reason == "finished":  # the epoch ran to its end
                if cfg.eval_each_epoch:
                    yield from self._evaluate()
                yield self._save("epoch", eval_loss=st.history[-1]["loss"] if st.history else None)
                st.epoch, st.batches_done = st.epoch + 1, 0
        if reason == "out_of_memory":
            yield self._save("out_of_memory")
            yield Error(kind="out_of_memory", message=self.oom_message)
            reason = "error"
        elif reason != "finished":
            yield self._save(reason if reason == "stopped" else "final")
        yield self._done(reason)

    def _forward_backward(self, window: list[dict[str, Any]]) -> Iterator[Event]:
        """Forward and backward pass of the newest micro-batch in ``window``; returns ``(sums, redone)``.

        When memory runs out, the step's gradients so far are dropped and every micro-batch of ``window`` is done
        again in twice as many chunks, each chunk's loss weighted by its share of its micro-batch: the gradient
        is that of the same effective batch. ``sums`` then covers the whole window (``redone`` is True). When a
        micro-batch is down to one clip and still does not fit, :class:`OutOfMemory` is raised.
        """
        import gc

        import torch
        from accelerate.utils.memory import should_reduce_batch_size

        cfg, acc = self.config, self.accelerator
        todo, redone = window[-1:], False
        while True:
            try:
                return self._backward_in_chunks(todo), redone
            except Exception as exc:  # only out-of-memory errors are handled; the rest are raised again
                if not should_reduce_batch_size(exc):
                    raise
            # Outside the except block the traceback, and the failed pass's tensors it holds, are gone.
            self.gpt.zero_grad(set_to_none=True)  # a backward that failed half-way may have added part of its gradients
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            if math.ceil(cfg.batch_size / self.split) <= 1 or self.split >= MAX_OOM_SPLIT:
                raise OutOfMemory(self._out_of_memory_advice("one clip per micro-batch"))
            self.split *= 2
            micro = math.ceil(cfg.batch_size / self.split)
            accum = cfg.grad_accum_steps * self.split
            yield MicroBatch(
                cause="out_of_memory", step=self.state.global_step + 1, micro_batch=micro, grad_accum=accum,
                effective_batch=cfg.batch_size * cfg.grad_accum_steps * acc.num_processes,
                message=f"Out of GPU memory at step {self.state.global_step + 1}: retrying with micro-batches of "
                        f"{micro} clip(s) and {accum} accumulated per step (the effective batch is unchanged).",
            )
            todo, redone = window, True

    def _backward_in_chunks(self, batches: list[dict[str, Any]]):
        """Forward and backward passes over ``batches``, each cut into ``self.split`` chunks; gradients are
        synchronised across processes only on the last chunk. Returns the (loss, text, mel, clips) sums."""
        import contextlib

        import torch

        from alltalk_gui.core.engines.xtts import model as xtts_model
        from alltalk_gui.core.training.data import split_batch

        acc = self.accelerator
        chunks = [(chunk, len(chunk["filenames"]) / len(batch["filenames"]))
                  for batch in batches for chunk in (split_batch(batch, self.split) if self.split > 1 else [batch])]
        sums = torch.zeros(4, device=acc.device)
        for i, (chunk, share) in enumerate(chunks):
            last = i == len(chunks) - 1
            with contextlib.nullcontext() if last else acc.no_sync(self.gpt):
                inputs = self.features(chunk)
                losses = xtts_model.gpt_loss(self.gpt, inputs, self.loss_weights)
                acc.backward(losses["loss"] * share if share != 1 else losses["loss"])
            sums += _loss_sums(losses, inputs["text_inputs"].shape[0])
        return sums

    def _sample_memory(self) -> dict[str, float]:
        """A memory sample; the run's peaks are kept across samples (each sample starts a new CUDA peak window)."""
        from alltalk_gui.core.machine.memory import memory_stats

        stats = memory_stats(self.accelerator.device, reset_peak=True)
        for key in ("cuda_peak_reserved", "cuda_peak_allocated", "rss_peak"):
            if key in stats:
                self.peaks[key] = max(self.peaks.get(key, 0.0), stats[key])
        return stats

    def _should_stop(self) -> bool:
        """Stop when asked by the caller or a STOP file; all processes agree through accelerate's trigger."""
        acc = self.accelerator
        if self.stop_requested() or (self.run_dir / STOP_FILE).exists():
            acc.set_trigger()
        return acc.check_trigger()

    def _evaluate(self) -> Iterator[Event]:
        import torch

        from alltalk_gui.core.engines.xtts.model import gpt_loss

        acc, st = self.accelerator, self.state
        self.gpt.eval()
        sums = torch.zeros(4, device=acc.device)
        with torch.no_grad():
            for batch in self.eval_loader:
                inputs = self.features(batch)
                losses = gpt_loss(self.gpt, inputs, self.loss_weights, eval_mode=True)
                sums += _loss_sums(losses, inputs["text_inputs"].shape[0])
        self.gpt.train()
        totals = acc.reduce(sums, reduction="sum")
        loss = float(totals[0] / totals[3])
        best = st.best_eval_loss is None or loss < st.best_eval_loss
        st.history.append({"epoch": st.epoch, "step": st.global_step, "loss": loss})
        yield Eval(step=st.global_step, epoch=st.epoch, loss=loss, loss_text_ce=float(totals[1] / totals[3]),
                   loss_mel_ce=float(totals[2] / totals[3]), clips=len(self.eval_clips), best=best)

    # ------------------------------------------------------------------------------------------------ checkpoints
    def _save(self, reason: str, eval_loss: float | None = None) -> Checkpoint:
        acc, st = self.accelerator, self.state
        root = self.run_dir / CHECKPOINTS
        name = f"step_{st.global_step:07d}"
        final, tmp = root / name, root / f".tmp-{name}"
        if eval_loss is not None and (st.best_eval_loss is None or eval_loss < st.best_eval_loss):
            st.best_eval_loss, st.best_checkpoint = eval_loss, name
        if not final.exists():
            self._check_disk(self._checkpoint_size_estimate())  # every process checks: they must agree to go on
            if acc.is_main_process and tmp.exists():
                shutil.rmtree(tmp)
            acc.wait_for_everyone()
            acc.save_state(str(tmp))
            acc.wait_for_everyone()
            if acc.is_main_process:
                atomic.write_json(tmp / CONFIG_FILE, self.config.to_dict())
                state = {k: getattr(st, k) for k in _State.__dataclass_fields__}
                atomic.write_json(tmp / STATE_FILE, state)  # last: its presence marks a complete checkpoint
                for f in tmp.iterdir():
                    atomic._fsync_file(f)
                slow_step, _, slow_s = os.environ.get(SLOW_SAVE_ENV, "").partition(":")
                if slow_step and int(slow_step) == st.global_step:
                    time.sleep(float(slow_s))
                folders.rename(tmp, final)  # retried while an antivirus scans the new files (Windows)
                atomic._fsync_dir(root)
                self._prune()
            acc.wait_for_everyone()
        elif acc.is_main_process:  # already saved at this step (e.g. interval and epoch end coincide)
            state = {k: getattr(st, k) for k in _State.__dataclass_fields__}
            atomic.write_json(final / STATE_FILE, state)
            self._prune()  # this checkpoint may just have become the best one
        return Checkpoint(step=st.global_step, epoch=st.epoch, path=str(final), reason=reason, eval_loss=eval_loss)

    def _prune(self) -> None:
        """Keep the newest ``keep_last`` checkpoints and the best by eval loss; delete the rest."""
        root = self.run_dir / CHECKPOINTS
        done = sorted((p for p in root.glob("step_*") if (p / STATE_FILE).is_file()),
                      key=lambda p: int(p.name.split("_")[1]))
        keep = {p.name for p in done[-self.config.keep_last:]}
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

    def _done(self, reason: str) -> Done:
        st = self.state
        last = latest_checkpoint(self.run_dir) if hasattr(self, "run_dir") and self.run_dir.exists() else None
        best = None
        if st.best_checkpoint and hasattr(self, "run_dir"):
            best = str(self.run_dir / CHECKPOINTS / st.best_checkpoint)
        peak, estimated = self._record_memory() if self.gpt_parameters else (None, None)
        return Done(step=st.global_step, epoch=st.epoch, reason=reason, final_loss=st.last_loss,
                    best_eval_loss=st.best_eval_loss, best_checkpoint=best,
                    last_checkpoint=str(last) if last else None, elapsed_s=time.time() - self.t0,
                    peak_memory_gib=peak, estimated_memory_gib=estimated)

    def _record_memory(self) -> tuple[float | None, float | None]:
        """Write the run's measured peak memory next to the estimator's prediction (``memory.json`` in the run
        folder, one entry per session of the run), so that the estimate can be checked against real runs."""
        from alltalk_gui.core.engines.xtts.memory_estimate import XTTS_V2, estimate

        self._sample_memory()
        acc, cfg = self.accelerator, self.config
        on_gpu = acc.device.type == "cuda"
        peak = self.peaks.get("cuda_peak_reserved" if on_gpu else "rss_peak")
        # The estimator describes the real XTTS v2 GPT; a run on another size (the tests' tiny model) gets none.
        predicted = None
        if self.gpt_parameters == XTTS_V2.gpt_params:
            predicted = estimate(cfg, attention_scores=not on_gpu).total_gib
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
                "micro_batch": math.ceil(cfg.batch_size / self.split),
                "grad_accum": cfg.grad_accum_steps * self.split, "processes": acc.num_processes,
                "max_audio_seconds": cfg.max_audio_seconds, "steps": self.state.global_step,
                "measured_peak_gib": peak, "measured": dict(self.peaks), "estimated_peak_gib": predicted,
                "measure": "cuda max_memory_reserved" if on_gpu else "peak RSS",
            })
            atomic.write_json(path, sessions)
        return (round(peak, 3) if peak is not None else None), predicted


def _loss_sums(losses: dict[str, Any], clips: int):
    """(loss, text loss, mel loss) x clips, and clips: what a step or an eval adds up over its batches."""
    import torch

    loss = losses["loss"].detach()
    return torch.stack([loss.float() * clips, losses["loss_text_ce"].detach().float() * clips,
                        losses["loss_mel_ce"].detach().float() * clips,
                        torch.tensor(float(clips), device=loss.device)])


def _lr_factor(step: int, *, warmup: int, total: int, schedule: str) -> float:
    """Linear warm-up over ``warmup`` steps, then constant or cosine decay to 0 at ``total``."""
    if warmup and step < warmup:
        return (step + 1) / (warmup + 1)
    if schedule == "constant":
        return 1.0
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))
