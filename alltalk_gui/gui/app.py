"""Start the desktop app: QApplication, look, main window, event loop.

Only Qt and the light parts of the core are imported here, so the window appears in about a second; torch,
Whisper and coqui-tts load later, in the steps that need them.
"""

from __future__ import annotations

import logging
import sys

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from alltalk_gui import __version__

log = logging.getLogger("alltalk_gui")

ORGANISATION = "AllTalk GUI"
APPLICATION = "AllTalk GUI"


def create_application(argv: list[str] | None = None) -> QApplication:
    """Return the QApplication (creating it once) with the app's names set, which QSettings relies on."""
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv[:1])
    app.setOrganizationName(ORGANISATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationVersion(__version__)
    app.setApplicationDisplayName(APPLICATION)
    # Wayland compositors and desktop docks match the window to alltalk-gui.desktop (name and icon) by this.
    app.setDesktopFileName("alltalk-gui")
    return app


def run_app(argv: list[str] | None = None) -> int:
    from alltalk_gui.core import app_log
    from alltalk_gui.gui import crash_dialog

    app_log.start_file_log()  # stderr as before, plus the log file a user can send (no console on Windows)
    app = create_application(argv)
    crash_dialog.install()
    from alltalk_gui.gui.splash import StartupSplash
    from alltalk_gui.gui.style import apply_style

    apply_style(app)
    splash = StartupSplash()
    splash.show()
    splash.show_message("Loading the interface…")
    from alltalk_gui.gui.main_window import MainWindow
    from alltalk_gui.gui.start.first_run_page import first_run_pending

    window = MainWindow()
    window.show()
    splash.finish(window)
    if first_run_pending():
        window.show_first_run()
    # Logged once the event loop runs, so a smoke test knows the window really came up.
    QTimer.singleShot(0, lambda: log.info("AllTalk GUI %s ready", __version__))
    return app.exec()
