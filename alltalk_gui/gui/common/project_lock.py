"""The app's side of "one writer per project": take the project's lock when it opens, or offer read-only.

The lock itself is :mod:`alltalk_gui.core.project.lock` (a lock file with stale-lock detection by pid, host and
process start time, the same design as ``QLockFile``): the app and the command line must see each other's
locks, and the core never imports Qt, so both use that one implementation rather than QLockFile here.
"""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.lock import ProjectLockedError, break_lock

PROGRAM = "AllTalk GUI app"


def lock_or_read_only(parent: QWidget, project: VoiceProject) -> bool:
    """Make this window the project's writer; if another program holds it, say who and offer read-only.

    Returns False when the user cancels (the project is not opened).
    """
    try:
        project.take_lock(PROGRAM)
        return True
    except ProjectLockedError as exc:
        box = QMessageBox(QMessageBox.Icon.Warning, "The project is open elsewhere", str(exc),
                          QMessageBox.StandardButton.Cancel, parent)
        read_only = box.addButton("Open read-only", QMessageBox.ButtonRole.AcceptRole)
        # A lock from another computer cannot be checked from here: a copied project brings its lock along.
        take_over = box.addButton("It is not open there: take over", QMessageBox.ButtonRole.DestructiveRole) \
            if exc.remote else None
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        if box.clickedButton() is read_only:
            project.open_read_only(exc)  # every refused change says who holds it (a training: how to stop it)
            return True
        if take_over is not None and box.clickedButton() is take_over:
            break_lock(project.root)
            return lock_or_read_only(parent, project)
        return False
    except OSError:  # read-only media: nobody can write, so there is nothing to guard
        project.open_read_only(f"the folder {project.root} cannot be written (read-only media or no permission).")
        return True


READ_ONLY_MESSAGE = "This project is open read-only (another program holds it): close it there and open it again here."


def read_only_message(project: VoiceProject | None) -> str:
    """Why a change was refused: the project's own reason (who holds it; a training: which run, how to stop it)."""
    reason = project.read_only_reason if project is not None else ""
    return f"This project is open read-only: {reason}" if reason else READ_ONLY_MESSAGE


def is_read_only(project: VoiceProject | None) -> bool:
    """Whether actions that write into the project (transcribe, train, resume) must be refused."""
    return project is not None and project.read_only
