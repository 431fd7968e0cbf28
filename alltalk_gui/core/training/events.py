"""Training events: plain dataclasses that leave the training loop through one narrow interface.

The loop yields them; :class:`JsonlSink` appends each as one JSON line (with a ``type`` field) to the run's
``events.jsonl``; the CLI prints them and the GUI re-emits them as Qt signals. :func:`event_from_dict` turns a
JSON line back into the dataclass, so a reader in another process (the GUI's training worker) sees the same
objects the loop produced.

The vocabularies (event types, finish reasons, error kinds, checkpoint reasons, micro-batch causes, log levels)
are enums shared by the writer and every reader. They are ``str`` enums whose values are the strings the JSON
has always held, so old events files read unchanged and a reader may still compare with a plain string.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar


class _Vocabulary(str, Enum):
    """A str enum that prints as its value (``f"{FinishReason.STOPPED}"`` is ``stopped`` on every Python)."""

    def __str__(self) -> str:
        return self.value


class EventType(_Vocabulary):
    STARTED = "started"
    STEP = "step"
    MEMORY = "memory"
    MICRO_BATCH = "micro_batch"
    EVAL = "eval"
    CHECKPOINT = "checkpoint"
    JUDGED = "judged"
    LOG = "log"
    PREPARING = "preparing"
    ERROR = "error"
    DONE = "done"


class FinishReason(_Vocabulary):
    """Why a run ended (:attr:`Done.reason`); also the training loop's outcome."""

    FINISHED = "finished"    # every epoch ran
    MAX_STEPS = "max_steps"  # stopped at max_steps
    STOPPED = "stopped"      # asked to stop (Stop button, STOP file, signal); a checkpoint was saved
    ERROR = "error"          # an Error event came first

    @property
    def completed(self) -> bool:
        """The run has nothing left to train (a resume makes no sense)."""
        return self in (FinishReason.FINISHED, FinishReason.MAX_STEPS)


class ErrorKind(_Vocabulary):
    """What went wrong (:attr:`Error.kind`), so a front end can react."""

    CONFIG = "config"
    BASE_MODEL = "base_model"
    DATASET = "dataset"
    DISK_FULL = "disk_full"          # not enough room for a checkpoint, before or while writing it
    SAVE_FAILED = "save_failed"      # a checkpoint could not be written for another reason (an I/O error)
    RESUME = "resume"
    OUT_OF_MEMORY = "out_of_memory"
    CRASH = "crash"


class CheckpointReason(_Vocabulary):
    INTERVAL = "interval"    # every save_every_steps
    EPOCH = "epoch"          # at the end of an epoch
    STOPPED = "stopped"      # the run was asked to stop
    FINAL = "final"          # max_steps reached
    OUT_OF_MEMORY = "out_of_memory"  # saved before ending on an out-of-memory error


class MicroBatchCause(_Vocabulary):
    PROBE = "probe"                  # auto sizing chose the micro-batch
    OUT_OF_MEMORY = "out_of_memory"  # halved after the GPU ran out of memory


class LogLevel(_Vocabulary):
    INFO = "info"
    WARNING = "warning"


@dataclass
class Event:
    type: ClassVar[str] = "event"  # an EventType in every subclass
    time: float = field(default_factory=time.time, kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **asdict(self)}


@dataclass
class Started(Event):
    """The run is set up: what will happen, on what."""

    type: ClassVar[str] = EventType.STARTED
    run_dir: str
    device: str
    processes: int
    train_clips: int
    eval_clips: int
    steps_per_epoch: int
    total_steps: int
    start_step: int
    start_epoch: int
    trainable_parameters: int
    config: dict[str, Any]


@dataclass
class Step(Event):
    """One optimizer step. ``loss`` is the mean over the step's micro-batches (all processes)."""

    type: ClassVar[str] = EventType.STEP
    step: int
    epoch: int
    loss: float
    lr: float
    grad_norm: float
    samples_per_s: float
    step_time_s: float
    total_steps: int
    # The engine's parts of the loss by name (its TrainingSetup.loss_parts), each a mean over the step's clips;
    # empty for an engine whose loss has one part.
    parts: dict[str, float] = field(default_factory=dict)


@dataclass
class Memory(Event):
    """A memory sample (GiB); keys as :func:`alltalk_gui.core.machine.memory.memory_stats` gives them."""

    type: ClassVar[str] = EventType.MEMORY
    step: int
    stats: dict[str, float]


@dataclass
class MicroBatch(Event):
    """The micro-batch was chosen by the auto-sizing probe or halved after the GPU ran out of memory (``cause``).
    The effective batch, micro_batch x grad_accum x processes, is kept."""

    type: ClassVar[str] = EventType.MICRO_BATCH
    cause: MicroBatchCause
    step: int
    micro_batch: int
    grad_accum: int
    effective_batch: int
    message: str


@dataclass
class Eval(Event):
    """The eval loss on metadata_eval.csv: at step 0 (the base model, before any update) and after each epoch.
    ``best``: the lowest of the run's checkpoints so far (never at step 0, which has no checkpoint)."""

    type: ClassVar[str] = EventType.EVAL
    step: int
    epoch: int
    loss: float
    clips: int
    best: bool
    parts: dict[str, float] = field(default_factory=dict)  # as in Step


@dataclass
class Checkpoint(Event):
    type: ClassVar[str] = EventType.CHECKPOINT
    step: int
    epoch: int
    path: str
    reason: CheckpointReason
    eval_loss: float | None = None


@dataclass
class Judged(Event):
    """The checkpoint judge scored a step (0: the base model) on the project's judging set: the means over its
    sentences (``measure``: ``wer``, or ``cer`` for Chinese and Japanese). ``best_step`` is the judge's choice so
    far and ``best_reason`` says why; ``seconds`` is how long judging took, speaking included."""

    type: ClassVar[str] = EventType.JUDGED
    step: int
    likeness: float | None
    error_rate: float | None
    measure: str
    mos: float | None
    length_problems: int
    sentences: int
    seconds: float
    checkpoint: str | None = None  # the checkpoint folder; None for the base model
    best_step: int | None = None
    best_reason: str = ""


@dataclass
class Log(Event):
    type: ClassVar[str] = EventType.LOG
    level: LogLevel
    message: str


@dataclass
class Preparing(Event):
    """The set-up's progress while a first run computes the clips' features, before its first step (minutes on a
    CPU): so far ``computed`` clips were computed and ``read`` read from the cache by the front end ``what`` (the
    feature cache's kind, e.g. ``snac``)."""

    type: ClassVar[str] = EventType.PREPARING
    what: str
    computed: int
    read: int


@dataclass
class Error(Event):
    """Training could not go on. ``kind`` lets a front end react. A checkpoint that found no room says where it
    was to be written, about how much it needs there and how much was free (bytes), for the page to show."""

    type: ClassVar[str] = EventType.ERROR
    kind: ErrorKind
    message: str
    folder: str | None = None
    needed_bytes: int | None = None
    free_bytes: int | None = None


@dataclass
class Done(Event):
    type: ClassVar[str] = EventType.DONE
    step: int
    epoch: int
    reason: FinishReason
    final_loss: float | None
    best_eval_loss: float | None
    best_checkpoint: str | None
    last_checkpoint: str | None
    elapsed_s: float
    # Measured peak memory of the run (GiB): CUDA max_memory_reserved on a GPU, peak RSS on the CPU; and what
    # the engine's estimator predicted for this config (None when the model is not the real-size one).
    peak_memory_gib: float | None = None
    estimated_memory_gib: float | None = None
    # The base model's eval loss (the eval at step 0), to read best_eval_loss against; None without evals.
    base_eval_loss: float | None = None


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls for cls in (Started, Step, Memory, MicroBatch, Eval, Checkpoint, Judged, Log, Preparing, Error,
                              Done)
}

# The fields that hold a vocabulary word, turned back into their enum when an events file is read.
_ENUM_FIELDS: dict[tuple[type[Event], str], type[Enum]] = {
    (MicroBatch, "cause"): MicroBatchCause, (Checkpoint, "reason"): CheckpointReason, (Log, "level"): LogLevel,
    (Error, "kind"): ErrorKind, (Done, "reason"): FinishReason,
}


LEGACY_PART_PREFIX = "loss_"
"""Events written before loss parts were a mapping held each part as a field of its own, ``loss_<part>`` (None
when the engine had no such part); :func:`event_from_dict` reads them into ``parts``."""


def event_from_dict(data: dict[str, Any]) -> Event:
    """Rebuild an event from its JSON form (unknown extra keys are ignored, for forward compatibility; a word
    this version does not know stays a plain string)."""
    cls = EVENT_TYPES[data["type"]]
    names = {f.name for f in fields(cls)}
    values = {k: v for k, v in data.items() if k in names}
    if "parts" in names and "parts" not in data:
        values["parts"] = {k: float(v) for k, v in data.items() if k.startswith(LEGACY_PART_PREFIX)
                           and k not in names and isinstance(v, (int, float)) and not isinstance(v, bool)}
    for (owner, name), vocabulary in _ENUM_FIELDS.items():
        if owner is cls and name in values:
            try:
                values[name] = vocabulary(values[name])
            except ValueError:
                pass
    return cls(**values)


class JsonlSink:
    """Appends events to a JSON-lines file, one flushed line per event.

    Appending whole lines with one ``write`` keeps the file readable while it grows; a reader sees complete
    lines or nothing of the last one. The file is written in binary with ``\n`` line ends on every OS, so
    readers can count byte offsets (:mod:`alltalk_gui.core.training.follow`). A file whose last line was torn
    (a power loss mid-write) is first closed with a newline: the torn line stays one unreadable line that
    readers skip, and the resumed run's events start on lines of their own.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "ab")
        if self._file.tell() > 0 and not _ends_with_newline(self.path):
            self._file.write(b"\n")

    def write(self, event: Event) -> None:
        self._file.write((json.dumps(event.to_dict(), ensure_ascii=False) + "\n").encode("utf-8"))
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> "JsonlSink":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"
