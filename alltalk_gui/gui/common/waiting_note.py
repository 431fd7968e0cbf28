"""The note a page shows while the window waits for work to end before it closes (a training's checkpoint, a take
being stopped, an export): a busy bar and what it waits for, window-modal, nothing to press. The page waits in a
local event loop meanwhile, so the window keeps painting: the GUI thread never waits on a thread or a process."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QProgressDialog, QWidget


def waiting_note(parent: QWidget, title: str, text: str) -> QProgressDialog:
    """Show the note over ``parent``'s window; close it when the wait is over."""
    note = QProgressDialog(text, "", 0, 0, parent)
    note.setWindowTitle(title)
    note.setCancelButton(None)
    note.setMinimumDuration(0)
    note.setWindowModality(Qt.WindowModality.WindowModal)
    note.show()
    return note
