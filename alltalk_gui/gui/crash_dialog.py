"""The dialog an uncaught exception shows: what happened, where the log is, the traceback to copy.

:mod:`alltalk_gui.core.app_log` logs every uncaught exception (also those raised in Qt slots, which PySide6
hands to ``sys.excepthook`` and then carries on); this adds a window, so an error is never only a line in a
log nobody knows about. One dialog at a time: an error that repeats (in a timer, a paint event) is logged
each time but not shown again while its dialog is open.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from alltalk_gui.core import app_log

_open: list[QMessageBox] = []  # the dialog on screen, kept alive while it is open


def install() -> None:
    """Show :func:`show` for every uncaught exception from now on."""
    app_log.set_crash_callback(show)


def show(traceback_text: str, log_file: Path) -> QMessageBox | None:
    """Open the crash dialog (not blocking: the app goes on where it can); None without a QApplication or
    while another crash dialog is open."""
    if QApplication.instance() is None or _open:
        return None
    last_line = traceback_text.strip().splitlines()[-1] if traceback_text.strip() else "Unknown error"
    box = QMessageBox(QMessageBox.Icon.Critical, "AllTalk GUI: unexpected error",
                      f"Something went wrong that AllTalk GUI did not expect:\n\n{last_line}\n\n"
                      f"The details are in the log file:\n{log_file}\n\nIf it happens again, please report it "
                      "with that file. Save your work; the app may not work correctly until it is restarted.")
    box.setDetailedText(traceback_text)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    _open.append(box)
    box.finished.connect(lambda _result: _open.clear())
    box.open()
    return box
