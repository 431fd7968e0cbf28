"""The training supervisor: a QThread that runs the training child process and relays what it reports.

Training never runs in the GUI process. :func:`alltalk_gui.core.training.launch.start_training` starts the child
(the runner, or N of it under ``accelerate launch``), exactly as the CLI does, below normal priority and in a
process group of its own. The child appends its events to ``<run>/events.jsonl``; this thread follows that file
with :class:`~alltalk_gui.core.training.follow.EventsFollower` (from where it ended before the start, so a
resumed run's old events are not repeated) and re-emits each event as ``event_received``. The child's own
output (warnings, a traceback) comes out line by line as ``output_line``.

Stop (:meth:`TrainingSupervisor.request_stop`) writes the run's ``STOP`` file and, for one process, signals the
child (SIGTERM; CTRL_BREAK on Windows): the loop finishes its step, saves a checkpoint and exits 0.
:meth:`kill` is the force-stop for a child that does not; it reaches every process the child started.

The thread never touches widgets; receivers in the GUI thread get the signals through queued connections.
"""

from __future__ import annotations

import subprocess
import threading

from PySide6.QtCore import QThread, Signal

from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done
from alltalk_gui.core.training.follow import EventsFollower, follow_process
from alltalk_gui.core.training.launch import LaunchError, TrainingProcess, start_training
from alltalk_gui.core.training.run_folders import EVENTS_FILE, check_run_name
from alltalk_gui.gui.common.wording import noun, plural


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

    def wait_started(self, timeout: float) -> bool:
        return self._started.wait(timeout)

    # -- the thread -------------------------------------------------------------------------------------------
    def run(self) -> None:
        follower = EventsFollower(self.events_path)
        try:
            self.child = start_training(self.config, resume=self.resume, processes=self.processes,
                                        events_path=self.events_path, output=subprocess.PIPE)
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
        reader = threading.Thread(target=self._read_output, daemon=True)
        reader.start()
        done_seen = False

        def relay(event) -> None:
            nonlocal done_seen
            done_seen = done_seen or isinstance(event, Done)
            self.event_received.emit(event)

        code = follow_process(self.child.process, follower, relay)
        reader.join(timeout=5)
        self.child.clear_stop()
        if follower.skipped > self.skipped_lines:
            self.output_line.emit(f"{plural(follower.skipped, 'unreadable line')} in {self.events_path} "
                                  f"{noun(follower.skipped, 'was')} skipped.")
        self.skipped_lines = follower.skipped
        self.returncode = code
        self.child_exited.emit(code, done_seen)

    def _read_output(self) -> None:
        assert self.child is not None and self.child.process.stdout is not None
        for line in self.child.process.stdout:
            self.output_line.emit(line.rstrip("\n"))
