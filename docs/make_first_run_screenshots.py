"""Render the first-run page (light and dark) and the About dialog offscreen for the README.

``python docs/make_first_run_screenshots.py`` writes docs/images/first_run.png, first_run_dark.png and
about.png. Settings go to a throw-away folder, so the page shows what a new user sees on this computer; the
checks really run (PyTorch is loaded to look for graphics cards), so the pictures show this machine's answers.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from offscreen_screen import use_screen  # noqa: E402 (docs/, the script's folder, is on sys.path)

use_screen()  # a screen as large as the pictures: offscreen Qt's own 800x800 one cuts the window
OUT = Path(__file__).parent / "images"


def wait(app, condition, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for the checks")
        app.processEvents()
        time.sleep(0.02)
    app.processEvents()


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ALLTALK_GUI_CONFIG_DIR"] = tmp
        from alltalk_gui.gui.settings import use_settings_folder

        from alltalk_gui.gui.app import create_application
        from alltalk_gui.gui.start.about_dialog import AboutDialog
        from alltalk_gui.gui.main_window import MainWindow
        from alltalk_gui.gui.style import apply_style

        use_settings_folder(tmp)
        app = create_application()
        OUT.mkdir(exist_ok=True)
        for name, dark in (("first_run.png", False), ("first_run_dark.png", True)):
            apply_style(app, dark=dark)
            window = MainWindow()
            window.resize(1100, 760)
            window.show()
            window.show_first_run()
            wait(app, lambda: not window.first_run.is_checking())
            window.grab().save(str(OUT / name))
            window.close()
        apply_style(app, dark=False)
        dialog = AboutDialog()
        dialog.show()
        wait(app, lambda: not dialog.gpu_busy.isVisible())
        dialog.grab().save(str(OUT / "about.png"))
    print(f"screenshots written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
