"""The training supervisor: a QThread that runs the training child process and relays what it reports.

Training never runs in the GUI process. :func:`alltalk_gui.core.training.launch.start_training` starts the child
(the runner, or N of it under ``accelerate launch``), exactly as the CLI does, below normal priority and in a
process group of its own. The child appends its events to ``<run>/events.jsonl``; this thread follows that file
with :class:`~alltalk_gui.core.training.follow.EventsFollower` (from where it ended before the start, so a
resumed run's old events are not repeated) and re-emits each event as ``event_received``. The child writes its
own output (warnings, a traceback) into the run's ``output.log``, not into a pipe, so that it does not depend on
the app; this thread follows that file too and re-emits it line by line as ``output_line``.

Stop (:meth:`TrainingSupervisor.request_stop`) writes the run's ``STOP`` file and, for one process, signals the
child (SIGTERM; CTRL_BREAK on Windows): the loop finishes its step, saves a checkpoint and exits 0.
:meth:`kill` is the force-stop for a child that does not; it reaches every process the child started.
:meth:`detach` lets the app close while the child trains on: this thread stops following, the child keeps its
run lock (:mod:`alltalk_gui.core.project.lock`) until it ends, and nothing is stopped or killed.

The thread never touches widgets; receivers in the GUI thread get the signals through queued connections.
"""

from __future__ import annotations

import subprocess
import threading

from PySide6.QtCore import QThread, Signal

from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done
from alltalk_gui.core.training.follow import EventsFollower, LineFollower, follow_process
from alltalk_gui.core.training.launch import LaunchError, TrainingProcess, start_training
from alltalk_gui.core.training.run_folders import EVENTS_FILE, check_run_name
from alltalk_gui.gui.common.wording import noun, plural
from alltalk_gui.gui.train.child_output import OUTPUT_FILE


class TrainingSupervisor(QThread):
    """Runs one training child (``config.run_name`` must be set) until it exits."""

    event_received = Signal(object)  # a core.events.Event
    output_line = Signal(str)  # a line the child printed
    child_exited = Signal(int, bool)  # exit code, whether a Done event arrived

    def __init__(self, config: TrainConfig, *, resume: bool = False, processes: int = 1, parent=None) -> None:
        super().__init__(parent)
        if not config.run_name:
            raise ValueError("the run needs a name before it starts (config.run_name)")
        check_run_name(config.run_name)
        self.config = config
        self.resume = resume
        self.processes = processes
        self.run_dir = config.run_dir
        self.events_path = self.run_dir / EVENTS_FILE
        self.child: TrainingProcess | None = None
        self.returncode: int | None = None
        self.stop_requested = False
        self.detached = False
        self.skipped_lines = 0
        self._started = threading.Event()

    @property
    def process(self) -> subprocess.Popen | None:
        return self.child.process if self.child is not None else None

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    # -- control (GUI thread) -------------------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Ask the child to finish its step, save a checkpoint and exit."""
        self.stop_requested = True
        if self.child is not None:
            self.child.request_stop()

    def kill(self) -> None:
        """Force-stop: end the child and everything it started, now. The last complete checkpoint stays."""
        if self.child is not None:
            self.child.kill()

    def detach(self) -> None:
        """Stop following the child and let it train on (the app closes): it keeps the project's run lock."""
        self.detached = True

    def wait_started(self, timeout: float) -> bool:
        return self._started.wait(timeout)

    # -- the thread -------------------------------------------------------------------------------------------
    def run(self) -> None:
        follower = EventsFollower(self.events_path)
        output_path = self.run_dir / OUTPUT_FILE
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            output = LineFollower(output_path)  # from its end: a resumed run's earlier output is not shown again
            with open(output_path, "ab") as log:  # the child gets its own handle; ours closes at once
                self.child = start_training(self.config, resume=self.resume, processes=self.processes,
                                            events_path=self.events_path, output=log)
        except (LaunchError, OSError) as exc:
            self.output_line.emit(str(exc))
            self._started.set()
            self.returncode = 1
            self.child_exited.emit(1, False)
            return
        self.output_line.emit("$ " + " ".join(self.child.command))
        if self.stop_requested:  # Stop came while the child was being started
            self.child.request_stop()
        self._started.set()
        done_seen = False

        def relay(event) -> None:
            nonlocal done_seen
            done_seen = done_seen or isinstance(event, Done)
            self.event_received.emit(event)

        def relay_output() -> None:
            for raw in output.new_lines():
                self.output_line.emit(raw.decode("utf-8", errors="replace").rstrip("\r\n"))

        code = follow_process(self.child.process, follower, relay, also=relay_output, until=lambda: self.detached)
        if code is None:  # detached: the child trains on and holds the project until it ends
            return
        self.child.ended()
        if follower.skipped > self.skipped_lines:
            self.output_line.emit(f"{plural(follower.skipped, 'unreadable line')} in {self.events_path} "
                                  f"{noun(follower.skipped, 'was')} skipped.")
        self.skipped_lines = follower.skipped
        self.returncode = code
        self.child_exited.emit(code, done_seen)
