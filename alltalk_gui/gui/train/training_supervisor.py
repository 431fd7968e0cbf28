"""The training supervisor: a QThread that runs the training child process and relays what it reports.

Training never runs in the GUI process: the child is ``python -m alltalk_gui.core.training.runner`` (one device) or the
same module under ``accelerate launch --multi_gpu --num_processes N`` (several GPUs), exactly as the CLI starts
it. The child appends its events to ``<run>/events.jsonl``; this thread follows that file (from where it ended
before the start, so a resumed run's old events are not repeated) and re-emits each event as ``event_received``.
The child's own output (warnings, a traceback) comes out line by line as ``output_line``.

Stop writes the run's ``STOP`` file and sends SIGTERM to the child: the loop finishes its step, saves a
checkpoint and exits 0. :meth:`kill` is the force-stop for a child that does not. The child runs in its own
process group so that a kill reaches every process ``accelerate launch`` started.

The thread never touches widgets; receivers in the GUI thread get the signals through queued connections.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from PySide6.QtCore import QThread, Signal

from alltalk_gui.core import atomic
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done, event_from_dict
from alltalk_gui.gui.train.run_folders import EVENTS_FILE, STOP_FILE

LAUNCH_CONFIG = "launch_config.json"
CHILD_NICENESS = 10  # "nice" value of the training child on Linux/macOS (0 normal, 19 lowest)
POLL_S = 0.1  # how often the events file is read: fast enough for a live plot, cheap for the disk


def runner_command(config_file: Path, events: Path, *, resume: bool, processes: int,
                   mixed_precision: str = "no") -> list[str]:
    """The child's command line: the runner itself, or under ``accelerate launch`` for several processes."""
    if processes > 1:
        # --multi_gpu is accelerate's torchrun launcher (a gloo group on a machine without CUDA), as the CLI uses.
        cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes",
               str(processes), "--num_machines", "1", "--mixed_precision", mixed_precision, "--dynamo_backend",
               "no", "-m", "alltalk_gui.core.training.runner"]
    else:
        cmd = [sys.executable, "-m", "alltalk_gui.core.training.runner"]
    cmd += ["--config", str(config_file), "--events", str(events)]
    if resume:
        cmd.append("--resume")
    return cmd


class TrainingSupervisor(QThread):
    """Runs one training child (``config.run_name`` must be set) until it exits."""

    event_received = Signal(object)  # a core.events.Event
    output_line = Signal(str)  # a line the child printed
    child_exited = Signal(int, bool)  # exit code, whether a Done event arrived

    def __init__(self, config: TrainConfig, *, resume: bool = False, processes: int = 1, parent=None) -> None:
        super().__init__(parent)
        if not config.run_name:
            raise ValueError("the run needs a name before it starts (config.run_name)")
        self.config = config
        self.resume = resume
        self.processes = processes
        self.run_dir = config.run_dir
        self.events_path = self.run_dir / EVENTS_FILE
        self.process: subprocess.Popen | None = None
        self.returncode: int | None = None
        self.stop_requested = False
        self._started = threading.Event()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    # -- control (GUI thread) -------------------------------------------------------------------------------------
    def request_stop(self) -> None:
        """Ask the child to finish its step, save a checkpoint and exit."""
        self.stop_requested = True
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / STOP_FILE).touch()  # read by every process, also under accelerate launch
        if self.process is not None and self.process.poll() is None and self.processes == 1:
            self.process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """Force-stop: end the child and everything it started, now. The last complete checkpoint stays."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            if hasattr(os, "killpg"):
                os.killpg(self.process.pid, signal.SIGKILL)
            else:
                self.process.kill()
        except ProcessLookupError:
            pass

    def wait_started(self, timeout: float) -> bool:
        return self._started.wait(timeout)

    # -- the thread -------------------------------------------------------------------------------------------
    def run(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / STOP_FILE).unlink(missing_ok=True)  # a leftover from a killed run would stop this one
        offset = self.events_path.stat().st_size if self.events_path.exists() else 0
        config_file = self.run_dir / LAUNCH_CONFIG
        atomic.write_json(config_file, self.config.to_dict())
        cmd = runner_command(config_file, self.events_path, resume=self.resume, processes=self.processes,
                             mixed_precision=self.config.mixed_precision)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.output_line.emit("$ " + " ".join(cmd))
        try:
            self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                            text=True, errors="replace", bufsize=1,
                                            start_new_session=hasattr(os, "killpg"))
        except OSError as exc:
            self.output_line.emit(f"Cannot start the training process: {exc}")
            self._started.set()
            self.returncode = 1
            self.child_exited.emit(1, False)
            return
        self._lower_priority()
        self._started.set()
        reader = threading.Thread(target=self._read_output, daemon=True)
        reader.start()
        done_seen = False
        while True:
            exited = self.process.poll() is not None
            offset, seen = self._read_events(offset)
            done_seen = done_seen or seen
            if exited:
                break
            time.sleep(POLL_S)
        reader.join(timeout=5)
        (self.run_dir / STOP_FILE).unlink(missing_ok=True)
        self.returncode = self.process.returncode
        self.child_exited.emit(self.returncode, done_seen)

    def _lower_priority(self) -> None:
        """Run the child below normal priority: training saturates every core it may use, and the desktop (this
        window included) should stay responsive. Set right after the start, before torch starts its threads,
        which inherit it. The GPU does the real work, so this costs a GPU run next to nothing."""
        import psutil

        try:
            child = psutil.Process(self.process.pid)
            child.nice(psutil.BELOW_NORMAL_PRIORITY_CLASS if sys.platform == "win32" else CHILD_NICENESS)
        except (psutil.Error, OSError):
            pass  # not allowed or already gone: it runs at normal priority

    def _read_events(self, offset: int) -> tuple[int, bool]:
        """Emit the complete lines added since ``offset``; returns the new offset and whether Done was among them."""
        done = False
        if not self.events_path.exists():
            return offset, done
        with open(self.events_path, "rb") as f:
            f.seek(offset)
            for raw in f:
                if not raw.endswith(b"\n"):
                    break  # torn last line: read it whole next time
                offset += len(raw)
                try:
                    event = event_from_dict(json.loads(raw))
                except (ValueError, KeyError, TypeError) as exc:
                    self.output_line.emit(f"Unreadable event line skipped: {exc}")
                    continue
                done = done or isinstance(event, Done)
                self.event_received.emit(event)
        return offset, done

    def _read_output(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.output_line.emit(line.rstrip("\n"))
