"""The two windows of a dataset import: choosing the dataset, and the report after it.

:class:`DatasetImportDialog` names the layouts the app reads (:data:`SUPPORTED_LAYOUTS`), takes a folder or a
.parquet or .arrow file, looks at it in the background (:func:`survey`: the layout found, its clips, its speakers)
and, when the dataset names several speakers, offers one choice per speaker with their clips counted.
:class:`ImportReportDialog` says what was imported and lists every refused row with its file and line, in a box
that scrolls and can be copied.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit,
    QPlainTextEdit, QPushButton, QVBoxLayout, QWidget,
)

from alltalk_gui.core.dataset.byo_import import DatasetImportError, DatasetImportReport, DatasetSurvey, survey
from alltalk_gui.core.dataset.byo_layouts import SUPPORTED_LAYOUTS
from alltalk_gui.gui.common.workers import Worker
from alltalk_gui.gui.common.wording import noun, plural
from alltalk_gui.gui.common.failure import failure_message, log_failure


class DatasetImportDialog(QDialog):
    """Choose a dataset (a folder, or a .parquet or .arrow file) and, when it has several, one speaker."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import a dataset")
        self.survey_result: DatasetSurvey | None = None
        self.surveyed_path = ""  # the path the survey shown (or under way) is of
        self.worker: Worker | None = None
        items = "".join(f"<li><b>{_html(name)}</b>:{_html(what)}</li>"
                        for name, what in (line.split(":", 1) for line in SUPPORTED_LAYOUTS))
        intro = QLabel("Bring clips that already have their text: each clip becomes a recording with its words. "
                       "The app reads these layouts, in the folder you choose or up to three levels below it:"
                       f"<ul>{items}</ul>Rows that cannot be used are listed afterwards; the rest are imported. "
                       "Only files inside the chosen folder are read.")
        intro.setWordWrap(True)
        self.path = QLineEdit(placeholderText="a dataset folder, or a .parquet or .arrow file")
        self.path.editingFinished.connect(lambda: self.set_path(self.path.text()))
        folder_button = QPushButton("Folder…")
        folder_button.clicked.connect(self._choose_folder)
        file_button = QPushButton("Parquet or arrow file…")
        file_button.clicked.connect(self._choose_file)
        row = QHBoxLayout()
        row.addWidget(self.path, 1)
        row.addWidget(folder_button)
        row.addWidget(file_button)
        self.found = QLabel("Choose a folder, or a parquet or arrow file.", wordWrap=True)
        self.speaker = QComboBox()
        self.speaker_label = QLabel("Speaker:")
        form = QFormLayout()
        form.addRow(self.speaker_label, self.speaker)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.import_button = self.buttons.addButton("Import", QDialogButtonBox.ButtonRole.AcceptRole)
        self.import_button.setEnabled(False)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(row)
        layout.addWidget(self.found)
        layout.addLayout(form)
        layout.addStretch(1)
        layout.addWidget(self.buttons)
        self._show_speakers(None)
        self.resize(680, 420)

    # -- what the caller reads ----------------------------------------------------------------------------------
    def chosen_path(self) -> str:
        return self.path.text().strip()

    def chosen_speaker(self) -> str | None:
        return self.speaker.currentData() if self.speaker.count() else None

    def is_surveying(self) -> bool:
        return self.worker is not None and self.worker.is_running()

    # -- choosing -------------------------------------------------------------------------------------------------
    def set_path(self, path: str) -> None:
        """Show ``path`` and look at it in the background (layout, clips, speakers)."""
        path = path.strip()
        if path == self.surveyed_path:
            return
        self.path.setText(path)
        self.survey_result, self.surveyed_path = None, path
        self.import_button.setEnabled(False)
        self._show_speakers(None)
        if not path:
            self.found.setText("Choose a folder, or a parquet or arrow file.")
            return
        self.found.setText("Looking at the dataset…")

        def job(_j) -> tuple[str, DatasetSurvey | Exception]:
            try:
                return path, survey(path)
            except DatasetImportError as exc:  # the user's to fix: shown, not a traceback
                return path, exc

        self.worker = Worker(job, self)
        self.worker.finished.connect(self._surveyed)
        self.worker.failed.connect(self._not_read)
        self.worker.start()

    def _not_read(self, traceback_text: str) -> None:
        log_failure("Reading a dataset to import failed", traceback_text)
        self.found.setText(f"The dataset could not be read: {failure_message(traceback_text)}")

    def _surveyed(self, answer: tuple[str, DatasetSurvey | Exception]) -> None:
        path, result = answer
        if path != self.surveyed_path:  # another path was chosen meanwhile: its own survey answers
            return
        if isinstance(result, Exception):
            self.found.setText(f"⚠ {result}")
            return
        self.survey_result = result
        speakers = f", {len(result.speakers)} speakers" if result.several_speakers else ""
        self.found.setText(f"Found: {result.layout_name} in {result.folder}, "
                           f"{plural(result.clips, 'clip')}{speakers}."
                           + (" A voice is one speaker: choose whose clips to import." if speakers else ""))
        self._show_speakers(result if result.several_speakers else None)
        self.import_button.setEnabled(result.clips > 0)

    def _show_speakers(self, result: DatasetSurvey | None) -> None:
        self.speaker.clear()
        if result is not None:
            for name, count in result.speakers.most_common():
                self.speaker.addItem(f"{name or '(no speaker named)'}: {plural(count, 'clip')}", name)
        self.speaker.setVisible(result is not None)
        self.speaker_label.setVisible(result is not None)

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Dataset folder")
        if folder:
            self.set_path(folder)

    def _choose_file(self) -> None:
        file, _ = QFileDialog.getOpenFileName(self, "Hugging Face data file", "",
                                              "Parquet or arrow files (*.parquet *.arrow)")
        if file:
            self.set_path(file)


class ImportReportDialog(QDialog):
    """What a dataset import did: the clips imported, then every refused row with its reason (scrolls, copyable)."""

    def __init__(self, report: DatasetImportReport, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        refused = len(report.problems)
        self.setWindowTitle("No clips imported" if not report.imported else
                            "Dataset imported" if not refused else "Dataset imported, some rows refused")
        who = f", speaker {report.speaker}" if report.speaker else ""
        text = (f"<b>{plural(len(report.imported), 'clip')} imported</b> with their text.<br>From the "
                f"{_html(report.layout_name)} in {_html(str(report.folder))}{_html(who)}.<br>")
        if refused:
            text += (f"<br>{plural(refused, 'row')} {noun(refused, 'was')} not imported; each is listed below with "
                     "its file and line. After fixing them in the dataset you can import it again: clips "
                     "already imported are not added twice.")
        self.summary = QLabel(text, wordWrap=True)
        self.problems = QPlainTextEdit("\n".join(report.problems))
        self.problems.setReadOnly(True)
        self.problems.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.problems.setVisible(bool(refused))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok)
        buttons.accepted.connect(self.accept)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.problems, 1)
        layout.addWidget(buttons)
        self.resize(720, 420 if refused else 140)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
