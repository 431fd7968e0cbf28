"""The crash dialog: an uncaught exception in a Qt slot opens one window naming the error and the log file."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QApplication, QMessageBox

from alltalk_gui.core import app_log
from alltalk_gui.gui import crash_dialog


def test_an_error_in_a_slot_shows_one_dialog_with_the_log_file(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_LOG_DIR", str(tmp_path))
    monkeypatch.setattr(sys, "excepthook", app_log.report_uncaught)
    crash_dialog.install()
    try:
        for _ in range(2):  # the same error twice: one dialog
            try:
                raise RuntimeError("CUDA error: no kernel image is available for execution on the device")
            except RuntimeError:
                sys.excepthook(*sys.exc_info())
        boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
        assert len(boxes) == 1
        [box] = boxes
        assert "no kernel image" in box.text() and str(tmp_path / app_log.LOG_FILE) in box.text()
        assert "Traceback" in box.detailedText()
        box.close()
        qtbot.waitUntil(lambda: not crash_dialog._open)
    finally:
        app_log.set_crash_callback(None)


def test_no_dialog_without_an_application(monkeypatch):
    monkeypatch.setattr(QApplication, "instance", staticmethod(lambda: None))
    assert crash_dialog.show("Traceback ...\nValueError: x", app_log.log_path()) is None
