"""Bring your own transcript, in the app: import a dataset folder as clips, or give a recording its known text.

Both are thin: the core does the work (:mod:`alltalk_gui.core.dataset.byo_import`,
:mod:`alltalk_gui.core.transcript.known_text`); this module only asks (the dataset's own dialog is
:mod:`dataset_import_dialog`), runs the import off the GUI thread, and shows what was refused, one line per row.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import (
    QComboBox, QDialog, QDialogButtonBox, QLabel, QMessageBox, QPlainTextEdit, QVBoxLayout, QWidget,
)

from alltalk_gui.core.dataset.byo_import import DatasetImportError, DatasetImportReport, import_dataset
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.known_text import load_known_text, realign, save_known_text
from alltalk_gui.core.transcript.segments import SegmentList
from alltalk_gui.gui.common.workers import Worker
from alltalk_gui.gui.transcript.dataset_import_dialog import DatasetImportDialog, ImportReportDialog
from alltalk_gui.gui.common.failure import show_failure


class KnownTextDialog(QDialog):
    """Paste the exact text of one recording; its clips then take that text instead of Whisper's words."""

    def __init__(self, project: VoiceProject, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project = project
        self.setWindowTitle("Known text of a recording")
        self.recording = QComboBox()
        for source in project.sources:
            self.recording.addItem(source.name, source.id)
        self.text = QPlainTextEdit()
        self.text.setPlaceholderText("Paste what is said in this recording, word for word.")
        # Tab moves on to OK and Cancel (it typed a tab into the text, so the keyboard could not leave the box);
        # a script needs no tab characters.
        self.text.setTabChangesFocus(True)
        hint = QLabel("The clips keep Whisper's timing and take these words instead of the recognised ones, "
                      "aligned word by word (character by character in Chinese and Japanese).")
        hint.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for widget in (self.recording, hint, self.text, buttons):
            layout.addWidget(widget)
        self.recording.currentIndexChanged.connect(self._load)
        self.resize(560, 360)
        self._load()

    def source_id(self) -> str:
        return self.recording.currentData()

    def _load(self) -> None:
        source = next((s for s in self.project.sources if s.id == self.source_id()), None)
        self.text.setPlainText((load_known_text(self.project, source) or "") if source is not None else "")

    def apply(self, segments: SegmentList | None) -> int:
        """Keep the text and give it to the recording's clips; returns how many clips changed."""
        text = self.text.toPlainText()
        save_known_text(self.project, self.source_id(), text)
        if segments is None or not text.strip():
            return 0
        return len(realign(segments, self.source_id(), text, self.project.language))


def import_dataset_folder(parent: QWidget, project: VoiceProject, done: Callable[[DatasetImportReport], None],
                          folder: str | None = None, speaker: str | None = None) -> Worker | None:
    """Ask for a dataset (unless ``folder`` is given: a folder, or a .parquet or .arrow file) and import it in the
    background; ``done`` gets the report after the refused rows were shown. Returns the running worker, or None
    when nothing was chosen."""
    if folder is None:
        dialog = DatasetImportDialog(parent)
        if not dialog.exec() or not dialog.chosen_path():
            return None
        folder, speaker = dialog.chosen_path(), dialog.chosen_speaker()

    def job(j) -> DatasetImportReport | Exception:
        try:
            return import_dataset(project, folder, progress=j.progress.emit, speaker=speaker)
        except DatasetImportError as exc:  # the user's to fix: a message, not a traceback
            return exc

    worker = Worker(job, parent)

    def on_done(report: DatasetImportReport | Exception) -> None:
        if isinstance(report, Exception):
            QMessageBox.warning(parent, "No dataset imported", str(report))
            return
        if report.problems:
            ImportReportDialog(report, parent).exec()
        done(report)

    worker.finished.connect(on_done)
    worker.failed.connect(lambda tb: show_failure(parent, "No dataset imported", "Reading the dataset stopped with "
                                                  "an error.", tb))
    worker.start()
    return worker
