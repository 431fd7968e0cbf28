"""Training child-process entry: runs :func:`alltalk_gui.core.training.loop.train` and writes its events as JSON lines.

The GUI's training worker and ``alltalk-gui train --processes N`` start it as::

    accelerate launch [--multi_gpu | --cpu] --num_processes N -m alltalk_gui.core.training.runner --config CONFIG.json \\
        [--resume] [--events FILE]

(or plain ``python -m alltalk_gui.core.training.runner ...`` for one process). Every process trains; only the main
process yields events, so the events file is written once. SIGTERM / SIGINT, SIGBREAK on Windows (CTRL_BREAK,
which :mod:`alltalk_gui.core.training.launch` sends there instead of a SIGTERM that would kill), and a ``STOP``
file in the run folder make the loop finish its step, save a checkpoint and exit with code 0; the exit code is 2
when the inputs were rejected before training and 1 when training failed after it started.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done, Error, ErrorKind, Event, EventType, FinishReason, JsonlSink
from alltalk_gui.core.training.loop import train
from alltalk_gui.core.training.run_folders import EVENTS_FILE

class StopFlag:
    """Set by a signal handler; polled by the training loop once per step."""

    def __init__(self) -> None:
        self.stopping = False

    def __call__(self) -> bool:
        return self.stopping

    def install(self) -> None:
        def handler(signum, frame):  # noqa: ARG001 - signal handler signature
            self.stopping = True

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
        if hasattr(signal, "SIGBREAK"):  # Windows: CTRL_BREAK sent to the child's process group
            signal.signal(signal.SIGBREAK, handler)


# What runs in the training process beside the loop, after each of its events: modules of the layers above
# training, loaded by name as plug-ins are (so this package never imports them). Each module's
# ``observer(config)`` returns None or a callable that takes an event and yields events of its own (the checkpoint
# judge: a Judged event after each Checkpoint). The loop waits while an observer works.
OBSERVERS = ("alltalk_gui.core.voice.judge.in_training",)
Observer = Callable[[Event], Iterable[Event]]


def load_observers(config: TrainConfig) -> list[Observer]:
    found = []
    for name in OBSERVERS:
        made = importlib.import_module(name).observer(config)
        if made is not None:
            found.append(made)
    return found


def run_to_sink(config: TrainConfig, *, resume: bool, events_path: str | Path | None,
                stop: Callable[[], bool] | None = None,
                observers: Sequence[Observer] | None = None,
                announce: Callable[[Event], None] | None = None) -> Iterator[Event]:
    """Run training, appending every event to ``events_path`` (default ``<run>/events.jsonl``) as it passes,
    and after each the events of the ``observers`` (default :func:`load_observers`).

    Yields the same events, so a caller in the same process (the CLI) can show progress too. The events the loop
    gives while it cannot yield (the set-up's progress: ``train``'s ``announce``) are written at once and given to
    ``announce``.
    """
    sink = None
    watching = load_observers(config) if observers is None else list(observers)

    def write(event: Event) -> None:
        nonlocal sink
        if sink is None:
            sink = JsonlSink(Path(events_path) if events_path else config.run_dir / EVENTS_FILE)
        sink.write(event)

    def announced(event: Event) -> None:
        write(event)
        if announce is not None:
            announce(event)

    try:
        for event in train(config, resume=resume, stop=stop, announce=announced):
            write(event)
            yield event
            for observer in watching:  # after the event is out: the GUI shows a checkpoint before its judging
                for more in observer(event):
                    write(more)
                    yield more
    finally:
        if sink is not None:
            sink.close()


def exit_code(events: list[Event]) -> int:
    """0 for a run that finished or stopped cleanly, 2 if its inputs were rejected, 1 if it failed later."""
    done = next((e for e in reversed(events) if isinstance(e, Done)), None)
    if done is None or done.reason != FinishReason.ERROR:
        return 0
    error = next((e for e in reversed(events) if isinstance(e, Error)), None)
    started = any(e.type == EventType.STARTED for e in events)
    return 1 if started or (error and error.kind == ErrorKind.CRASH) else 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m alltalk_gui.core.training.runner",
                                     description="Run one training (under accelerate launch for several processes).")
    parser.add_argument("--config", required=True, help="TrainConfig as JSON (run_name must be set)")
    parser.add_argument("--resume", action="store_true", help="continue from the run's newest checkpoint")
    parser.add_argument("--events", help="JSON-lines events file (default <run>/events.jsonl)")
    args = parser.parse_args(argv)
    config = TrainConfig.load(args.config)
    if not config.run_name:
        # Every process must agree on the run folder, so the launcher names it, never the processes.
        print("runner: the config must name the run (run_name).", file=sys.stderr)
        return 2
    stop = StopFlag()
    stop.install()
    events = list(run_to_sink(config, resume=args.resume, events_path=args.events, stop=stop))
    return exit_code(events)


if __name__ == "__main__":
    sys.exit(main())
