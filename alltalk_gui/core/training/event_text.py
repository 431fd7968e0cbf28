"""Training events as lines of text: the one wording the CLI prints and the Train page's log shows.

:func:`event_text` dispatches on the event's dataclass type (``functools.singledispatch``), so a new event type
gets its wording here, once. :func:`event_level` says how a front end should show it (info, warning, error).
Step lines need what only a follower knows (the epoch count, the time left): :func:`step_text`.
"""

from __future__ import annotations

from functools import singledispatch

from alltalk_gui.core.training.events import (
    Checkpoint,
    Done,
    Error,
    Eval,
    Event,
    Judged,
    Log,
    MicroBatch,
    Preparing,
    Started,
    Step,
)


def hms(seconds: float) -> str:
    """``h:mm:ss``, e.g. ``hms(3725) == "1:02:05"``."""
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _plain(value: object) -> str:
    """An enum member's value, or the value itself: events may carry either."""
    return str(getattr(value, "value", value))


def _loss(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else "-"


def parts_text(parts: dict[str, float]) -> str:
    """The engine's loss parts as `` (text_ce 0.0123, mel_ce 2.3456)``; "" for a loss of one part."""
    if not parts:
        return ""
    return " (" + ", ".join(f"{name.removeprefix('loss_')} {value:.4f}" for name, value in parts.items()) + ")"


@singledispatch
def event_text(event: Event) -> str | None:
    """The event as one line (a Done event: a few lines), or None for events that are not told (memory
    samples, steps: see :func:`step_text`)."""
    return None


@event_text.register
def _(event: Started) -> str:
    return (f"Training {event.train_clips} clips ({event.eval_clips} eval) on {event.device} x {event.processes}: "
            f"{event.steps_per_epoch} steps/epoch, {event.total_steps} steps, "
            f"{parameter_count(event.trainable_parameters)} trainable parameters. Run: {event.run_dir}")


def parameter_count(count: int) -> str:
    """"441.0 M", or the plain number below 100 000 (LoRA on the tiny test model read "0.0 M")."""
    return f"{count / 1e6:.1f} M" if count >= 100_000 else f"{count:,}"


@event_text.register
def _(event: Eval) -> str:
    parts = parts_text(event.parts)
    if event.step == 0:  # before any update: the base model's loss, the baseline the run is measured against
        return f"Eval of the base model (step 0): loss {event.loss:.4f}{parts}"
    return f"Eval after epoch {event.epoch + 1}: loss {event.loss:.4f}{parts}{'  (best so far)' if event.best else ''}"


@event_text.register
def _(event: Preparing) -> str:
    return (f"Computing the clips' features ({event.what}): {event.computed} clip(s) computed, {event.read} read from "
            "the cache so far.")


@event_text.register
def _(event: Checkpoint) -> str:
    return f"Checkpoint ({_plain(event.reason)}) at step {event.step}: {event.path}"


@event_text.register
def _(event: Judged) -> str:
    what = f"step {event.step}" if event.step else "the base model (step 0)"
    scores = judge_summary(event.likeness, event.error_rate, str(event.measure), event.mos, event.length_problems,
                           event.sentences)
    best = f"; best so far: {event.best_reason}" if event.best_step is not None else ""
    return f"Judged {what} in {event.seconds:.0f} s: {scores}{best}"


def judge_summary(likeness: float | None, error_rate: float | None, measure: str, mos: float | None,
                  length_problems: int, sentences: int) -> str:
    """The checkpoint judge's means in one phrase: "likeness 0.84, WER 0.04, MOS 3.9" (what was measured)."""
    parts = []
    if likeness is not None:
        parts.append(f"likeness {likeness:.2f}")
    if error_rate is not None:
        parts.append(f"{measure.upper()} {error_rate:.2f}")
    if mos is not None:
        parts.append(f"MOS {mos:.1f}")
    if length_problems:
        parts.append(f"{length_problems} of {sentences} sentences with a length problem")
    return ", ".join(parts) or "nothing measured"


@event_text.register
def _(event: Log) -> str:
    return event.message


@event_text.register
def _(event: MicroBatch) -> str:
    return event.message


@event_text.register
def _(event: Error) -> str:
    return f"Error ({_plain(event.kind)}): {event.message}"


@event_text.register
def _(event: Done) -> str:
    base_loss = getattr(event, "base_eval_loss", None)  # the eval at step 0, when the run made one
    base = f" (base model: {base_loss:.4f})" if base_loss is not None else ""
    lines = [f"Done ({_plain(event.reason)}) after step {event.step} in {hms(event.elapsed_s)}: final loss "
             f"{_loss(event.final_loss)}, best eval loss {_loss(event.best_eval_loss)}{base}."]
    if event.peak_memory_gib is not None:
        estimated = (f" (estimated {event.estimated_memory_gib:.2f} GiB)"
                     if event.estimated_memory_gib is not None else "")
        lines.append(f"Peak memory: {event.peak_memory_gib:.2f} GiB{estimated}.")
    if event.best_checkpoint:
        lines.append(f"Best checkpoint: {event.best_checkpoint}")
    if event.last_checkpoint:
        lines.append(f"Last checkpoint: {event.last_checkpoint}")
    return "\n".join(lines)


def step_text(event: Step, *, epochs: int = 0, eta_s: float | None = None) -> str:
    """A progress line for a step: step, epoch (of ``epochs`` when known), loss and its parts, speed and the time
    left."""
    epoch = f"epoch {event.epoch + 1}/{epochs}" if epochs else f"epoch {event.epoch + 1}"
    eta = f"  ETA {hms(eta_s)}" if eta_s is not None else ""
    return (f"step {event.step}/{event.total_steps}  {epoch}  loss {event.loss:.4f}{parts_text(event.parts)}  "
            f"{event.samples_per_s:.2f} samples/s{eta}")


def event_level(event: Event) -> str:
    """``"error"``, ``"warning"`` or ``"info"``: how prominently a front end should show the event."""
    if isinstance(event, Error) or (isinstance(event, Done) and _plain(event.reason) == "error"):
        return "error"
    if isinstance(event, Log):
        return _plain(event.level)
    if isinstance(event, MicroBatch) and _plain(event.cause) == "out_of_memory":
        return "warning"
    return "info"
