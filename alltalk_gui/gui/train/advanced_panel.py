"""The Train page's Advanced panel: the TrainConfig fields that matter, each with a tooltip that says what it
changes and what it costs.

A profile fills the fields and each of them then says "(profile)" beside it; a field the user changes says
"(changed)" and wins over the profile. Only the fields the chosen engine reads are shown (:meth:`set_engine`
hides its ``ignored_settings``, e.g. XTTS v2's frozen conditioning for F5-TTS, F5-TTS's EMA for XTTS v2); a change
the user made to a hidden field is kept for when that engine is chosen again, but not applied. :meth:`AdvancedPanel.apply` turns the panel into a TrainConfig; the page
validates it with :meth:`TrainConfig.validate`, whose message names the field to change, and shows it here.
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

from alltalk_gui.core.training.config import OPTIMIZERS, PRECISIONS, ConfigError, TrainConfig

# (field, label, tooltip). Tooltips say the effect and the memory cost, as the TrainConfig comments do.
FIELDS: list[tuple[str, str, str]] = [
    ("epochs", "Epochs", "Passes over the training clips. More fit the voice more closely and risk over-fitting; "
     "no memory cost."),
    ("lr", "Learning rate", "Learning rate at an effective batch of 8 clips (XTTS v2's 1e-5 is AllTalk's 5e-6 at 4 "
     "clips, per clip; F5-TTS's profiles use 1e-5 for a full fine-tune and 1e-4 for LoRA adapters); "
     "another effective batch B trains at lr x sqrt(B / 8). After a short warm-up it stays constant (XTTS v2's "
     "profiles) or decays to 0 by the last step (F5-TTS's). Higher learns faster and forgets the base model's "
     "quality sooner."),
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
    ("optimizer", "Optimizer", "adamw: 8 bytes of state per parameter (3.5 GB for XTTS v2's GPT, 2.7 GB for "
     "F5-TTS's DiT); adamw8bit / paged_adamw8bit: 2 bytes per parameter, CUDA only (bitsandbytes)."),
    ("lora_rank", "LoRA rank", "0 = full fine-tune. Above 0: train small low-rank adapters only (far less "
     "optimizer and gradient memory, a little less quality)."),
    ("freeze_conditioning", "Freeze conditioning", "Keep the voice-prompt encoder (46 M parameters) as the base "
     "model learned it: saves its gradients, optimizer state and activations (about 1 GiB with AdamW)."),
    ("max_audio_seconds", "Max clip seconds", "Longer clips are left out. A batch is padded to its longest clip, "
     "so activation memory grows with this limit."),
    ("ema_decay", "EMA decay", "F5-TTS: keep an exponential moving average of the weights and export it instead "
     "of the trained weights. 0 = off (the default: F5's own 0.9999 barely moves in a fine-tune of a few hundred "
     "steps, and EMA can hurt early fine-tunes); 0.999 averages over about the last 1,000 steps. Costs one more "
     "fp32 copy of the model (1.3 GB for F5 v1 Base) in GPU memory and in every checkpoint."),
    ("add_missing_characters", "Add missing characters", "F5-TTS: characters of the transcripts that the base "
     "model's vocabulary lacks are added to it, each learning from your clips alone (F5's own fine-tuning does "
     "the same). Off: such characters stop the run before it starts, with the list, so you can decide."),
    ("eval_each_epoch", "Eval each epoch", "Eval loss on the eval clips at each checkpoint that ends an epoch (the "
     "eval split is chosen when the dataset is exported). A little time, no memory."),
    ("checkpoint_every_epochs", "Checkpoint every (epochs)", "The epoch-end eval and checkpoint come after every "
     "N-th epoch and after the last. 1 = every epoch (XTTS v2's profiles); F5-TTS's profiles use 10 for their 100 "
     "short epochs, because a full F5 checkpoint is several GB to write. No memory cost."),
    ("keep_last", "Checkpoints kept", "How many recent checkpoints stay on disk (the best one by eval loss is kept "
     "besides). Each is several GB with its optimizer state (about 5 GB for XTTS v2's full fine-tune): fewer need "
     "less disk space; Resume always continues from the newest. No memory cost."),
    ("judge", "Judge each checkpoint", "The base model and every checkpoint speak the project's judging sentences "
     "and are scored for intelligibility (WER), likeness to the speaker and naturalness (MOS); the best checkpoint "
     "is chosen by those scores (docs/judge.md). About half a minute per checkpoint on a GPU, minutes on a CPU, "
     "and 2-4 GB of GPU memory beside training while it runs (off under Low on cards under 8 GB). Its choice is "
     "kept besides the checkpoints above."),
]
CHOICES = {"mixed_precision": PRECISIONS, "optimizer": OPTIMIZERS}
AT_LEAST_ONE = ("checkpoint_every_epochs", "keep_last")  # whole-number fields whose 0 means nothing
# Float fields' (minimum, maximum, decimals, step); others take 0-600 in steps of 1 with one decimal.
FLOAT_RANGES = {"ema_decay": (0.0, 0.9999, 4, 0.001)}
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
        self.ignored: set[str] = set()  # fields the chosen engine does not read: hidden, never applied
        self._loading = False
        defaults = TrainConfig()
        names = {f.name for f in dataclasses.fields(TrainConfig)}
        self.body = QWidget()
        self.form = form = QFormLayout(self.body)
        form.setContentsMargins(4, 0, 4, 0)
        for name, label, tip in FIELDS:
            if name not in names:
                continue  # a field this version of the core does not have (e.g. LoRA before it landed)
            editor = self._editor(name, getattr(defaults, name))
            editor.setToolTip(tip)
            note = QLabel()
            note.setStyleSheet("color: palette(mid);")
            row = QHBoxLayout()
            row.addWidget(editor)
            row.addWidget(note, 1)
            caption = QLabel(label)
            caption.setToolTip(tip)
            form.addRow(caption, row)
            self.editors[name], self.notes[name], self.captions[name] = editor, note, caption
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

    def set_engine(self, ignored_settings: tuple[str, ...] | set[str]) -> None:
        """Show only the fields the chosen engine reads (hide its ``Engine.ignored_settings``)."""
        self.ignored = set(ignored_settings)
        for name, caption in self.captions.items():
            self.form.setRowVisible(caption, name not in self.ignored)

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
        low, high, decimals, step = FLOAT_RANGES.get(name, (0.0, 600.0, 1, 1.0))
        spin = QDoubleSpinBox()
        spin.setRange(low, high)
        spin.setDecimals(decimals)
        spin.setSingleStep(step)
        spin.valueChanged.connect(lambda _v, n=name: self._edited(n))
        return spin

    # -- values ---------------------------------------------------------------------------------------------
    def _set(self, name: str, value: Any) -> None:
        editor = self.editors[name]
        if isinstance(editor, QComboBox):
            editor.setCurrentIndex(max(0, editor.findData(str(value))))
        elif isinstance(editor, QCheckBox):
            editor.setChecked(bool(value))
        elif isinstance(editor, QLineEdit):
            editor.setText(f"{value:g}")
        else:
            editor.setValue(value)

    def _get(self, name: str) -> Any:
        editor = self.editors[name]
        if isinstance(editor, QComboBox):
            return editor.currentData()
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
                self._set(name, self.user_values.get(name, getattr(config, name)))
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
        """The values the user changed, by field name (those the chosen engine reads).

        Raises:
            ConfigError: a value cannot be read (the learning rate field holds no number).
        """
        return {name: self._get(name) for name in self.user_values if name not in self.ignored}

    def apply(self, config: TrainConfig) -> TrainConfig:
        """``config`` with the user's changes on top.

        Raises:
            ConfigError: a value cannot be read.
        """
        return dataclasses.replace(config, **self.overrides())

    def show_error(self, message: str | None) -> None:
        self.error.setText(message or "")
        self.error.setVisible(bool(message))
        self._fold(self.isChecked())
        if message and not self.isChecked():
            self.setChecked(True)  # the message names a field: show it
