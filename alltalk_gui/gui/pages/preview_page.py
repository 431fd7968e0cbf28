"""Step 4, Preview & Export: hear the new voice, compare it with the base model, export it.

Pick a checkpoint (latest, best or any), the reference clips (chosen from the dataset; changeable), language
and sentence; Generate speaks it with the fine-tuned checkpoint, Compare also with the base model and the same
seed. Generation runs in a worker thread with progress; each result is a row with play buttons, waveforms and
Whisper's word error rate, saved in the project's ``previews/``. The export form below writes the AllTalk or
coqui-tts model folder, also in a worker.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QGridLayout, QHBoxLayout, QLabel, QProgressBar, QPushButton, QScrollArea, QVBoxLayout,
    QWidget,
)

from alltalk_gui.core.checkpoints import CheckpointError, CheckpointInfo, list_checkpoints, resolve_checkpoint
from alltalk_gui.core.preview import GenerationSettings, PreviewResult, default_sentences
from alltalk_gui.core.project import VoiceProject
from alltalk_gui.core.references import candidate_references
from alltalk_gui.gui import settings
from alltalk_gui.gui.preview_worker import PreviewRequest, PreviewSession, export_worker, preview_worker
from alltalk_gui.gui.widgets.ab_row import AbRow
from alltalk_gui.gui.widgets.audio_player import AudioPlayer
from alltalk_gui.gui.widgets.export_panel import ExportPanel
from alltalk_gui.gui.widgets.generation_panel import GenerationPanel
from alltalk_gui.gui.workers import Worker

LANGUAGES = ["en", "de", "fr", "es", "it", "pt", "pl", "tr", "ru", "nl", "cs", "ar", "zh-cn", "ja", "hu", "ko", "hi"]
REFERENCE_COUNT = 3


def error_text(traceback_text: str) -> str:
    """The message of the exception at the end of a worker's traceback, without the module path."""
    last = next((line for line in reversed(traceback_text.strip().splitlines()) if line.strip()), "")
    kind, sep, message = last.partition(": ")
    return message if sep and kind.rsplit(".", 1)[-1].endswith("Error") else last


class PreviewPage(QWidget):
    status_message = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project: VoiceProject | None = None
        self.checkpoints: list[CheckpointInfo] = []
        self.references: list[Path] = []
        self.worker: Worker | None = None
        self.export_job: Worker | None = None
        self.session = PreviewSession()
        self.whisper_model: str | None = None  # None: the transcription step's default model, when on disk
        self.rows: list[AbRow] = []
        self.player = AudioPlayer(self)
        self.player.playing_changed.connect(lambda path: [row.update_playing(path) for row in self.rows])
        self.player.error.connect(self.status_message)
        self._build()

    # -- layout ---------------------------------------------------------------------------------------------
    def _build(self) -> None:
        self.checkpoint_box = QComboBox()
        self.checkpoint_box.currentIndexChanged.connect(self._checkpoint_changed)
        refresh = QPushButton("Refresh")
        refresh.setToolTip("Look for new checkpoints (training writes them as it goes)")
        refresh.clicked.connect(self.refresh)
        self.reference_label = QLabel()
        self.reference_label.setWordWrap(True)
        choose = QPushButton("Choose…")
        choose.clicked.connect(self._choose_references)
        auto = QPushButton("Automatic")
        auto.setToolTip("The cleanest 3-10 s clips of the dataset")
        auto.clicked.connect(self._auto_references)
        self.language_box = QComboBox()
        self.language_box.setEditable(True)
        self.language_box.addItems(LANGUAGES)
        self.language_box.currentTextChanged.connect(self._fill_sentences)
        self.text_box = QComboBox()
        self.text_box.setEditable(True)
        self.text_box.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.text_box.lineEdit().setPlaceholderText("Type a sentence, or pick one")

        grid = QGridLayout()
        grid.addWidget(QLabel("Checkpoint"), 0, 0)
        grid.addWidget(self.checkpoint_box, 0, 1)
        grid.addWidget(refresh, 0, 2)
        grid.addWidget(QLabel("References"), 1, 0)
        grid.addWidget(self.reference_label, 1, 1)
        refs = QHBoxLayout()
        refs.addWidget(choose)
        refs.addWidget(auto)
        grid.addLayout(refs, 1, 2)
        grid.addWidget(QLabel("Language"), 2, 0)
        grid.addWidget(self.language_box, 2, 1, Qt.AlignmentFlag.AlignLeft)
        grid.addWidget(QLabel("Text"), 3, 0)
        grid.addWidget(self.text_box, 3, 1, 1, 2)
        grid.setColumnStretch(1, 1)

        self.generation = GenerationPanel()
        self.generate_button = QPushButton("Generate")
        self.generate_button.setToolTip("Speak the text with the chosen checkpoint")
        self.generate_button.clicked.connect(lambda: self.generate(ab=False))
        self.compare_button = QPushButton("Compare with base (A/B)")
        self.compare_button.setToolTip("Speak it with the base model and the checkpoint, same references and seed")
        self.compare_button.clicked.connect(lambda: self.generate(ab=True))
        self.progress = QProgressBar()
        self.progress.hide()
        self.message = QLabel()
        self.message.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.generate_button)
        buttons.addWidget(self.compare_button)
        buttons.addWidget(self.progress, 1)

        self.rows_box = QWidget()
        self.rows_layout = QVBoxLayout(self.rows_box)
        self.rows_layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.rows_box)
        self.export_panel = ExportPanel()
        self.export_panel.export_requested.connect(self.export)

        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<h2>Preview &amp; export</h2>"))
        layout.addLayout(grid)
        layout.addWidget(self.generation)
        layout.addLayout(buttons)
        layout.addWidget(self.message)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.export_panel)
        self._fill_sentences(self.language_box.currentText())

    # -- project --------------------------------------------------------------------------------------------
    def set_project(self, project: VoiceProject | None) -> None:
        self.player.stop()
        self.project = project
        for row in self.rows:
            row.deleteLater()
        self.rows = []
        if project is not None:
            self.language_box.setCurrentText(project.language)
            self.export_panel.set_default_name(project.name)
            self._auto_references()
        self.refresh()

    def refresh(self) -> None:
        """Re-read the checkpoints (training may have written new ones)."""
        previous = self.checkpoint_box.currentData()
        self.checkpoint_box.blockSignals(True)
        self.checkpoint_box.clear()
        self.checkpoints = list_checkpoints(self.project.root) if self.project else []
        if self.project and self.checkpoints:
            for which in ("latest", "best"):
                try:
                    found = resolve_checkpoint(self.project.root, which)
                except CheckpointError:
                    continue
                self.checkpoint_box.addItem(f"{which.capitalize()}: {found.label}", str(found.path))
            for checkpoint in reversed(self.checkpoints):
                self.checkpoint_box.addItem(checkpoint.label, str(checkpoint.path))
        index = self.checkpoint_box.findData(previous) if previous else -1
        self.checkpoint_box.setCurrentIndex(max(index, 0))
        self.checkpoint_box.blockSignals(False)
        self._checkpoint_changed()

    def selected_checkpoint(self) -> CheckpointInfo | None:
        path = self.checkpoint_box.currentData()
        return next((c for c in self.checkpoints if str(c.path) == path), None)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if self.project is not None and not self.is_busy():
            self.refresh()
        super().showEvent(event)

    # -- inputs ---------------------------------------------------------------------------------------------
    def _checkpoint_changed(self) -> None:
        checkpoint = self.selected_checkpoint()
        self.generation.set_defaults(GenerationSettings.from_base_model(checkpoint.base_model_dir if checkpoint
                                                                        else None))
        self._update_buttons()
        if self.project is not None and checkpoint is None:
            self.message.setText("No training checkpoint yet: train the voice first (step 3), then come back.")
        elif checkpoint is not None and not checkpoint.base_model_dir.is_dir():
            self.message.setText(f"The base model {checkpoint.base_model_dir} this checkpoint was trained from "
                                 "is missing.")
        else:
            self.message.clear()

    def _fill_sentences(self, language: str) -> None:
        typed = self.text_box.currentText()
        self.text_box.clear()
        self.text_box.addItems(default_sentences(language))
        if typed and typed not in default_sentences(language):
            self.text_box.setCurrentText(typed)

    def _auto_references(self) -> None:
        found = candidate_references(self.project.dataset_dir) if self.project else []
        self._set_references([c.path for c in found[:REFERENCE_COUNT]])

    def _choose_references(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Reference clips of the voice", settings.last_folder("refs"),
                                                "Audio (*.wav *.flac *.mp3 *.ogg *.m4a);;All files (*)")
        if files:
            settings.set_last_folder("refs", Path(files[0]).parent)
            self._set_references([Path(f) for f in files])

    def _set_references(self, paths: list[Path]) -> None:
        self.references = paths
        self.reference_label.setText(", ".join(p.name for p in paths) if paths else
                                     "<i>none: export the dataset, or choose clips</i>")
        self._update_buttons()

    def _update_buttons(self) -> None:
        ready = self.selected_checkpoint() is not None and bool(self.references) and not self.is_busy()
        self.generate_button.setEnabled(ready)
        self.compare_button.setEnabled(ready)
        self.export_panel.setEnabled(self.selected_checkpoint() is not None)

    def is_busy(self) -> bool:
        return any(w is not None and w.is_running() for w in (self.worker, self.export_job))

    # -- generation -----------------------------------------------------------------------------------------
    def generate(self, ab: bool) -> None:
        checkpoint = self.selected_checkpoint()
        if self.project is None or checkpoint is None or self.is_busy():
            return
        text = " ".join(self.text_box.currentText().split())
        if not text:
            self.message.setText("Type a sentence to hear first.")
            return
        request = PreviewRequest(checkpoint=checkpoint, text=text, references=list(self.references),
                                 language=self.language_box.currentText().strip() or self.project.language,
                                 settings=self.generation.settings(), out_dir=self.project.previews_dir, ab=ab,
                                 whisper_model=self.whisper_model)
        self.worker = preview_worker(self.session, request, self)
        self.worker.progress.connect(self._on_progress)
        self.worker.finished.connect(self._on_generated)
        self.worker.failed.connect(self._on_failed)
        self.progress.setRange(0, 100)
        self.progress.setValue(0)
        self.progress.show()
        self.message.clear()
        self.worker.start()
        self._update_buttons()

    def _on_progress(self, done: int, total: int, what: str) -> None:
        self.progress.setValue(done)
        self.progress.setFormat(f"{what} (%p%)")

    def _on_generated(self, results: list[PreviewResult]) -> None:
        self.progress.hide()
        row = AbRow(results)
        row.play_requested.connect(self.player.toggle)
        self.rows.insert(0, row)
        self.rows_layout.insertWidget(0, row)  # newest on top
        self.status_message.emit(f"Saved {', '.join(r.wav.name for r in results)} in previews/.")
        self._update_buttons()

    def _on_failed(self, traceback_text: str) -> None:
        self.progress.hide()
        self.message.setText(f"<span style='color:#c62828'>{error_text(traceback_text)}</span>")
        self._update_buttons()

    # -- export ---------------------------------------------------------------------------------------------
    def export(self) -> None:
        checkpoint = self.selected_checkpoint()
        if self.project is None or checkpoint is None or self.is_busy():
            return
        panel = self.export_panel
        self.export_job = export_worker(checkpoint, panel.out_dir(), panel.options(self.references),
                                        self.project.name, self)
        self.export_job.progress.connect(panel.show_progress)
        self.export_job.finished.connect(lambda result: (panel.set_busy(False), panel.show_result(result),
                                                         self._update_buttons()))
        self.export_job.failed.connect(lambda tb: (panel.set_busy(False), panel.show_error(error_text(tb)),
                                                   self._update_buttons()))
        panel.set_busy(True)
        self.export_job.start()
        self._update_buttons()
