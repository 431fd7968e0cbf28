"""The generation settings the checkpoint's engine reads, with the model's defaults one click away. A thin editor
over :class:`alltalk_gui.core.voice.preview.GenerationSettings`.

XTTS v2 samples its GPT: temperature, penalties, top-k, top-p, speed and seed, under "Advanced generation
settings". F5-TTS reads only the sampling steps, speed and seed; its steps (NFE) decide how long a take takes,
minutes on a CPU, so they stay in view beside the check box with their time estimate (:mod:`.nfe_choice`).
"""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import (
    QCheckBox, QDoubleSpinBox, QFrame, QGridLayout, QHBoxLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout, QWidget,
)

from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, Engine, get_engine
from alltalk_gui.core.voice.preview import GenerationSettings
from alltalk_gui.gui.preview.nfe_choice import NfeChoice

# name: (label, minimum, maximum, step, decimals, tooltip); decimals 0 means an integer box.
FIELDS = {
    "temperature": ("Temperature", 0.01, 2.0, 0.05, 2, "Randomness of the voice: lower is steadier and flatter."),
    "length_penalty": ("Length penalty", -5.0, 5.0, 0.1, 2, "Only matters with beam search; XTTS samples."),
    "repetition_penalty": ("Repetition penalty", 1.0, 50.0, 0.5, 1,
                           "Discourages repeated sounds: stutters and long 'uhhh's."),
    "top_k": ("Top-k", 1, 1000, 5, 0, "Sample among this many most likely sounds."),
    "top_p": ("Top-p", 0.01, 1.0, 0.05, 2, "...and among those, the most likely ones holding this probability."),
    "speed": ("Speed", 0.25, 4.0, 0.05, 2, "1.2 speaks 20 % faster, 0.8 slower."),
    "seed": ("Seed", 0, 2**31 - 1, 1, 0, "The same seed gives the same take; A/B uses it for both models."),
}
COLUMNS = 4  # label + box pairs per row


class GenerationPanel(QWidget):
    """A check box that opens the settings; unchecked (collapsed) means the model's defaults are used as they are
    (F5-TTS's sampling steps, always in view, excepted)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.toggle = QCheckBox("Advanced generation settings")
        self.defaults = GenerationSettings()
        self.engine: Engine = get_engine(DEFAULT_ENGINE)
        self.boxes: dict[str, QSpinBox | QDoubleSpinBox] = {}
        self.captions: dict[str, QLabel] = {}
        self.body = QFrame()
        self.body.setFrameShape(QFrame.Shape.StyledPanel)
        self.grid = QGridLayout(self.body)
        for name, (label, low, high, step, decimals, tip) in FIELDS.items():
            box = QSpinBox() if decimals == 0 else QDoubleSpinBox()
            if decimals:
                box.setDecimals(decimals)
            box.setRange(low, high)
            box.setSingleStep(step)
            box.setToolTip(tip)
            box.setMinimumWidth(90)
            self.boxes[name], self.captions[name] = box, QLabel(label)
        self.reset = QPushButton("Reset to the model's defaults")
        self.reset.clicked.connect(lambda: self.set_defaults(self.defaults))
        self.grid.setColumnStretch(2 * COLUMNS, 1)  # boxes keep their size; spare width goes to the right
        self.nfe = NfeChoice()
        header = QHBoxLayout()
        header.addWidget(self.toggle)
        header.addSpacing(24)
        header.addWidget(self.nfe, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(self.body)
        self.toggle.toggled.connect(self.body.setVisible)
        self.body.setVisible(False)
        self._lay_out()
        self.set_defaults(self.defaults)

    def set_engine(self, engine: Engine) -> None:
        """Show the settings ``engine`` reads (``Engine.generation_settings``)."""
        if engine.name == self.engine.name:
            return
        self.engine = engine
        self._lay_out()

    def _lay_out(self) -> None:
        """The engine's fields in reading order, COLUMNS to a row, the reset button after them."""
        for widget in (*self.boxes.values(), *self.captions.values(), self.reset):
            self.grid.removeWidget(widget)
            widget.hide()
        shown = [name for name in FIELDS if name in self.engine.generation_settings]
        for i, name in enumerate(shown):
            row, column = divmod(i, COLUMNS)
            self.grid.addWidget(self.captions[name], row, 2 * column)
            self.grid.addWidget(self.boxes[name], row, 2 * column + 1)
            self.captions[name].show()
            self.boxes[name].show()
        row, column = divmod(len(shown), COLUMNS)
        self.grid.addWidget(self.reset, row, 2 * column, 1, 2)
        self.reset.show()
        self.nfe.setVisible("steps" in self.engine.generation_settings)

    def set_defaults(self, defaults: GenerationSettings) -> None:
        """Show ``defaults`` (the base model's) in every box."""
        self.defaults = defaults
        for name, box in self.boxes.items():
            box.setValue(getattr(defaults, name))
        self.nfe.set_value(defaults.steps)

    def settings(self) -> GenerationSettings:
        """The settings to generate with: the boxes when the panel is on, the model's defaults otherwise; the
        sampling steps as chosen either way."""
        settings = replace(self.defaults, steps=self.nfe.value())
        if not self.toggle.isChecked():
            return settings
        values = {name: (int(box.value()) if isinstance(box, QSpinBox) else round(box.value(), 4))
                  for name, box in self.boxes.items() if name in self.engine.generation_settings}
        return replace(settings, **values)
