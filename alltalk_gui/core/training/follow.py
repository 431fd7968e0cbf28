"""Reading a run's ``events.jsonl`` (and the child's ``output.log``): all of it, or as it grows while a training
child writes it.

Every reader of events goes through here (the CLI's progress, the GUI's training supervisor, the Train page
showing an earlier run, :func:`alltalk_gui.core.training.run_folders.run_finished`), so all of them treat a
damaged file the same way:

- the file is read in binary and positions are byte offsets, so ``\\r\\n`` (Windows text mode) and multi-byte
  UTF-8 characters can never shift them;
- a last line without its newline is being written: it is left for the next read;
- a complete line that is not an event (torn by a power loss, then closed by the next session's first line)
  is skipped and counted in ``skipped``, never raised: one bad line must not hide a whole run.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from alltalk_gui.core.training.events import Event, event_from_dict

POLL_S = 0.1  # how often a followed file is read: fast enough for a live plot, cheap for the disk


@dataclass
class EventLog:
    """The events of a file, and how many complete lines in it were not events."""

    events: list[Event] = field(default_factory=list)
    skipped: int = 0


def parse_line(raw: bytes) -> Event | None:
    """The event on one complete line, or None when the line is not one (bad JSON, unknown type, bad fields)."""
    text = raw.strip()
    if not text:
        return None
    try:
        data = json.loads(text.decode("utf-8"))
        return event_from_dict(data)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


class LineFollower:
    """Reads the complete lines a growing file gained since the last :meth:`new_lines` (bytes, with their ends).

    Args:
        path: the file (it may not exist yet).
        from_end: start at the file's current end (what it held before is not read).
    """

    def __init__(self, path: str | os.PathLike[str], *, from_end: bool = True) -> None:
        self.path = Path(path)
        self.offset = self.path.stat().st_size if from_end and self.path.exists() else 0

    def new_lines(self) -> list[bytes]:
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return []
        lines = []
        with f:
            f.seek(self.offset)
            for raw in f:
                if not raw.endswith(b"\n"):
                    break  # still being written: read it whole next time
                self.offset += len(raw)
                lines.append(raw)
        return lines


class EventsFollower(LineFollower):
    """Reads the events a growing events file gained since the last :meth:`poll` (see :class:`LineFollower`)."""

    def __init__(self, path: str | os.PathLike[str], *, from_end: bool = True) -> None:
        super().__init__(path, from_end=from_end)
        self.skipped = 0

    def poll(self) -> list[Event]:
        """The events on the lines completed since the last call (unparsable ones counted in ``skipped``)."""
        events = []
        for raw in self.new_lines():
            event = parse_line(raw)
            if event is not None:
                events.append(event)
            elif raw.strip():
                self.skipped += 1
        return events


def read_event_file(path: str | os.PathLike[str]) -> EventLog:
    """Every event of a file that is not being written to (a torn last line is left out, not counted)."""
    follower = EventsFollower(path, from_end=False)
    return EventLog(follower.poll(), follower.skipped)


class _Process(Protocol):
    def poll(self) -> int | None: ...


def follow_process(process: _Process, follower: EventsFollower, on_event: Callable[[Event], None],
                   *, poll_s: float = POLL_S, also: Callable[[], None] | None = None,
                   until: Callable[[], bool] | None = None) -> int | None:
    """Pass each new event to ``on_event`` until ``process`` exits; the lines it wrote last are read too.

    Args:
        also: called at every poll as well (e.g. to read the child's output file).
        until: polled too; when it returns True, stop following (the process goes on: the app closed, the run
            continues in the background).

    Returns:
        the process's exit code, or None when ``until`` ended the following first.
    """
    while True:
        code = process.poll()  # before reading: whatever it wrote before exiting is then read below
        for event in follower.poll():
            on_event(event)
        if also is not None:
            also()
        if code is not None:
            return code
        if until is not None and until():
            return None
        time.sleep(poll_s)
