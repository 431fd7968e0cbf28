"""The export form: format, model name, output folder, precision and extra files, and the Export button.

The formats are those of the checkpoint's engine (:meth:`ExportPanel.set_engine`): XTTS v2 exports AllTalk's
``models/xtts/<name>`` or a coqui-tts folder and can add the files to keep training (dvae.pth, mel_stats.pth);
F5-TTS exports AllTalk's ``models/f5tts/<name>`` (the name made one AllTalk lists) or a plain F5-TTS folder.
Half precision applies to both. The panel only collects choices (:meth:`ExportPanel.options`); the page runs
the export in a worker and reports back through :meth:`ExportPanel.show_result` / :meth:`show_error`."""

from __future__ import annotations

from pathlib import Path

import re

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFileDialog, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QProgressBar,
    QPushButton, QWidget,
)

from alltalk_gui.core.engine_api.engine import DEFAULT_ENGINE, Engine, get_engine
from alltalk_gui.core.voice.export import ExportOptions, ExportResult
from alltalk_gui.gui import settings

# The engines whose export can add the base model's training files (ExportOptions.training_files), and what
# the check box says for them.
TRAINING_FILES = {"xtts": "Add dvae.pth and mel_stats.pth (to train on elsewhere)"}


class ExportPanel(QGroupBox):
    """``export_requested`` fires when the user clicks Export with an output folder chosen."""

    export_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Export", parent)
        self.engine: Engine | None = None
        self.format = QComboBox()
        self.format.currentIndexChanged.connect(self._update_training_files)
        self.name = QLineEdit()
        self.name.setPlaceholderText("folder name")
        self.folder = QLineEdit()
        self.folder.textChanged.connect(self._update_button)
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._choose_folder)
        self.half = QCheckBox("Half precision")
        self.half.setToolTip("Store the weights in 16-bit: half the size, the same voice")
        self.training_files = QCheckBox()
        self.overwrite = QCheckBox("Replace a folder of that name")
        self.overwrite.setToolTip("Replace an existing export folder of the same name (else Export refuses)")
        self.button = QPushButton("Export")
        self.button.clicked.connect(self.export_requested)
        self.progress = QProgressBar()
        self.progress.hide()
        self.result = QLabel()
        self.result.setWordWrap(True)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        grid = QGridLayout(self)
        grid.addWidget(QLabel("Format"), 0, 0)
        grid.addWidget(self.format, 0, 1)
        grid.addWidget(QLabel("Name"), 0, 2)
        grid.addWidget(self.name, 0, 3)
        grid.addWidget(QLabel("Into"), 1, 0)
        into = QHBoxLayout()
        into.addWidget(self.folder, 1)
        into.addWidget(browse)
        grid.addLayout(into, 1, 1, 1, 3)
        # The choices in one row, the button beside the progress: the page fits a 1024x600 screen.
        choices = QHBoxLayout()
        for box in (self.half, self.overwrite, self.training_files):
            choices.addWidget(box)
        choices.addStretch(1)
        grid.addLayout(choices, 2, 1, 1, 3)
        buttons = QHBoxLayout()
        buttons.addWidget(self.button)
        buttons.addWidget(self.progress, 1)
        grid.addLayout(buttons, 3, 0, 1, 4)
        grid.addWidget(self.result, 4, 0, 1, 4)
        grid.setColumnStretch(1, 1)
        grid.setColumnStretch(3, 1)
        self.folder.setText(settings.last_folder("export") if settings.settings().contains("folders/export") else "")
        self.set_engine(get_engine(DEFAULT_ENGINE))
        self._update_button()

    def set_engine(self, engine: Engine) -> None:
        """Offer ``engine``'s formats (the checkpoint's engine); the chosen format stays when it has it."""
        if self.engine is not None and engine.name == self.engine.name:
            return
        self.engine = engine
        current = self.format.currentData()
        self.format.blockSignals(True)
        self.format.clear()
        for key in engine.export_formats:
            self.format.addItem(engine.export_format_titles.get(key, key), key)
        self.format.setCurrentIndex(max(0, self.format.findData(current)))
        self.format.blockSignals(False)
        alltalk = re.search(r"models/\w+", engine.export_format_titles.get("alltalk", ""))
        self.folder.setPlaceholderText(f"e.g. …/alltalk_tts/{alltalk.group(0)}" if alltalk else "the folder to "
                                       "export into")
        self.training_files.setText(TRAINING_FILES.get(engine.name, ""))
        self.training_files.setVisible(engine.name in TRAINING_FILES)
        self._update_training_files()

    def set_default_name(self, name: str) -> None:
        if not self.name.text():
            self.name.setText(name)

    def options(self, references: list[Path]) -> ExportOptions:
        return ExportOptions(format=self.format.currentData(), name=self.name.text().strip(),
                             half=self.half.isChecked(),
                             training_files=self.engine.name in TRAINING_FILES and self.training_files.isChecked(),
                             references=list(references), overwrite=self.overwrite.isChecked())

    def out_dir(self) -> Path:
        return Path(self.folder.text().strip()).expanduser()

    def set_busy(self, busy: bool) -> None:
        self.button.setEnabled(not busy and bool(self.folder.text().strip()))
        self.progress.setVisible(busy)
        if busy:
            self.progress.setRange(0, 100)
            self.progress.setValue(0)
            self.result.clear()

    def show_progress(self, done: int, total: int, what: str) -> None:
        self.progress.setValue(done)
        self.progress.setFormat(f"{what} (%p%)")

    def show_result(self, result: ExportResult) -> None:
        notes = "".join(f"<br><span style='color:#b26a00'>{w}</span>" for w in result.warnings)
        self.result.setText(f"<span style='color:#2e7d32'>Exported to <b>{result.folder}</b></span> "
                            f"(weights {result.model_bytes / 1e6:.1f} MB, {len(result.files)} files){notes}")

    def show_error(self, message: str) -> None:
        self.result.setText(f"<span style='color:#c62828'>{message}</span>")

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export into which folder?", self.folder.text() or
                                                  settings.last_folder("export"))
        if folder:
            self.folder.setText(folder)
            settings.set_last_folder("export", folder)

    def _update_training_files(self) -> None:
        # AllTalk lists an XTTS folder only when dvae.pth and mel_stats.pth are in it: always included there.
        alltalk = self.format.currentData() == "alltalk"
        self.training_files.setEnabled(not alltalk)
        if alltalk:
            self.training_files.setChecked(True)

    def _update_button(self) -> None:
        self.button.setEnabled(bool(self.folder.text().strip()))
