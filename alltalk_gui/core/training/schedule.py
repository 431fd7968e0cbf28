"""The learning-rate schedule: a short linear warm-up, then a constant rate (the default) or a cosine decay.

Why constant. The recipes whose voices people already judge good keep the rate (almost) flat: coqui's
``train_gpt_xtts.py`` and xtts-finetune-webui hold 5e-6 (coqui's MultiStepLR milestones lie beyond any run), and
AllTalk v2's cosine restarts stay between 3e-6 and 5e-6 (a mean of about 4e-6). A cosine decay to 0 over a run of
60 steps gives away half of the adaptation, and the warm-up (at most :data:`WARMUP_SHARE` of the steps) is
short. How much a run adapts is measured here as the *summed learning rate*, the sum over the optimizer steps of
their rate (:func:`summed_lr`); the profiles are set so that it is at least AllTalk's for 3 to 10 minutes of
audio at the default epochs (the arithmetic is in ``resources/profiles/*.toml``, a test checks it with this code).

Effective batch. ``TrainConfig.lr`` is the rate at an effective batch of ``TrainConfig.lr_batch`` (8); another
effective batch B (micro-batch x accumulation x processes) gets ``lr x sqrt(B / lr_batch)``, the square-root rule
for Adam-type optimisers (Malladi et al. 2022, "On the SDEs and scaling rules for adaptive gradient algorithms").
Out-of-memory splitting and auto's micro-batch probe keep the effective batch, so they keep the rate.

Resume. The schedule a run started with is saved in its checkpoints (:meth:`Schedule.to_dict`). A resume that
changes the number of epochs keeps the warm-up and peak and only moves the horizon (:func:`resume`): a constant
rate simply goes on, and a cosine decay is re-fitted from the rate it had reached, so the rate never jumps.

Everything here is pure arithmetic (no torch): the training loop builds its ``LambdaLR`` from :func:`plan` and
:meth:`Schedule.factor`, and the tests and the profile files' arithmetic call the same functions.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

WARMUP_SHARE = 0.05  # the warm-up takes at most 5 % of a run's optimizer steps (TrainConfig.warmup_steps caps it)


@dataclass(frozen=True)
class Schedule:
    """The learning rate of every optimizer step of a run.

    ``factor(step)`` is the share of ``peak_lr`` used by the optimizer step that follows ``step`` completed steps
    (step 0 is the first update). The cosine decay runs from ``decay_from`` at ``decay_start`` down to 0 at
    ``total_steps``; a fresh run starts it at the end of the warm-up at 1.0, a resume may re-fit it.
    """

    peak_lr: float
    warmup_steps: int
    total_steps: int
    kind: str = "constant"
    decay_start: int = 0
    decay_from: float = 1.0

    def factor(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / (self.warmup_steps + 1)  # linear, never 0: the first step already learns a little
        if self.kind == "constant":
            return 1.0
        start = max(self.decay_start, self.warmup_steps)
        progress = min(1.0, max(0, step - start) / max(1, self.total_steps - start))
        return self.decay_from * 0.5 * (1.0 + math.cos(math.pi * progress))

    def lr(self, step: int) -> float:
        return self.peak_lr * self.factor(step)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Schedule":
        return cls(**data)


def effective_batch(config, processes: int = 1) -> int:
    """Clips per optimizer step: micro-batch x accumulation x processes."""
    return config.batch_size * config.grad_accum_steps * processes


def peak_lr(config, processes: int = 1) -> float:
    """``config.lr`` scaled from ``config.lr_batch`` to the run's effective batch by the square-root rule
    (``lr_batch = 0``: ``config.lr`` as given, whatever the batch)."""
    if not config.lr_batch:
        return config.lr
    return config.lr * math.sqrt(effective_batch(config, processes) / config.lr_batch)


def micro_batches_per_epoch(train_clips: int, micro_batch: int, processes: int = 1) -> int:
    """Micro-batches each process trains on per epoch, as accelerate's prepared loader counts them (every clip
    once per epoch, ``even_batches``: the processes get the same number)."""
    return math.ceil(math.ceil(train_clips / micro_batch) / processes)


def plan(config, batches_per_epoch: int, processes: int = 1) -> Schedule:
    """The schedule of a fresh run of ``config`` whose loader gives ``batches_per_epoch`` micro-batches per
    process and epoch. The horizon ignores ``max_steps``, so a run cut short and resumed follows the same curve.
    """
    per_epoch = math.ceil(batches_per_epoch / config.grad_accum_steps)
    total = per_epoch * config.epochs
    warmup = min(config.warmup_steps, int(WARMUP_SHARE * total))
    return Schedule(peak_lr(config, processes), warmup, total, config.lr_schedule, decay_start=warmup)


def resume(saved: Schedule | None, fresh: Schedule, step: int) -> Schedule:
    """The schedule to go on with at ``step`` (optimizer steps done) after a resume.

    ``saved`` is the schedule the run was saved with (None for checkpoints written before schedules were saved),
    ``fresh`` the one :func:`plan` gives for the resumed config. When the horizon moved (the epochs changed), the
    warm-up and peak are kept and the decay is re-fitted to start where the rate stands now, so that
    ``result.lr(step) == saved.lr(step)``: no jump. (So a cosine run that already reached its end stays near 0:
    to train a finished run further, the constant schedule is the one that helps.)
    """
    if saved is None:
        return fresh
    if saved.total_steps == fresh.total_steps:
        return saved
    if step < saved.warmup_steps or saved.kind == "constant":
        return Schedule(saved.peak_lr, saved.warmup_steps, fresh.total_steps, saved.kind, saved.decay_start,
                        saved.decay_from)
    return Schedule(saved.peak_lr, saved.warmup_steps, fresh.total_steps, saved.kind, decay_start=step,
                    decay_from=saved.factor(step))


def summed_lr(schedule: Schedule, steps: int | None = None) -> float:
    """The learning rates of the first ``steps`` optimizer steps (all of them by default), added up."""
    return sum(schedule.lr(s) for s in range(schedule.total_steps if steps is None else steps))


# -- the reference recipes, for comparison ----------------------------------------------------------------------

@dataclass(frozen=True)
class Reference:
    """A reference recipe's defaults: clips per optimizer step, epochs and mean learning rate."""

    name: str
    batch: int
    epochs: int
    mean_lr: float

    def steps(self, train_clips: int) -> int:
        return math.ceil(train_clips / self.batch) * self.epochs

    def summed_lr(self, train_clips: int) -> float:
        return self.steps(train_clips) * self.mean_lr


# AllTalk v2 finetune.py: batch 4, no accumulation, 10 epochs, cosine restarts between 3e-6 and 5e-6 (mean 4e-6).
ALLTALK = Reference("AllTalk v2", batch=4, epochs=10, mean_lr=4e-6)
# xtts-finetune-webui gpt_train.py: batch 2, no accumulation, 6 epochs, a constant 5e-6.
XTTS_FINETUNE_WEBUI = Reference("xtts-finetune-webui", batch=2, epochs=6, mean_lr=5e-6)

MEAN_CLIP_SECONDS = 6.0  # what our transcription cuts a recording into, on average
EVAL_SHARE = 0.15  # the dataset export's default eval split


def train_clips_for_minutes(minutes: float) -> int:
    """Training clips in a dataset of ``minutes`` of speech: about 6 s clips, 15 % kept for eval (5 min: 43)."""
    return int(minutes * 60 / MEAN_CLIP_SECONDS * (1 - EVAL_SHARE) + 0.5)


__all__ = ["Schedule", "WARMUP_SHARE", "effective_batch", "peak_lr", "micro_batches_per_epoch",
           "plan", "resume", "summed_lr", "Reference", "ALLTALK", "XTTS_FINETUNE_WEBUI", "train_clips_for_minutes"]
