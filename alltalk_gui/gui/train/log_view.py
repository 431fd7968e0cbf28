"""The training log: what the run reported and what the child process printed, filterable and copyable.

Entries are kept as (level, text) pairs; the view shows those that pass the level choice and the filter text.
Appending while no filter is set adds one line instead of re-rendering, so a chatty run stays cheap.
"""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

LEVELS = ("all", "warnings and errors", "errors")
MAX_ENTRIES = 20000  # a long run prints a lot; the oldest lines go first


class LogView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.entries: list[tuple[str, str]] = []
        self.text = QPlainTextEdit(readOnly=True)
        self.text.setMaximumBlockCount(MAX_ENTRIES)
        # Long lines (a run's folder, a traceback) wrap: a sideways scroll hid their ends.
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        # At least six lines (three were too few to follow a run), so that the four plots and the log fit a
        # 1024x700 window during a run; the splitter above gives it more wherever there is room.
        self.text.setMinimumHeight(self.text.fontMetrics().lineSpacing() * 6 + 8)
        self.filter = QLineEdit(placeholderText="Filter the log…", clearButtonEnabled=True)
        self.filter.textChanged.connect(self._render)
        self.level = QComboBox()
        self.level.addItems(LEVELS)
        self.level.currentIndexChanged.connect(self._render)
        self.copy_button = QPushButton("Copy")
        self.copy_button.setToolTip("Copy the lines shown to the clipboard")
        self.copy_button.clicked.connect(self.copy)
        bar = QHBoxLayout()
        bar.addWidget(self.filter, 1)
        bar.addWidget(self.level)
        bar.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.text, 1)

    def append(self, text: str, level: str = "info") -> None:
        self.entries.append((level, text))
        if len(self.entries) > MAX_ENTRIES:
            del self.entries[: len(self.entries) - MAX_ENTRIES]
        if self._passes(level, text):
            self.text.appendPlainText(text)

    def clear(self) -> None:
        self.entries.clear()
        self.text.clear()

    def shown_text(self) -> str:
        return self.text.toPlainText()

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.shown_text())

    def _passes(self, level: str, text: str) -> bool:
        choice = self.level.currentIndex()
        if choice == 1 and level not in ("warning", "error"):
            return False
        if choice == 2 and level != "error":
            return False
        needle = self.filter.text().strip().lower()
        return not needle or needle in text.lower()

    def _render(self) -> None:
        self.text.setPlainText("\n".join(t for lvl, t in self.entries if self._passes(lvl, t)))
        self.text.moveCursor(self.text.textCursor().MoveOperation.End)
