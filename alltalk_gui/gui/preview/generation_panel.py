"""The generation settings of the checkpoint's engine, with the model's defaults one click away. A thin editor over
:class:`alltalk_gui.core.voice.preview.GenerationSettings`, built from the engine's declaration.

The seed is every engine's; the rest are the engine's own options (``Engine.generation_options``: label, sentence,
range, choices), so a new engine's settings appear here with no change to this panel. They sit under "Advanced
generation settings", except an option the engine marks ``in_view``: one that decides how long a take takes
(F5-TTS's sampling steps, minutes on a CPU), which stays beside the check box with the time a take needs on this
computer (:meth:`GenerationPanel.show_estimate`, from ``Engine.generation_estimate``), for each of its usual values.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDoubleSpinBox, QFrame, QGridLayout, QHBoxLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout,
    QWidget,
)

from alltalk_gui.core.engine_api.engine import Engine
from alltalk_gui.core.engine_api.options import Declared, declared
from alltalk_gui.core.voice.preview import GenerationSettings
from alltalk_gui.gui.preview.take_time import duration_words, gpu_present

COLUMNS = 4  # label + box pairs per row
SEED_TIP = "The same seed gives the same take; A/B uses it for both models."

Editor = QSpinBox | QDoubleSpinBox | QComboBox | QCheckBox


class GenerationPanel(QWidget):
    """A check box that opens the settings; unchecked (collapsed) means the model's defaults are used as they are
    (the options kept in view excepted). ``changed`` fires when a value changes."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.toggle = QCheckBox("Advanced generation settings")
        self.engine: Engine | None = None
        self.defaults = GenerationSettings()
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setToolTip(SEED_TIP)
        self.seed.valueChanged.connect(lambda _v: self.changed.emit())
        self.seed_caption = QLabel("Seed")
        self.seed_caption.setToolTip(SEED_TIP)
        self.boxes: dict[str, Editor] = {}   # the chosen engine's options, and the seed
        self.captions: dict[str, QLabel] = {}
        self._built: dict[str, tuple[dict[str, Editor], dict[str, QLabel]]] = {}  # per engine, made once
        self.body = QFrame()
        self.body.setFrameShape(QFrame.Shape.StyledPanel)
        self.grid = QGridLayout(self.body)
        self.grid.setColumnStretch(2 * COLUMNS, 1)  # boxes keep their size; spare width goes to the right
        self.reset = QPushButton("Reset to the model's defaults")
        self.reset.clicked.connect(lambda: self.set_defaults(self.defaults))
        self.header = QHBoxLayout()
        self.header.addWidget(self.toggle)
        self.header.addSpacing(24)
        self.in_view = QHBoxLayout()  # the options that decide a take's time
        self.header.addLayout(self.in_view)
        self.note = QLabel()  # the time a take needs, when the engine can say
        self.note.setWordWrap(True)
        self.header.addWidget(self.note, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.header)
        layout.addWidget(self.body)
        self.toggle.toggled.connect(self.body.setVisible)
        self.body.setVisible(False)
        self._estimates: dict[str, dict[Any, float]] = {}

    # -- engine -----------------------------------------------------------------------------------------------
    def set_engine(self, engine: Engine) -> None:
        """Show the settings ``engine`` declares (made the first time it is shown)."""
        if self.engine is not None and engine.name == self.engine.name:
            return
        for widget in (*self.boxes.values(), *self.captions.values(), self.reset):
            self.grid.removeWidget(widget)
            self.in_view.removeWidget(widget)
            widget.hide()
        self.engine = engine
        if engine.name not in self._built:
            self._built[engine.name] = self._make(declared(engine.generation_options))
        boxes, captions = self._built[engine.name]
        self.boxes, self.captions = {**boxes, "seed": self.seed}, {**captions, "seed": self.seed_caption}
        hidden = [name for name in self.boxes if not self._in_view(name)]
        for i, name in enumerate(hidden):
            row, column = divmod(i, COLUMNS)
            self.grid.addWidget(self.captions[name], row, 2 * column)
            self.grid.addWidget(self.boxes[name], row, 2 * column + 1)
        row, column = divmod(len(hidden), COLUMNS)
        self.grid.addWidget(self.reset, row, 2 * column, 1, 2)
        for name in self.boxes:
            if self._in_view(name):
                self.in_view.addWidget(self.captions[name])
                self.in_view.addWidget(self.boxes[name])
        for widget in (*self.boxes.values(), *self.captions.values(), self.reset):
            widget.show()
        self.note.clear()

    def _in_view(self, name: str) -> bool:
        option = self._option(name)
        return option is not None and option.setting.in_view

    def _option(self, name: str) -> Declared | None:
        options = declared(self.engine.generation_options) if self.engine is not None else []
        return next((o for o in options if o.name == name), None)

    def _make(self, options: list[Declared]) -> tuple[dict[str, Editor], dict[str, QLabel]]:
        boxes: dict[str, Editor] = {}
        captions: dict[str, QLabel] = {}
        for option in options:
            box = _editor(option)
            box.setToolTip(option.setting.help)
            _on_change(box, self.changed.emit)
            caption = QLabel(option.setting.label)
            caption.setToolTip(option.setting.help)
            boxes[option.name], captions[option.name] = box, caption
        return boxes, captions

    # -- values -----------------------------------------------------------------------------------------------
    def set_defaults(self, defaults: GenerationSettings) -> None:
        """Show ``defaults`` (the base model's) in every box."""
        self.defaults = defaults
        values = defaults.engine_options(self.engine).to_dict() if self.engine is not None else {}
        for name, value in values.items():
            _set(self.boxes[name], value)
        self.seed.setValue(defaults.seed)

    def set_value(self, name: str, value: Any) -> None:
        """Show ``value`` for the setting ``name`` (the seed or one of the engine's options)."""
        _set(self.boxes[name], value)

    def values(self) -> dict[str, Any]:
        """What every box holds, by name (the seed and the engine's options), whether the panel is open or not."""
        return {name: _get(box) for name, box in self.boxes.items()}

    def settings(self) -> GenerationSettings:
        """The settings to generate with: the boxes when the panel is on, the model's defaults otherwise; the
        options kept in view as chosen either way."""
        shown = [name for name in self.boxes if self.toggle.isChecked() or self._in_view(name)]
        return self.defaults.with_values({name: _get(self.boxes[name]) for name in shown})

    # -- time per take ----------------------------------------------------------------------------------------
    def show_estimate(self, reference_seconds: float, reference_text: str, text: str) -> None:
        """The time a take needs on the CPU with these settings (each usual value of an option in view is
        labelled with its own), when the engine can say; on a GPU, that it is quick."""
        if self.engine is None:
            return
        timed = any(self._in_view(name) for name in self.boxes)  # the engine shows what decides a take's time
        if gpu_present():
            self.note.setText("On the GPU a take needs seconds whatever the choice." if timed else "")
            return
        settings = self.settings()
        estimate = self.engine.generation_estimate(settings, text, reference_seconds, reference_text)
        for name, box in self.boxes.items():
            if self._in_view(name) and isinstance(box, QComboBox):
                for i in range(box.count()):
                    value = box.itemData(i)
                    cost = self.engine.generation_estimate(settings.with_values({name: value}), text,
                                                           reference_seconds, reference_text)
                    box.setItemText(i, f"{value}  ({duration_words(cost)})" if cost is not None else str(value))
        if estimate is None:
            self.note.setText("On the CPU a take can need minutes." if timed else "")
            return
        self.note.setText(f"{duration_words(estimate)} per take on the CPU (estimated for 2 cores; A/B makes two)")
        self.note.setToolTip("Estimated from the engine's measured cost on a 2-core CPU: a faster CPU takes less, a "
                             "GPU a few seconds.")


def _editor(option: Declared) -> Editor:
    """A box for one option, from its declared type, range and usual values."""
    s = option.setting
    if option.kind is bool:
        return QCheckBox()
    if s.choices:
        box = QComboBox()
        for choice in s.choices:
            box.addItem(str(choice), choice)
        return box
    box = QSpinBox() if option.kind is int else QDoubleSpinBox()
    if option.kind is float:
        box.setDecimals(s.decimals if s.decimals is not None else 2)
    low = s.minimum if s.minimum is not None else 0
    high = s.maximum if s.maximum is not None else (2**31 - 1 if option.kind is int else 1e6)
    box.setRange(option.kind(low), option.kind(high))
    box.setSingleStep(option.kind(s.step) if s.step is not None else (1 if option.kind is int else 0.1))
    box.setMinimumWidth(90)
    return box


def _on_change(box: Editor, slot) -> None:
    if isinstance(box, QCheckBox):
        box.toggled.connect(lambda _c: slot())
    elif isinstance(box, QComboBox):
        box.currentIndexChanged.connect(lambda _i: slot())
    else:
        box.valueChanged.connect(lambda _v: slot())


def _set(box: Editor, value: Any) -> None:
    if isinstance(box, QCheckBox):
        box.setChecked(bool(value))
    elif isinstance(box, QComboBox):
        index = box.findData(value)
        if index < 0:  # a saved value that is not one of the usual choices
            box.addItem(str(value), value)
            index = box.count() - 1
        box.setCurrentIndex(index)
    else:
        box.setValue(value)


def _get(box: Editor) -> Any:
    if isinstance(box, QCheckBox):
        return box.isChecked()
    if isinstance(box, QComboBox):
        return box.currentData()
    if isinstance(box, QSpinBox):
        return int(box.value())
    return round(box.value(), 4)
