"""Shown when no project is open: what the app does, New / Open, and recent projects."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget

from alltalk_gui.gui import settings
from alltalk_gui.gui.common.wording import engine_titles, in_words

def introduction() -> str:
    """What the app does, naming every engine this install has (the walk found XTTS v2 alone named)."""
    engines = in_words(engine_titles())
    return f"""
<h1>AllTalk GUI</h1>
<p>Turn 3 to 10 minutes of someone's recorded voice into a fine-tuned voice model: {engines}.</p>
<ol>
<li><b>Import</b> the recordings; each is checked for clipping, noise and silence.</li>
<li><b>Transcribe &amp; edit</b>: Whisper writes down what is said and cuts it into clips you can correct.</li>
<li><b>Train</b> {engines} with a memory profile that fits your graphics card.</li>
<li><b>Preview &amp; export</b> the voice for AllTalk, or in the engine's own format.</li>
</ol>
"""


class WelcomePage(QWidget):
    new_requested = Signal()
    open_requested = Signal()
    open_path = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        intro = QLabel(introduction())
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.RichText)
        new_button = QPushButton("New voice project…")
        new_button.setDefault(True)
        open_button = QPushButton("Open project…")
        new_button.clicked.connect(self.new_requested)
        open_button.clicked.connect(self.open_requested)
        buttons = QHBoxLayout()
        buttons.addWidget(new_button)
        buttons.addWidget(open_button)
        buttons.addStretch(1)

        self.recent_label = QLabel("<b>Recent projects</b>")
        self.recent = QListWidget()
        self.recent.itemActivated.connect(lambda item: self.open_path.emit(item.data(Qt.ItemDataRole.UserRole)))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(32, 24, 32, 24)
        layout.addWidget(intro)
        layout.addLayout(buttons)
        layout.addSpacing(12)
        layout.addWidget(self.recent_label)
        layout.addWidget(self.recent, 1)
        # Keeps intro and buttons at the top when there are no recent projects to fill the page.
        self.filler = QWidget()
        layout.addWidget(self.filler, 1)
        self.refresh()

    def refresh(self) -> None:
        self.recent.clear()
        for folder in settings.recent_projects():
            item = QListWidgetItem(f"{Path(folder).name}    —    {folder}")
            item.setData(Qt.ItemDataRole.UserRole, folder)
            self.recent.addItem(item)
        has_recent = self.recent.count() > 0
        self.recent_label.setVisible(has_recent)
        self.recent.setVisible(has_recent)
        self.filler.setVisible(not has_recent)
