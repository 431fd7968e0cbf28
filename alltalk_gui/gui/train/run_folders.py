"""Which of a project's training runs can be resumed, read from the run folders (no Qt, no torch)."""

from __future__ import annotations

from pathlib import Path

from alltalk_gui.core.training.checkpoints import run_checkpoints
from alltalk_gui.core.training.events import read_events

# The names core.train gives the run folder's files; not imported from it because core.train imports the
# dataset code and with it torch, which the GUI process must not load.
EVENTS_FILE = "events.jsonl"
STOP_FILE = "STOP"


def newest_resumable_run(runs_dir: Path) -> Path | None:
    """The run folder with the most recent complete checkpoint, if any."""
    best, best_time = None, -1.0
    if not runs_dir.is_dir():
        return None
    for run in runs_dir.iterdir():
        checkpoints = run_checkpoints(run) if run.is_dir() else []
        if checkpoints:
            stamp = checkpoints[-1].path.stat().st_mtime
            if stamp > best_time:
                best, best_time = run, stamp
    return best


def run_finished(run_dir: Path) -> bool:
    """Whether the run's last Done event says it ran to its end (nothing left to resume)."""
    events = run_dir / EVENTS_FILE
    if not events.is_file():
        return False
    last = None
    for event in read_events(events):
        if event.type == "done":
            last = event
    return last is not None and last.reason in ("finished", "max_steps")
