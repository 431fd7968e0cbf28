"""The app's log file and uncaught exceptions: logged with the traceback, then handed to the GUI's dialog."""

from __future__ import annotations

import logging
import sys
import threading

import pytest

from alltalk_gui.core import app_log


@pytest.fixture
def clean_logging(tmp_path, monkeypatch):
    """A private log folder; the root logger, the hooks and the crash callback as they were, afterwards."""
    monkeypatch.setenv("ALLTALK_GUI_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr(app_log, "_fault_file", object())  # leave pytest's own faulthandler alone
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    yield tmp_path / "logs" / app_log.LOG_FILE
    for handler in root.handlers:
        if handler not in handlers:
            handler.close()
    root.handlers[:] = handlers
    root.setLevel(level)
    app_log.set_crash_callback(None)


def test_log_folders_per_platform(monkeypatch, tmp_path):
    monkeypatch.delenv("ALLTALK_GUI_LOG_DIR", raising=False)
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("LOCALAPPDATA", "C:\\Users\\José\\AppData\\Local")
    assert str(app_log.log_dir()).endswith("AllTalkGUI")  # beside the launcher's install.log
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert app_log.log_path() == tmp_path / "state" / "alltalk_gui" / "alltalk-gui.log"


def test_everything_logged_goes_to_the_file_once(clean_logging):
    path = app_log.start_file_log()
    assert app_log.start_file_log() == path == clean_logging  # a second call adds no second handler
    logging.getLogger("alltalk_gui.core.test").warning("Señal: ¿José?")
    text = path.read_text(encoding="utf-8")
    assert text.count("Señal: ¿José?") == 1 and "Log file" in text


def test_an_uncaught_exception_is_logged_then_shown(clean_logging):
    shown = []
    app_log.start_file_log()
    app_log.set_crash_callback(lambda text, log_file: shown.append((text, log_file)))
    try:
        raise OSError(1114, "A dynamic link library (DLL) initialization routine failed")
    except OSError:
        sys.excepthook(*sys.exc_info())
    text = clean_logging.read_text(encoding="utf-8")
    assert "Uncaught exception" in text and "Traceback" in text and "DLL) initialization routine failed" in text
    [(traceback_text, log_file)] = shown
    assert traceback_text.strip().endswith("initialization routine failed") and log_file == clean_logging


def test_an_exception_in_a_thread_is_logged(clean_logging):
    app_log.start_file_log()
    thread = threading.Thread(target=lambda: 1 / 0)
    thread.start()
    thread.join()
    assert "ZeroDivisionError" in clean_logging.read_text(encoding="utf-8")


def test_a_failing_dialog_does_not_hide_the_error(clean_logging):
    app_log.start_file_log()

    def broken_dialog(text, log_file):
        raise RuntimeError("no display")

    app_log.set_crash_callback(broken_dialog)
    app_log.report_uncaught(ValueError, ValueError("bad clip"), None)
    text = clean_logging.read_text(encoding="utf-8")
    assert "ValueError: bad clip" in text and "The crash dialog failed" in text


def test_an_unwritable_log_folder_does_not_stop_the_app(clean_logging, monkeypatch, tmp_path):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("ALLTALK_GUI_LOG_DIR", str(tmp_path / "file" / "logs"))
    assert app_log.start_file_log() is None
