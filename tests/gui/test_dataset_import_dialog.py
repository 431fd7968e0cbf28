"""The dataset import in the app: the dialog names the layouts, looks at the chosen dataset in the background,
offers one choice per speaker with their clips counted, and the report lists every refused row readably."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog

from alltalk_gui.core.dataset.byo_import import DatasetImportReport
from alltalk_gui.core.dataset.byo_layouts import SUPPORTED_LAYOUTS
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.transcript.dataset_import_dialog import DatasetImportDialog, ImportReportDialog
from alltalk_gui.gui.transcript.transcript_page import TranscriptPage
from tests.core.dataset.test_byo_parquet import cells, parquet


def test_the_dialog_names_the_layouts_and_a_folder_without_a_dataset_says_so(qtbot, tmp_path):
    dialog = DatasetImportDialog()
    qtbot.addWidget(dialog)
    shown = " ".join(l.text() for l in dialog.findChildren(type(dialog.found)))
    for layout in SUPPORTED_LAYOUTS:
        assert layout.split(":")[0] in shown
    dialog.set_path(str(tmp_path))
    qtbot.waitUntil(lambda: not dialog.is_surveying(), timeout=10_000)
    assert "holds no dataset" in dialog.found.text() and not dialog.import_button.isEnabled()


def test_a_parquet_of_two_speakers_imports_the_chosen_one_through_the_page(qtbot, tmp_path, monkeypatch):
    data = parquet(tmp_path / "hf" / "train.parquet", cells(3), ["One.", "", "Three."],
                   source=["tara", "leo", "tara"])
    seen = {}

    def choose(dialog):  # what the user does in the dialog: picks the file, then the speaker leo
        dialog.set_path(str(data))
        qtbot.waitUntil(lambda: dialog.import_button.isEnabled(), timeout=10_000)
        seen["found"] = dialog.found.text()
        seen["speakers"] = [dialog.speaker.itemText(i) for i in range(dialog.speaker.count())]
        dialog.speaker.setCurrentIndex(dialog.speaker.findData("leo"))
        return QDialog.DialogCode.Accepted

    reports = []
    monkeypatch.setattr(DatasetImportDialog, "exec", choose)
    monkeypatch.setattr(ImportReportDialog, "exec", lambda d: reports.append(d) or 0)
    project = VoiceProject.create(tmp_path / "p", language="en")
    page = TranscriptPage()
    qtbot.addWidget(page)
    page.set_project(project)

    page.import_dataset()
    qtbot.waitUntil(lambda: bool(reports), timeout=30_000)

    assert "Hugging Face dataset (parquet or arrow)" in seen["found"] and "3 clips, 2 speakers" in seen["found"]
    assert seen["speakers"] == ["tara: 2 clips", "leo: 1 clip"]
    report = reports[0]
    assert report.windowTitle() == "No clips imported"
    assert "0 clips imported" in report.summary.text() and "speaker leo" in report.summary.text()
    assert "1 row was not imported" in report.summary.text()
    assert report.problems.toPlainText() == "train.parquet row 2: the text is empty."


def test_the_report_lists_each_refused_row(qtbot, tmp_path):
    report = DatasetImportReport(layout="f5", folder=tmp_path, imported=["c00001", "c00002"],
                                 problems=[f"metadata.csv line {i}: the text is empty." for i in range(2, 40)])
    dialog = ImportReportDialog(report)
    qtbot.addWidget(dialog)
    assert "2 clips imported" in dialog.summary.text() and "F5-TTS" in dialog.summary.text()
    assert "38 rows were not imported" in dialog.summary.text()
    assert dialog.problems.toPlainText().count("\n") == 37 and dialog.problems.isReadOnly()
