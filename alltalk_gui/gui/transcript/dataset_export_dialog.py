"""Export the dataset from the Transcribe step: say which clips would be refused, then write it with progress.

The core (:mod:`alltalk_gui.core.dataset.export`) does the work and names every clip it refuses; this module
asks whether to export the others, runs the export in a worker thread behind a modal progress dialog (so the
transcript cannot change while it is read), and reports the result, with how many flagged clips went in.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QProgressDialog, QWidget

from alltalk_gui.core.dataset.export import DatasetError, ExportReport, export_dataset as core_export, refusals
from alltalk_gui.core.dataset.info import format_rate
from alltalk_gui.core.project.duration_guidance import format_duration
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentList, SegmentsError
from alltalk_gui.gui.common.wording import noun, plural
from alltalk_gui.gui.common.workers import Worker
from alltalk_gui.gui.common.failure import show_failure


def refused_text(items) -> str:
    return "\n".join(f"• {r.describe()}" for r in items)


def export_dataset(parent: QWidget, project: VoiceProject, segments: SegmentList,
                   on_show_flagged=lambda: None) -> Worker | None:
    """Ask, then export in the background; returns the running worker (None when the user said no). The result
    says how many flagged clips went in; its "Show the flagged clips" calls ``on_show_flagged``."""
    refused = refusals(segments)
    if refused:
        box = QMessageBox(QMessageBox.Icon.Warning, "Some clips cannot be used",
                          f"{plural(len(refused), 'kept clip')} cannot be used for training and would be left out. "
                          "Fix or delete them first, or export the others now.", parent=parent)
        box.setDetailedText(refused_text(refused))
        others = box.addButton("Export the others", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        if box.clickedButton() is not others:
            return None

    dialog = QProgressDialog("Writing the dataset…", "", 0, 0, parent)
    dialog.setWindowTitle("Export dataset")
    dialog.setCancelButton(None)  # the export swaps the new folder in at the end; there is nothing to stop
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    dialog.setMinimumDuration(300)

    def job(j) -> ExportReport | Exception:
        try:
            return core_export(project, segments=segments, skip_refused=True,
                               progress=lambda done, total: j.progress.emit(done, total, ""))
        except (DatasetError, SegmentsError) as exc:  # the user's to fix: shown as a message, not a traceback
            return exc

    worker = Worker(job, parent)

    def on_progress(done: int, total: int, _label: str) -> None:
        dialog.setMaximum(total)
        dialog.setValue(done)

    def on_done(report: ExportReport | Exception) -> None:
        dialog.reset()
        if isinstance(report, Exception):
            QMessageBox.warning(parent, "The dataset was not exported",
                                f"{report}\n\nThe previous dataset, if any, was left as it was.")
            return
        text = (f"Wrote {report.train} training and {plural(report.eval, 'evaluation clip')} "
                f"({format_duration(report.seconds_of_audio)}) at {format_rate(report.sample_rate)} to "
                f"{report.dataset_dir}.")
        if report.deleted:
            text += f"\n{plural(report.deleted, 'deleted clip')} {noun(report.deleted, 'was')} left out."
        if report.remade:
            text += (f"\n{plural(report.remade, 'recording')} {noun(report.remade, 'was')} read again from "
                     f"{noun(report.remade, 'its', 'their')} original, for the engine's higher rate.")
        text += "".join(f"\n{note}" for note in report.notes)
        if report.flagged:
            n = len(report.flagged)
            text += (f"\n{plural(n, 'clip')} in it {noun(n, 'is')} still flagged: listen to {noun(n, 'it', 'them')} "
                     "with Show ▸ Flagged, and press Looks fine or fix them.")
        if report.refused:
            text += f"\n{plural(len(report.refused), 'clip')} {noun(len(report.refused), 'was')} refused (see the details)."
        box = QMessageBox(QMessageBox.Icon.Information, "Dataset exported", text, parent=parent)
        show = box.addButton("Show the flagged clips", QMessageBox.ButtonRole.ActionRole) if report.flagged else None
        box.addButton(QMessageBox.StandardButton.Ok)
        if report.refused:
            box.setDetailedText(refused_text(report.refused))
        box.exec()
        summary = text.splitlines()[0]
        if report.flagged:
            summary += f" {plural(len(report.flagged), 'flagged clip')} went in."
        parent.status_message.emit(summary)
        if show is not None and box.clickedButton() is show:
            on_show_flagged()

    def on_failed(traceback_text: str) -> None:
        dialog.reset()
        show_failure(parent, "The dataset was not exported", "The export stopped with an error; the dataset folder "
                     "is as it was before.", traceback_text)

    worker.progress.connect(on_progress)
    worker.finished.connect(on_done)
    worker.failed.connect(on_failed)
    worker.start()
    return worker
