"""A step page that scrolls up and down when the window is lower than the page, never sideways.

On a small screen (1024x600, or 1366x768 at 150 % scaling: 911x512 logical pixels, a taskbar and a title bar
taken off) a page's minimum height must not set the window's: the page scrolls instead. The part that should take
the room a tall window has (the Train page's plots, the transcript editor) goes in :class:`AtMinimum`, so the page
asks the scroll area for no more than its minimum and scrolls only when the window is lower than that.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget


class AtMinimum(QWidget):
    """Holds ``child`` and asks for its minimum height only. A preferred height above it (three plots' default
    480 px each side, a table's 745 px) made the page taller than the window, so it scrolled even when the minimum
    fitted; now the room beyond the minimum goes to the child by stretch."""

    def __init__(self, child: QWidget) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(child)

    def sizeHint(self):  # noqa: N802 (Qt's name)
        return self.minimumSizeHint()

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt's name)
        return False


def page_scroll(content: QWidget, keep_width: bool = False) -> QScrollArea:
    """A frameless scroll area around ``content`` that resizes it to the width and scrolls only up and down;
    ``keep_width``: never narrower than ``content`` needs (:class:`WidthKeepingScroll`)."""
    scroll = WidthKeepingScroll() if keep_width else QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setWidget(content)
    scroll.setFrameShape(QScrollArea.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return scroll



class WidthKeepingScroll(QScrollArea):
    """A page scroll area no narrower than its page needs, the scroll bar beside it (the page never scrolls
    sideways, so narrower would cut its right edge off); asked again whenever the page's own minimum changes."""

    def minimumSizeHint(self):  # noqa: N802 (Qt's name)
        hint = super().minimumSizeHint()
        page = self.widget()
        if page is not None:
            hint.setWidth(max(hint.width(), page.minimumSizeHint().width()
                              + self.verticalScrollBar().sizeHint().width()))
        return hint
