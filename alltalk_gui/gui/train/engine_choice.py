"""The Train page's engine choice: XTTS v2 or F5-TTS v1, each with a one-line "when to choose it", and the
chosen engine's caveat for the project's language.

Import and transcript editing are the same for both engines; the engine is chosen here, once per project (the
page remembers it in ``project.json``, where the command line reads it too). The lines beside the buttons are
the facts that decide the choice: languages, whether speaking needs the reference clip's words, the longest
clip, the licence. The caveat is the engine's own (``Engine.languages_note``), e.g. that F5-TTS v1 Base learnt
English and Chinese only.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QButtonGroup, QGridLayout, QLabel, QRadioButton, QWidget

from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, engine_names, get_engine, language_note
from alltalk_gui.gui.common import status_colours

def engine_line(name: str) -> str:
    """The one line shown beside an engine's button: what decides for it, and its longest clip."""
    engine = get_engine(name)
    return f"{engine.summary} · clips up to {engine.max_clip_ms / 1000:.3g} s"


class EngineChoice(QWidget):
    """Emits ``changed`` with the engine's registry name when the user picks another engine."""

    changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.group = QButtonGroup(self)
        self.buttons: dict[str, QRadioButton] = {}
        self.language = ""
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setVerticalSpacing(2)
        grid.setColumnStretch(2, 1)
        grid.addWidget(QLabel("<b>Engine</b>"), 0, 0)  # in the first row: level with the first button
        for row, name in enumerate(engine_names()):
            button = QRadioButton(get_engine(name).title)
            line = QLabel(engine_line(name))
            line.setWordWrap(True)  # normal text colour: in grey it looked disabled
            button.setToolTip(engine_line(name))
            self.group.addButton(button)
            self.buttons[name] = button
            grid.addWidget(button, row, 1)
            grid.addWidget(line, row, 2)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.setTextFormat(Qt.TextFormat.RichText)
        self.note.hide()
        grid.addWidget(self.note, len(self.buttons), 1, 1, 2)
        self.buttons[DEFAULT_ENGINE].setChecked(True)
        self.group.buttonToggled.connect(self._toggled)

    def engine(self) -> str:
        return next((name for name, button in self.buttons.items() if button.isChecked()), DEFAULT_ENGINE)

    def show_engine(self, name: str) -> None:
        """Select ``name`` without emitting ``changed`` (a project opened, a run to resume)."""
        button = self.buttons.get(name, self.buttons[DEFAULT_ENGINE])
        self.group.blockSignals(True)
        button.setChecked(True)
        self.group.blockSignals(False)
        self._update_note()

    def set_language(self, language: str) -> None:
        self.language = language
        self._update_note()

    def _toggled(self, _button, checked: bool) -> None:
        if checked:
            self._update_note()
            self.changed.emit(self.engine())

    def _update_note(self) -> None:
        note = language_note(get_engine(self.engine()), self.language) if self.language else ""
        self.note.setText(status_colours.span(status_colours.WARNING, html.escape(note)))
        self.note.setVisible(bool(note))
