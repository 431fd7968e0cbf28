"""A word-wrapped label whose minimum height is what its text needs at its width.

A layout gives a wrapped label the height its text needs and takes it from the neighbours, also below their
minimum: on the Train page a three-line summary and a banner squeezed the plots to 80 px, the legends over the
axes. With the label's real height as its minimum, the page's minimum grows instead, and a scrolling page scrolls.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel


class FittedLabel(QLabel):
    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        super().setText(text)
        self._fit()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        needed = self.heightForWidth(self.width()) if self.wordWrap() and self.text() else -1
        if needed > 0 and needed != self.minimumHeight():
            self.setMinimumHeight(needed)
        elif needed <= 0 and self.minimumHeight():
            self.setMinimumHeight(0)
