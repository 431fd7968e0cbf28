"""Ctrl+C during ``alltalk-gui train``: the first press asks the run to stop with a checkpoint and says so at once,
a second press quits now.

The run sees a stop request between two steps, and while it computes the clips' features (encoding every clip
with the engine's codec: minutes on a CPU) before the next clip; while it loads the model, it sees none. Without a
word back a user presses Ctrl+C again and again, and nothing can end the command short of killing it. So the first
press is acknowledged in one line that says what happens next, and the second one ends the command (and its
training processes) without a new checkpoint; the last complete checkpoint stays, so ``--resume`` goes on from
there.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Callable, TextIO

STOPPING = ("Stopping: the run saves a checkpoint after its current step (a run still computing its clips' features "
            "stops before the next clip, keeping them). Press Ctrl+C again to quit now without a new checkpoint.")
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command ended by Ctrl+C


class CtrlC:
    """A SIGINT handler: the first signal calls ``ask_stop`` and prints :data:`STOPPING`; each later one raises
    KeyboardInterrupt, which the command turns into quitting now."""

    def __init__(self, ask_stop: Callable[[], None], before_note: Callable[[], None] = lambda: None,
                 stream: TextIO | None = None) -> None:
        self.ask_stop = ask_stop
        self.before_note = before_note  # e.g. end the progress line that a terminal redraws in place
        self.stream = stream
        self.presses = 0
        self._previous = None

    def __call__(self, signum=None, frame=None) -> None:  # noqa: ARG002 - signal handler signature
        self.presses += 1
        if self.presses > 1:
            raise KeyboardInterrupt
        self.ask_stop()
        self.before_note()
        stream = self.stream or sys.stderr
        stream.write(STOPPING + "\n")
        stream.flush()

    def __enter__(self) -> "CtrlC":
        self._previous = signal.signal(signal.SIGINT, self)
        return self

    def __exit__(self, *exc) -> None:
        signal.signal(signal.SIGINT, self._previous)


def quit_note(run_dir: str | os.PathLike[str]) -> str:
    """What a user reads after quitting with the second Ctrl+C: the checkpoint that is kept and the command that goes
    on from it (naming the run: a plain --resume takes the newest run with a checkpoint, which may be another one),
    or that there is nothing to resume yet."""
    from alltalk_gui.core.training.loop import latest_checkpoint

    run = Path(run_dir)
    last = latest_checkpoint(run)
    if last is None:
        return "Quit before the run's first checkpoint: there is nothing to resume; start the run again."
    return (f"Quit without a new checkpoint; {last.name} is kept: go on from it with 'alltalk-gui train "
            f"{shlex.quote(str(run.parent.parent))} --resume --run {shlex.quote(run.name)}'.")
