"""The note a page shows while the window waits for work to end before it closes (a training's checkpoint, a take
being stopped, an export): a busy bar and what it waits for, window-modal, nothing to press. The page waits in a
local event loop meanwhile, so the window keeps painting: the GUI thread never waits on a thread or a process."""

from __future__ import annotations

from typing import Iterable

from PySide6.QtCore import QEventLoop, Qt
from PySide6.QtWidgets import QProgressDialog, QWidget

from alltalk_gui.gui.common.workers import Worker


def waiting_note(parent: QWidget, title: str, text: str) -> QProgressDialog:
    """Show the note over ``parent``'s window; close it when the wait is over."""
    note = QProgressDialog(text, "", 0, 0, parent)
    note.setWindowTitle(title)
    note.setCancelButton(None)
    note.setMinimumDuration(0)
    note.setWindowModality(Qt.WindowModality.WindowModal)
    note.show()
    return note


def wait_for_workers(parent: QWidget, title: str, text: str, workers: Iterable[Worker | None]) -> None:
    """Wait until every running one of ``workers`` has ended (asked to stop before, or left to finish), in a local
    event loop under the note: the window keeps painting, and the GUI thread never waits on the torch inside a
    worker's thread. Returns at once when none runs."""
    running = [w for w in workers if w is not None and w.is_running()]
    if not running:
        return
    note = waiting_note(parent, title, text)
    loop = QEventLoop()
    for worker in running:  # finished/failed are emitted in this thread, so only inside loop.exec(): no race
        worker.finished.connect(loop.quit)
        worker.failed.connect(loop.quit)
    while any(w.is_running() for w in running):
        loop.exec()
    for worker in running:
        worker.finished.disconnect(loop.quit)
        worker.failed.disconnect(loop.quit)
    note.close()
