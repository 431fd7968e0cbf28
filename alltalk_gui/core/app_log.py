"""The app's log file and what happens to an error nobody caught.

A desktop app started from a shortcut has no console: on Windows the launcher starts ``python.exe`` without a
window, so anything written to stderr (a traceback, a DLL that failed to load, torch's "no kernel image")
is lost and the user sees the app vanish or do nothing. Everything logged therefore also goes to a file, and
an uncaught exception is logged with its traceback before anything else happens; the GUI adds a dialog on top
(:mod:`alltalk_gui.gui.crash_dialog`). A native crash (a segmentation fault inside a library) is written there
too, by :mod:`faulthandler`.

Where: ``%LOCALAPPDATA%\\AllTalkGUI\\alltalk-gui.log`` on Windows (beside the launcher's ``install.log``, where the
launcher reads it when the app exits at once), ``$XDG_STATE_HOME/alltalk_gui/alltalk-gui.log`` (default
``~/.local/state/alltalk_gui``) on Linux, ``~/Library/Logs/AllTalkGUI`` on macOS; ``$ALLTALK_GUI_LOG_DIR``
overrides it (tests). The file rotates at 2 MB, keeping three old ones.
"""

from __future__ import annotations

import faulthandler
import logging
import logging.handlers
import os
import sys
import threading
import traceback
from pathlib import Path
from types import TracebackType
from typing import Callable, Optional

LOG_FILE = "alltalk-gui.log"
FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
log = logging.getLogger("alltalk_gui")

# Called with (the traceback as text, the log file) after an uncaught exception is logged; the GUI sets it.
CrashCallback = Callable[[str, Path], None]
_on_crash: Optional[CrashCallback] = None
_fault_file = None  # kept open for faulthandler, which writes to it from a signal handler


def log_dir() -> Path:
    override = os.environ.get("ALLTALK_GUI_LOG_DIR")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "AllTalkGUI"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Logs" / "AllTalkGUI"
    return Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "alltalk_gui"


def log_path() -> Path:
    return log_dir() / LOG_FILE


def start_file_log(level: int = logging.INFO) -> Optional[Path]:
    """Log to stderr (as before) and to :func:`log_path`; install the crash hooks. Safe to call twice.

    Returns the log file, or None when it cannot be written (read-only home): the app still runs.
    """
    global _fault_file
    root = logging.getLogger()
    logging.basicConfig(level=level, format=FORMAT)  # does nothing where logging is already configured ...
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)  # ... but the file must still get INFO
    install_excepthook()
    existing = [h for h in root.handlers if getattr(h, "alltalk_gui_file", False)]
    if existing:
        return Path(existing[0].baseFilename)
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=2_000_000, backupCount=3, encoding="utf-8")
    except OSError as exc:
        log.warning("No log file (%s): %s", path, exc)
        return None
    handler.alltalk_gui_file = True
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    if _fault_file is None:
        try:
            _fault_file = open(path.with_suffix(".crash.log"), "a", encoding="utf-8")
            faulthandler.enable(file=_fault_file)
        except OSError:
            pass
    log.info("Log file %s (Python %s, %s)", path, sys.version.split()[0], sys.platform)
    return path


def set_crash_callback(callback: Optional[CrashCallback]) -> None:
    """What to do after an uncaught exception is logged (the GUI shows a dialog); None for nothing more."""
    global _on_crash
    _on_crash = callback


def install_excepthook() -> None:
    """Route uncaught exceptions (main thread, other threads, Qt slots) through :func:`report_uncaught`."""
    sys.excepthook = report_uncaught
    threading.excepthook = lambda args: report_uncaught(args.exc_type, args.exc_value, args.exc_traceback)


def report_uncaught(kind: type[BaseException], value: BaseException, tb: Optional[TracebackType]) -> None:
    """Log the exception with its traceback, then hand it to the crash callback (a KeyboardInterrupt is not a
    crash: it goes to Python's own hook)."""
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, tb)
        return
    text = "".join(traceback.format_exception(kind, value, tb))
    log.critical("Uncaught exception:\n%s", text.rstrip())
    callback = _on_crash
    if callback is not None:
        try:
            callback(text, log_path())
        except Exception:  # the dialog itself failed: the log has the error already
            log.exception("The crash dialog failed")
