"""The screen the screenshot scripts render on: ``use_screen(width, height)``, called before Qt starts.

Qt's offscreen platform pretends an 800x800 screen, and the main window fits itself into its screen's free area
(``MainWindow.fit_to_screen``), so every picture came out at the window's minimum width (902 px) whatever size a
script asked for, the right side of the pages cut off. The offscreen platform reads its screens from a JSON file
(``offscreen:configfile=``): the scripts give it a screen as large as the pictures they take (without the fake
window frame, so the window may cover the whole screen), or a 1024x600 one for the small-screen pictures.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def use_screen(width: int = 1920, height: int = 1200) -> None:
    """Make Qt's offscreen platform show one ``width`` x ``height`` screen (nothing changes on a real display)."""
    platform = os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if platform.split(":")[0] != "offscreen":
        return
    config = Path(tempfile.gettempdir()) / f"alltalk_gui_offscreen_{width}x{height}.json"
    config.write_text(json.dumps({"windowFrameMargins": False, "screens": [
        {"name": "screenshots", "x": 0, "y": 0, "width": width, "height": height,
         "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={config}"
