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
    collect_garbage_in_the_gui_thread()
    return app


_garbage_collector = None  # the one GarbageCollector (its timer) for the process


def collect_garbage_in_the_gui_thread() -> None:
    """Python's cyclic garbage collector runs in whichever thread happens to allocate. Run by a worker thread (a
    preview building its model), it freed a garbage cycle that held a closed page's widget, so Qt destroyed the
    widget in that thread: the worker then held Qt's signal lock and waited for the GIL, while the GUI thread held
    the GIL and waited for that lock, forever (CI and a local run, 2026-11-26, found with gdb). pyqtgraph's
    GarbageCollector turns the automatic collection off and collects from a timer in the GUI thread instead."""
    global _garbage_collector
    if _garbage_collector is None:
        import gc

        from pyqtgraph.util.garbage_collector import GarbageCollector

        class GuiThreadGarbageCollector(GarbageCollector):
            def check(self) -> None:
                gc.disable()  # again at each look: some libraries turn it back on when they are done (srsly's msgpack)
                super().check()

        _garbage_collector = GuiThreadGarbageCollector(interval=1.0)


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
