"""The Train page's Advanced panel: the TrainConfig fields that matter and the chosen engine's own options, each
with a tooltip that says what it changes and what it costs.

A profile fills the fields and each of them then says "(profile)" beside it; a field the user changes says
"(changed)" and wins over the profile. Below the common fields come the chosen engine's options, built from its
declaration (``Engine.train_options``: label, sentence, range), so an engine's settings appear here without a
change to this panel; :meth:`set_engine` swaps them. A change the user made to another engine's option is kept for
when that engine is chosen again, but not applied. :meth:`AdvancedPanel.apply` turns the panel into a TrainConfig
(by name, through ``TrainConfig.with_values``); the page validates it with :meth:`TrainConfig.validate`, whose
message names the field to change, and shows it here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from alltalk_gui.core.engine_api.engine import Engine
from alltalk_gui.core.engine_api.options import Declared, declared
from alltalk_gui.core.training.config import OPTIMIZERS, PRECISIONS, ConfigError, TrainConfig

# (field, label, tooltip). Tooltips say the effect and the memory cost, as the TrainConfig comments do.
FIELDS: list[tuple[str, str, str]] = [
    ("epochs", "Epochs", "Passes over the training clips. More fit the voice more closely and risk over-fitting; "
     "no memory cost."),
    ("lr", "Learning rate", "Learning rate at an effective batch of 8 clips (the profiles use about 1e-5 for a full "
     "fine-tune and 1e-4 for LoRA adapters); another effective batch B trains at lr x sqrt(B / 8). After a short "
     "warm-up it stays constant or decays to 0 by the last step, as the engine's profiles choose. Higher learns "
     "faster and forgets the base model's quality sooner."),
    ("batch_size", "Micro-batch", "Clips per step on each device. Activation memory grows with it: the main "
     "memory knob."),
    ("grad_accum_steps", "Accumulation", "Micro-batches summed before each optimizer step. Raises the effective "
     "batch at no memory cost, proportionally more time per step."),
    ("auto_micro_batch", "Auto micro-batch", "Before training, find the largest micro-batch that fits in 90 % of "
     "the free GPU memory and accumulate the rest, keeping the effective batch (Auto does this on a GPU)."),
    ("mixed_precision", "Number precision", "full (fp32): exact, most memory; bf16: half the activation memory on "
     "Ampere+ GPUs and modern CPUs; fp16: the same for older GPUs (CUDA only)."),
    ("gradient_checkpointing", "Activation checkpointing", "Recompute activations in the backward pass: saves "
     "most activation memory for about 30 % more time."),
    ("optimizer", "Optimizer", "adamw: 8 bytes of state per parameter (3.5 GB for a model of 440 M parameters); "
     "adamw8bit / paged_adamw8bit: 2 bytes per parameter, CUDA only (bitsandbytes)."),
    ("lora_rank", "LoRA rank", "0 = full fine-tune. Above 0: train small low-rank adapters only (far less "
     "optimizer and gradient memory, a little less quality)."),
    ("max_audio_seconds", "Max clip seconds", "Longer clips are left out. A batch is padded to its longest clip, "
     "so activation memory grows with this limit."),
    ("eval_each_epoch", "Eval each epoch", "Eval loss on the eval clips at each checkpoint that ends an epoch (the "
     "eval split is chosen when the dataset is exported). A little time, no memory."),
    ("checkpoint_every_epochs", "Checkpoint every (epochs)", "The epoch-end eval and checkpoint come after every "
     "N-th epoch and after the last. 1 = every epoch; profiles of many short epochs use 10, because a full "
     "checkpoint of a large model takes a while to write. No memory cost."),
    ("keep_last", "Checkpoints kept", "How many recent checkpoints stay on disk (the best one by eval loss is kept "
     "besides). Each is several GB with its optimizer state (about 5 GB for a full fine-tune of 440 M "
     "parameters): fewer need less disk space; Resume always continues from the newest. No memory cost."),
    ("judge", "Judge each checkpoint", "The base model and every checkpoint speak the project's judging sentences "
     "and are scored for intelligibility (WER), likeness to the speaker and naturalness (MOS); the best checkpoint "
     "is chosen by those scores (docs/judge.md). About half a minute per checkpoint on a GPU, minutes on a CPU, "
     "and 2-4 GB of GPU memory beside training while it runs (off under Low on cards under 8 GB). Its choice is "
     "kept besides the checkpoints above."),
]
CHOICES = {"mixed_precision": PRECISIONS, "optimizer": OPTIMIZERS}
AT_LEAST_ONE = ("checkpoint_every_epochs", "keep_last")  # whole-number fields whose 0 means nothing
# Float fields take 0-600 in steps of 1 with one decimal; an engine's options say their own ranges.
# Words for values that are jargon on their own ("Precision: no").
CHOICE_LABELS = {"mixed_precision": {"no": "full (fp32)", "bf16": "bf16 (half memory)",
                                     "fp16": "fp16 (half memory, older GPUs)"}}


class AdvancedPanel(QGroupBox):
    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Advanced settings", parent)
        self.setCheckable(True)
        self.setChecked(False)
        self.editors: dict[str, QWidget] = {}
        self.notes: dict[str, QLabel] = {}
        self.captions: dict[str, QLabel] = {}
        self.profile_values: dict[str, Any] = {}
        self.user_values: dict[str, Any] = {}
        self.engine: Engine | None = None
        # Each engine's option rows, built when it is first chosen: name -> (caption, editor, note).
        self._option_rows: dict[str, dict[str, tuple[QLabel, QWidget, QLabel]]] = {}
        self._kept: dict[str, dict[str, Any]] = {}  # an engine's option changes while another engine is chosen
        self._loading = False
        defaults = TrainConfig()
        names = {f.name for f in dataclasses.fields(TrainConfig)}
        self.body = QWidget()
        self.form = form = QFormLayout(self.body)
        form.setContentsMargins(4, 0, 4, 0)
        for name, label, tip in FIELDS:
            if name not in names:
                continue  # a field this version of the core does not have (e.g. LoRA before it landed)
            self._add_row(name, label, tip, self._editor(name, getattr(defaults, name)))
        self.effective = QLabel()
        self.effective.setToolTip("Clips per optimizer step: micro-batch × accumulation × GPUs")
        form.addRow("Effective batch", self.effective)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c62828;")
        self.error.hide()
        layout = QFormLayout(self)
        layout.addRow(self.body)
        layout.addRow(self.error)
        self.toggled.connect(self.body.setVisible)
        self.toggled.connect(self._fold)
        self.body.setVisible(False)
        self._fold(False)
        self.processes = 1
        self._update_effective()

    def _add_row(self, name: str, label: str, tip: str, editor: QWidget, at: int = -1) -> tuple[QLabel, QWidget,
                                                                                               QLabel]:
        editor.setToolTip(tip)
        note = QLabel()
        note.setStyleSheet("color: palette(mid);")
        row = QHBoxLayout()
        row.addWidget(editor)
        row.addWidget(note, 1)
        caption = QLabel(label)
        caption.setToolTip(tip)
        self.form.insertRow(at, caption, row)
        self.editors[name], self.notes[name], self.captions[name] = editor, note, caption
        return caption, editor, note

    def set_engine(self, engine: Engine) -> None:
        """Show ``engine``'s own options below the common fields (built from its declaration the first time);
        the previous engine's rows are hidden and the user's changes to them kept for its return."""
        if self.engine is not None:
            if engine.name == self.engine.name:
                return
            rows = self._option_rows[self.engine.name]
            self._kept[self.engine.name] = {n: self.user_values.pop(n) for n in rows if n in self.user_values}
            for name, (caption, _editor, _note) in rows.items():
                self.form.setRowVisible(caption, False)
                del self.editors[name], self.notes[name], self.captions[name]
        self.engine = engine
        if engine.name not in self._option_rows:
            at = self.form.getWidgetPosition(self.effective)[0]  # before "Effective batch"
            self._option_rows[engine.name] = {
                option.name: self._add_row(option.name, option.setting.label, option.setting.help,
                                           self._option_editor(option), at + i)
                for i, option in enumerate(declared(engine.train_options))}
        for name, (caption, editor, note) in self._option_rows[engine.name].items():
            self.editors[name], self.notes[name], self.captions[name] = editor, note, caption
            self.form.setRowVisible(caption, True)
        self.user_values.update(self._kept.pop(engine.name, {}))
        self._update_notes()

    def _option_editor(self, option: Declared) -> QWidget:
        """An editor for one of an engine's options, from its declared type and range."""
        s, name = option.setting, option.name
        if option.kind is bool:
            check = QCheckBox()
            check.toggled.connect(lambda _c, n=name: self._edited(n))
            return check
        if option.kind is str:
            box = QComboBox()
            box.setEditable(not s.choices)
            for choice in s.choices:
                box.addItem(str(choice), choice)
            box.currentTextChanged.connect(lambda _t, n=name: self._edited(n))
            return box
        spin = QSpinBox() if option.kind is int else QDoubleSpinBox()
        if option.kind is float:
            spin.setDecimals(s.decimals if s.decimals is not None else 2)
        low = s.minimum if s.minimum is not None else (0 if option.kind is int else 0.0)
        high = s.maximum if s.maximum is not None else 100000
        spin.setRange(option.kind(low), option.kind(high))
        spin.setSingleStep(option.kind(s.step) if s.step is not None else (1 if option.kind is int else 0.1))
        spin.valueChanged.connect(lambda _v, n=name: self._edited(n))
        return spin

    def _fold(self, shown: bool) -> None:
        """Closed, the panel is its title only: no empty framed box under it."""
        opened = shown or self.error.isVisible()
        margin = 11 if opened else 0
        self.layout().setContentsMargins(margin, margin, margin, margin)
        self.setFlat(not shown)
        self.setMaximumHeight(16777215 if opened else self.fontMetrics().height() + 6)  # cuts the empty frame

    def _editor(self, name: str, value: Any) -> QWidget:
        if name in CHOICES:
            box = QComboBox()
            for choice in CHOICES[name]:
                box.addItem(CHOICE_LABELS.get(name, {}).get(choice, choice), choice)
            box.currentTextChanged.connect(lambda _t, n=name: self._edited(n))
            return box
        if isinstance(value, bool):
            check = QCheckBox()
            check.toggled.connect(lambda _c, n=name: self._edited(n))
            return check
        if name == "lr":
            line = QLineEdit()
            line.setMaximumWidth(120)
            line.textEdited.connect(lambda _t, n=name: self._edited(n))
            return line
        if isinstance(value, int):
            spin = QSpinBox()
            spin.setRange(1 if name in AT_LEAST_ONE else 0, 100000)
            spin.valueChanged.connect(lambda _v, n=name: self._edited(n))
            return spin
        spin = QDoubleSpinBox()
        spin.setRange(0.0, 600.0)
        spin.setDecimals(1)
        spin.setSingleStep(1.0)
        spin.valueChanged.connect(lambda _v, n=name: self._edited(n))
        return spin

    # -- values ---------------------------------------------------------------------------------------------
    def _set(self, name: str, value: Any) -> None:
        editor = self.editors[name]
        if isinstance(editor, QComboBox):
            index = editor.findData(value)
            if index < 0 and editor.isEditable():
                editor.setEditText(str(value))
            else:
                editor.setCurrentIndex(max(0, index))
        elif isinstance(editor, QCheckBox):
            editor.setChecked(bool(value))
        elif isinstance(editor, QLineEdit):
            editor.setText(f"{value:g}")
        else:
            editor.setValue(value)

    def _get(self, name: str) -> Any:
        editor = self.editors[name]
        if isinstance(editor, QComboBox):
            return editor.currentText() if editor.isEditable() else editor.currentData()
        if isinstance(editor, QCheckBox):
            return editor.isChecked()
        if isinstance(editor, QLineEdit):
            try:
                return float(editor.text().strip())
            except ValueError:
                raise ConfigError(f"lr must be a number such as 5e-6 (it is '{editor.text()}').") from None
        return editor.value()

    def show_config(self, config: TrainConfig, profile_settings: dict[str, Any]) -> None:
        """Show ``config`` (the profile applied, the user's changes on top); mark where each value comes from."""
        self._loading = True
        try:
            self.profile_values = dict(profile_settings)
            for name in self.editors:
                self._set(name, self.user_values.get(name, config.value(name)))
        finally:
            self._loading = False
        self._update_notes()
        self._update_effective()

    def _edited(self, name: str) -> None:
        if self._loading:
            return
        try:
            self.user_values[name] = self._get(name)
        except ConfigError:
            self.user_values[name] = None  # unreadable for now; apply() explains it
        self._update_notes()
        self._update_effective()
        self.changed.emit()

    def _update_notes(self) -> None:
        for name, note in self.notes.items():
            if name in self.user_values:
                note.setText("(changed)")
            elif name in self.profile_values:
                note.setText("(profile)")
            else:
                note.setText("")

    def _update_effective(self) -> None:
        try:
            batch, accum = self._get("batch_size"), self._get("grad_accum_steps")
        except (ConfigError, KeyError):
            return
        gpus = f" × {self.processes} GPUs" if self.processes > 1 else ""
        self.effective.setText(f"{batch * accum * self.processes} clips per step ({batch} × {accum}{gpus})")

    def change(self, name: str, value: Any) -> None:
        """Set a field as if the user had (the Train page's "keep fewer checkpoints" answer)."""
        self._set(name, value)
        self._edited(name)

    def reset_changes(self) -> None:
        self.user_values.clear()
        self._update_notes()

    def overrides(self) -> dict[str, Any]:
        """The values the user changed, by name: common fields and the chosen engine's options.

        Raises:
            ConfigError: a value cannot be read (the learning rate field holds no number).
        """
        return {name: self._get(name) for name in self.user_values if name in self.editors}

    def apply(self, config: TrainConfig) -> TrainConfig:
        """``config`` with the user's changes on top.

        Raises:
            ConfigError: a value cannot be read.
        """
        return config.with_values(self.overrides())

    def show_error(self, message: str | None) -> None:
        self.error.setText(message or "")
        self.error.setVisible(bool(message))
        self._fold(self.isChecked())
        if message and not self.isChecked():
            self.setChecked(True)  # the message names a field: show it
