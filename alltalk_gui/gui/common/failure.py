"""What the user is told when a worker's job stops with an error nobody expected: one plain sentence and the
error's own message, the traceback under "Show Details…" and in the log file, never in the message itself.

A worker's ``failed`` signal carries the whole traceback. Pages used to paste it into their boxes, labels and
lists ("An unexpected error stopped the work:" and twenty lines of "File …, line …"), which tells a new user
nothing and hides the one line that matters.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from alltalk_gui.core import app_log

log = logging.getLogger("alltalk_gui")


def failure_message(traceback_text: str) -> str:
    """The error's own message from the last line of a traceback ("ValueError: x" -> "x"), or the last line when
    it is not of that form; "an unknown error" for an empty text."""
    last = next((line.strip() for line in reversed(traceback_text.strip().splitlines()) if line.strip()), "")
    kind, sep, message = last.partition(": ")
    name = kind.rsplit(".", 1)[-1]
    if sep and message and name.isidentifier() and name.endswith(("Error", "Exception", "Warning")):
        return message
    return last or "an unknown error"


def log_failure(what: str, traceback_text: str) -> None:
    """Keep the whole traceback in the log file, where a bug report can take it from."""
    log.error("%s\n%s", what, traceback_text.rstrip())


def failure_box(parent: QWidget | None, title: str, what: str, traceback_text: str) -> QMessageBox:
    """The box for an unexpected failure (not shown yet): ``what`` happened (a plain sentence), the error's message,
    what to do, and the traceback under Show Details. The traceback is logged here."""
    log_failure(what, traceback_text)
    box = QMessageBox(QMessageBox.Icon.Critical, title, f"{what}\n\n{failure_message(traceback_text)}", parent=parent)
    box.setInformativeText("This was not expected. Try again; if it happens again, please report it with the "
                           f"log file, {app_log.log_path()} (Show Details… has the same report).")
    box.setDetailedText(traceback_text)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return box


def show_failure(parent: QWidget | None, title: str, what: str, traceback_text: str) -> None:
    """Show :func:`failure_box` and wait for the user to close it."""
    failure_box(parent, title, what, traceback_text).exec()
