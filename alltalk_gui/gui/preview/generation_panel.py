"""The advanced generation settings: temperature, penalties, top-k, top-p, speed and seed, with the model's
defaults one click away. A thin editor over :class:`alltalk_gui.core.voice.preview.GenerationSettings`."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import (
    QCheckBox, QDoubleSpinBox, QFrame, QGridLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout, QWidget,
)

from alltalk_gui.core.voice.preview import GenerationSettings

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
    """A check box that opens the settings; unchecked (collapsed) means the model's defaults are used as they are."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.toggle = QCheckBox("Advanced generation settings")
        self.defaults = GenerationSettings()
        self.boxes: dict[str, QSpinBox | QDoubleSpinBox] = {}
        self.body = QFrame()
        self.body.setFrameShape(QFrame.Shape.StyledPanel)
        grid = QGridLayout(self.body)
        for i, (name, (label, low, high, step, decimals, tip)) in enumerate(FIELDS.items()):
            box = QSpinBox() if decimals == 0 else QDoubleSpinBox()
            if decimals:
                box.setDecimals(decimals)
            box.setRange(low, high)
            box.setSingleStep(step)
            box.setToolTip(tip)
            box.setMinimumWidth(90)
            self.boxes[name] = box
            row, column = divmod(i, COLUMNS)
            grid.addWidget(QLabel(label), row, 2 * column)
            grid.addWidget(box, row, 2 * column + 1)
        reset = QPushButton("Reset to the model's defaults")
        reset.clicked.connect(lambda: self.set_defaults(self.defaults))
        grid.addWidget(reset, (len(FIELDS) - 1) // COLUMNS, 2 * COLUMNS - 1, 1, 2)
        grid.setColumnStretch(2 * COLUMNS, 1)  # boxes keep their size; spare width goes to the right
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.toggle)
        layout.addWidget(self.body)
        self.toggle.toggled.connect(self.body.setVisible)
        self.body.setVisible(False)
        self.set_defaults(self.defaults)

    def set_defaults(self, defaults: GenerationSettings) -> None:
        """Show ``defaults`` (the base model's) in every box."""
        self.defaults = defaults
        for name, box in self.boxes.items():
            box.setValue(getattr(defaults, name))

    def settings(self) -> GenerationSettings:
        """The settings to generate with: the boxes when the panel is on, the model's defaults otherwise."""
        if not self.toggle.isChecked():
            return self.defaults
        values = {name: (int(box.value()) if isinstance(box, QSpinBox) else round(box.value(), 4))
                  for name, box in self.boxes.items()}
        return replace(self.defaults, **values)
