"""A message banner in plain words, coloured by how much it matters (info, warning, error)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from alltalk_gui.gui.common import status_colours
from alltalk_gui.gui.common.fitted_label import FittedLabel

BANNER_STYLES = {
    "info": "background: #e3f1e7; color: #1b5e20; border: 1px solid #a5d6a7;",
    "warning": "background: #fff4e0; color: #7a4a00; border: 1px solid #ffcc80;",
    "error": "background: #fdecea; color: #8e1b1b; border: 1px solid #ef9a9a;",
}
# The dark look's: the light pastel boxes glared out of the dark pages (text contrast 8.2, 9.4 and 8.8:1).
DARK_BANNER_STYLES = {
    "info": "background: #1e3325; color: #a5d6a7; border: 1px solid #3f6f4a;",
    "warning": "background: #3a2e14; color: #ffd27f; border: 1px solid #8a6a2a;",
    "error": "background: #3b1f1f; color: #ffb4ab; border: 1px solid #8c3b3b;",
}


class Banner(FittedLabel):
    """One message in plain words, coloured by how much it matters."""

    def __init__(self, level: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.set_level(level)

    def set_level(self, level: str) -> None:
        self.level = level
        styles = DARK_BANNER_STYLES if status_colours.is_dark() else BANNER_STYLES
        self.setStyleSheet(f"QLabel {{ {styles[level]} border-radius: 4px; padding: 6px; }}")
