"""Step 2, Transcribe & Edit: Whisper cuts the recordings into clips with text; the user corrects them.

The page joins three parts: the transcription controls (:mod:`transcribe_panel`), the editor
(:mod:`transcript_editor`) and the workers that run Whisper off the GUI thread (:mod:`..transcribe_worker`).
Before a model is loaded the page asks the core whether it is on disk; if not, the user is told what would be
downloaded (file, size, from where) or, offline, that it cannot be, and may pick a local model instead.
"""

from __future__ import annotations

import html
from dataclasses import replace

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QApplication, QFrame, QHBoxLayout, QLabel, QMessageBox, QPushButton, QStackedWidget, QVBoxLayout, QWidget,
)

from alltalk_gui.core.dataset import byo_layouts
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentEditError, SegmentList, SegmentsError
from alltalk_gui.gui.common.failure import show_failure
from alltalk_gui.gui.common.step_page import CloseAnswer
from alltalk_gui.gui.common.waiting_note import wait_for_workers
from alltalk_gui.gui.common.page_scroll import AtMinimum, page_scroll
from alltalk_gui.gui.common.project_lock import is_read_only, read_only_message
from alltalk_gui.gui.transcript.own_transcript import KnownTextDialog, import_dataset_folder
from alltalk_gui.gui.transcript.transcribe_panel import TranscribePanel
from alltalk_gui.gui.transcript.speaker_worker import SpeakerMeasurer
from alltalk_gui.gui.transcript.transcript_editor import TranscriptEditor
from alltalk_gui.gui.common.wording import noun, plural
from alltalk_gui.gui.transcript.transcribe_worker import (
    ModelCheck, Outcome, TranscriberCache, TranscribeWorker, check_model_worker, retranscribe_worker,
    transcribe_worker,
)
from alltalk_gui.gui.common.label_links import links_by_keyboard


class TranscriptPage(QWidget):
    status_message = Signal(str)
    recordings_added = Signal()  # a dataset folder was imported here: the Import step lists its recordings
    _answered = Signal(object)  # the text check of this SegmentList answered (emitted by a background thread)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project: VoiceProject | None = None
        self.segments: SegmentList | None = None
        self.worker: TranscribeWorker | None = None
        self.export_worker = None  # the dataset export, while it runs
        self.transcribers = TranscriberCache()
        self._export_waiting = False  # Export dataset was pressed before the text check was ready
        self._answered.connect(self._text_checked, Qt.ConnectionType.QueuedConnection)
        title = QLabel("<h2>Transcribe &amp; edit</h2>")
        intro = QLabel("Whisper writes down what is said and cuts the recordings into clips of one or two "
                       "sentences. Listen to the flagged clips, correct the text, and drag a clip's edges "
                       "where a word is cut. Every change is saved at once.")
        intro.setWordWrap(True)
        self.panel = TranscribePanel()
        self.panel.transcribe_requested.connect(lambda: self.start_transcription())
        self.panel.cancel_requested.connect(self.cancel)
        self.notice = QLabel(wordWrap=True)
        self.notice_box = QFrame(objectName="transcriptNotice")
        self.notice_box.setStyleSheet("#transcriptNotice { border: 1px solid #b26a00; border-radius: 6px; }")
        box = QHBoxLayout(self.notice_box)
        box.addWidget(self.notice, 1)
        self.notice_box.hide()
        self.editor = TranscriptEditor()
        self.editor.status_message.connect(self.status_message)
        # Whose voice each clip holds: measured in a child process after transcription and after edits.
        self.speakers = SpeakerMeasurer(self)
        self.speakers.changed.connect(self._show_speaker_status)
        self.editor.retranscribe_requested.connect(self.retranscribe)
        # No "…": it writes at once (it asks only when some clips would be refused).
        self.export_button = QPushButton("Export dataset")
        self.export_button.setToolTip("Write the kept clips as wavs plus metadata_train.csv / metadata_eval.csv "
                                      "for training.")
        self.export_button.clicked.connect(self.export_dataset)
        # Bring your own transcript (own_transcript.py): clips that come with their text, or a recording's script.
        self.dataset_button = QPushButton("Import dataset…")
        self.dataset_button.setToolTip(f"Import a dataset you already have ({byo_layouts.IN_SHORT}): each clip "
                                       "arrives with its text.")
        self.dataset_button.clicked.connect(lambda: self.import_dataset())
        self.known_text_button = QPushButton("Known text…")
        self.known_text_button.setToolTip("Paste the exact text of a recording: its clips take those words "
                                          "instead of Whisper's.")
        self.known_text_button.clicked.connect(self.edit_known_text)
        bottom = QHBoxLayout()
        bottom.addWidget(self.editor.summary, 1)
        bottom.addWidget(self.dataset_button)
        bottom.addWidget(self.known_text_button)
        bottom.addWidget(self.export_button)

        # The page scrolls up and down when the window is lower than its minimum (1366x768 at 150 %: 911x512
        # logical px, less a taskbar and a title bar), so it never makes the window taller than the screen; above
        # that minimum every pixel goes to the editor, whose table keeps a few rows and the waveform its ruler.
        content = QWidget()
        layout = QVBoxLayout(content)
        layout.addWidget(title)
        layout.addWidget(intro)
        layout.addWidget(self.panel)
        layout.addWidget(self.notice_box)
        self.speaker_status = QLabel(wordWrap=True, objectName="speakerStatus")
        self.speaker_status.linkActivated.connect(self._speaker_link)
        self.speaker_status.hide()
        layout.addWidget(self.speaker_status)
        self.empty = QLabel(alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.empty.setStyleSheet("color: palette(mid); font-size: 14pt;")
        self.body = QStackedWidget()
        self.body.addWidget(self.empty)
        self.body.addWidget(self.editor)
        layout.addWidget(AtMinimum(self.body), 1)
        layout.addLayout(bottom)
        self.page_scroll = page_scroll(content, keep_width=True)
        self.page_scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # no invisible Tab stop; it follows the focus
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.page_scroll)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)
        self._update_state()

    # -- project --------------------------------------------------------------------------------------------
    def set_project(self, project: VoiceProject | None) -> None:
        self.shutdown()
        if self.segments is not None:
            self.segments.close()  # folds its journal into segments.json before another list is opened
        self.project = project
        self.segments = None
        self._export_waiting = False
        self.transcribers = TranscriberCache()  # a model loaded for another project is not needed now
        problem = ""
        if project is not None:
            self.panel.set_language(project.language)
            if project.segments_file.exists():
                try:
                    self.segments = SegmentList.open(project)
                except SegmentsError as exc:
                    problem = str(exc)
        self._get_ready(self.segments)
        self.editor.set_segments(self.segments)
        self._update_state(problem)

    def _get_ready(self, segments: SegmentList | None) -> None:
        """Make the first edit as quick as the rest: the indexes and the saving thread now, and the engine's text
        check (coqui's cleaning imports torch, 2-3 s) in a child process, never in this one: an import here, even
        on another thread, holds the GIL and stalled edits for up to 137 ms. An edit is saved at once, and its
        text flags follow when the child answers (:meth:`_text_checked`)."""
        if segments is not None:
            segments.prepare_edits()
            answered = lambda: self._answered.emit(segments)  # noqa: E731 - a queued signal: the slot runs here
            segments.check_text_in_background(answered)
            self._judge_for_the_projects_engine(segments)
        self.speakers.follow(segments)

    def _judge_for_the_projects_engine(self, segments: SegmentList) -> None:
        """Flags judged for another engine (a switch made while this list was being made, an older version) are
        judged again for the project's; the text check answers in the background, so this costs the GUI little."""
        if self.project is not None and not segments.read_only:
            try:
                segments.follow_engine(self.project.engine)
            except OSError as exc:  # the journal cannot be written (a full disk): the flags stay as they were
                self.status_message.emit(f"The clips' flags could not be saved: {exc}")

    def _text_checked(self, segments: SegmentList) -> None:
        """Text checks were answered: the clips edited meanwhile get their text flags, and a waiting export goes."""
        if segments is not self.segments:
            return  # a list replaced since (another project, a new transcript)
        segments.finish_text_checks()
        if self._export_waiting and not segments.text_checks_pending:
            self._export_waiting = False
            self.export_dataset()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        # The editor's shortcuts (Space, F2, Ctrl+F, Ctrl+Z...) act while focus is inside it: opening the page
        # puts the focus on the clip table, not left in the sidebar that was clicked. After the click is done
        # (a queued call), or the list view's own handling of the press would take it back.
        super().showEvent(event)
        QTimer.singleShot(0, self, self.focus_table)

    def show_flagged(self) -> None:
        """The clips still flagged, in the editor (the Train page's count and the export's result lead here)."""
        self.editor.show_filter("flagged")
        self.focus_table()
        QTimer.singleShot(0, self, self.focus_table)  # again once a closing dialog has given the focus back

    def focus_table(self) -> None:
        if self.isVisible() and self.body.currentWidget() is self.editor and self.editor.isEnabled():
            if QApplication.activeWindow() is None:  # a dialog just closed and nothing took the focus back
                self.window().activateWindow()
            self.editor.table.setFocus(Qt.FocusReason.OtherFocusReason)

    def sources_changed(self) -> None:
        """The Import step added recordings: say which ones have no clips yet."""
        if self.project is not None and self.segments is not None:
            # The list keeps source names for display; new sources need theirs too.
            self.segments.source_names.update({s.id: s.name for s in self.project.sources})
            self.segments.source_order[:] = [s.id for s in self.project.sources]
        self._update_state()

    def busy_message(self) -> str | None:
        """A running transcription blocks a project change, as an import does: switching stopped it without a
        word, and what it had done was lost (the walk of 2026-11-27 met it)."""
        return "Wait for the transcription to finish or cancel it first." if self.is_busy() else None

    def close_work(self) -> str | None:
        return "a transcription: what it has done so far is lost" if self.is_busy() else None

    def confirm_close(self, decided: CloseAnswer | None = None) -> bool:
        """Closing during a transcription asks first (it stopped it without a word, and what it had done was
        lost); Yes stops it: the worker ends Whisper's child process (a moment, 2 s at most). The page waits for
        that, and for an export and a speaker check, with the event loop running: waiting on the worker's thread
        here froze the window meanwhile."""
        if self.is_busy():
            if decided is None:
                answer = QMessageBox.question(
                    self, "Transcription running",
                    "A transcription is running. Stop it and quit? What it has done so far is lost: the next "
                    "Transcribe starts from the beginning.")
                decided = CloseAnswer.STOP if answer == QMessageBox.StandardButton.Yes else CloseAnswer.KEEP
            if decided == CloseAnswer.KEEP:
                return False
            self.worker.cancel()
        self.speakers.stop_soon()
        wait_for_workers(self, "Closing", "Stopping the transcription…"
                         if self.is_busy() else "Finishing the dataset export and the speaker check…",
                         (self.worker, self.export_worker, self.speakers.worker))
        self.shutdown()  # nothing runs now: it stops playback
        return True

    def is_busy(self) -> bool:
        return self.worker is not None and self.worker.is_running()

    def shutdown(self) -> None:
        """Stop any running job and wait for it (before the project changes or the app quits)."""
        if self.worker is not None and self.worker.is_running():
            self.worker.cancel()
            # The job stops at its next check of the cancel flag; the thread must end before it is destroyed.
            while not self.worker.wait(1000):
                pass
        if self.export_worker is not None and self.export_worker.is_running():
            self.export_worker.wait()
        self.speakers.stop()
        self.editor.player.stop()

    # -- transcription --------------------------------------------------------------------------------------
    def start_transcription(self, confirmed: bool = False) -> None:
        """Check the model, then transcribe; ``confirmed``: the user already agreed to replace the clips."""
        if self.project is None or self.is_busy():
            return
        if is_read_only(self.project):
            self.status_message.emit(read_only_message(self.project))
            return
        if not self.project.sources:
            self.status_message.emit("Import some recordings first (step 1).")
            return
        if self.segments is not None and len(self.segments) and not confirmed:
            answer = QMessageBox.question(
                self, "Transcribe again?",
                "Transcribing again replaces all clips, and the corrections made to them, with a new transcript. "
                "The current one is kept as segments.json.bak in the project folder.\n\nTranscribe again?")
            if answer != QMessageBox.StandardButton.Yes:
                return
        if self.segments is not None:
            self.segments.flush()  # the new transcript starts from (and backs up) every edit made so far
        options = self.panel.options()
        self._run(check_model_worker(options.backend, options.model, self), self._on_model_checked)
        self.panel.file_label.setText(f"Looking for the {options.model} model…")

    def _on_model_checked(self, check: ModelCheck) -> None:
        options = self.panel.options()
        resolved = check.resolved
        if isinstance(resolved, Exception):
            self._done_busy()
            self._update_state()
            self._offer_local_model("The model cannot be used", str(resolved))
            return
        if not resolved.on_disk:
            self._done_busy()
            self._update_state()
            info = resolved.download
            if not check.online:
                self._offer_local_model(
                    "No internet connection",
                    f"The {info.backend} model '{info.model}' is not on this computer, and it cannot be downloaded: "
                    f"{info.urls[0].split('/')[2]} cannot be reached. Connect to the internet, or choose a model "
                    "you already have on disk.")
                return
            box = QMessageBox(QMessageBox.Icon.Question, "Download the model?",
                              f"The {info.backend} model '{info.model}' is not on this computer yet.\n\n"
                              f"{info.describe()}", parent=self)
            download = box.addButton("Download", QMessageBox.ButtonRole.AcceptRole)
            local = box.addButton("Choose a local model…", QMessageBox.ButtonRole.ActionRole)
            box.addButton(QMessageBox.StandardButton.Cancel)
            box.exec()
            if box.clickedButton() is local:
                if self.panel.choose_local_model():
                    self.start_transcription(confirmed=True)
                return
            if box.clickedButton() is not download:
                return
        self._run(transcribe_worker(self.project, options, resolved, self), self._on_transcribed)

    def _offer_local_model(self, title: str, text: str) -> None:
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, parent=self)
        local = box.addButton("Choose a local model…", QMessageBox.ButtonRole.ActionRole)
        box.addButton(QMessageBox.StandardButton.Close)
        box.exec()
        if box.clickedButton() is local and self.panel.choose_local_model():
            self.start_transcription(confirmed=True)

    def _on_transcribed(self, outcome: Outcome) -> None:
        self._done_busy()
        if outcome.report is None:
            self.status_message.emit(outcome.message or "Transcription stopped.")
            self._update_state()
            if not outcome.cancelled:
                QMessageBox.warning(self, "Transcription failed", outcome.message)
            return
        report = outcome.report
        if self.segments is not None and self.segments is not report.segments:
            self.segments.close()
        self.segments = report.segments
        self._get_ready(self.segments)
        self.editor.set_segments(self.segments)
        self.status_message.emit(f"Transcribed {plural(len(report.transcribed), 'recording')} into "
                                 f"{plural(len(self.segments), 'clip')} in {report.seconds:.0f} s.")
        failed = "".join(f"<br>• {name}: {reason}" for name, reason in report.failed)
        notes = [f"<b>Not transcribed:</b>{failed}"] if failed else []
        if report.language_note:
            notes.append(f"<b>Language:</b> {report.language_note}")
        self._update_state("<br>".join(notes))

    def cancel(self) -> None:
        if self.worker is not None and self.worker.is_running():
            self.worker.cancel()
            self.panel.show_cancelling()

    # -- bring your own transcript ----------------------------------------------------------------------------
    def import_dataset(self, folder: str | None = None) -> None:
        if self.project is None or self.is_busy():
            return
        if is_read_only(self.project):
            self.status_message.emit(read_only_message(self.project))
            return

        def done(report) -> None:
            self.set_project(self.project)  # reload the clips the import added
            self.recordings_added.emit()
            self.status_message.emit(f"Imported {plural(len(report.imported), 'clip')} with their text.")

        worker = import_dataset_folder(self, self.project, done, folder)
        if worker is not None:
            self.export_worker = worker  # waited for like an export when the project changes or the app quits
            worker.progress.connect(lambda i, n, name: self.status_message.emit(
                f"Importing the dataset: {i + 1}/{n} {name}" if name else "Importing the dataset…"))

    def edit_known_text(self) -> None:
        if self.project is None or not self.project.sources:
            return
        if is_read_only(self.project):
            self.status_message.emit(read_only_message(self.project))
            return
        dialog = KnownTextDialog(self.project, self)
        if dialog.exec():
            changed = dialog.apply(self.segments)
            self.status_message.emit(f"Kept the known text; {plural(changed, 'clip')} took it.")

    # -- one clip -------------------------------------------------------------------------------------------
    def retranscribe(self, segment_id: str) -> None:
        if self.project is None or self.segments is None or self.is_busy():
            return
        segment = self.segments[segment_id]
        options = self.panel.options()
        if self.segments.meta.get("language") not in (None, "auto") and options.language == "auto":
            options = replace(options, language=self.segments.meta["language"])
        self.status_message.emit(f"Re-transcribing clip {segment_id}…")
        self._run(retranscribe_worker(self.project, segment, options, self.transcribers, self),
                  lambda outcome: self._on_retranscribed(segment_id, outcome))
        self.panel.file_label.setText(f"Re-transcribing clip {segment_id} (the model loads the first time)…")

    def _on_retranscribed(self, segment_id: str, outcome: Outcome) -> None:
        self._done_busy()
        if outcome.report is None:
            self.status_message.emit(outcome.message or "Re-transcription stopped.")
            return
        recognised = outcome.report
        self.editor.replace_recognition(segment_id, recognised.words, recognised.windows)
        self.status_message.emit(f"Clip {segment_id} re-transcribed.")

    # -- dataset --------------------------------------------------------------------------------------------
    def export_dataset(self) -> None:
        from alltalk_gui.gui.transcript.dataset_export_dialog import export_dataset

        if self.project is not None and self.segments is not None and not self.is_busy():
            self.segments.finish_text_checks()
            if self.segments.text_checks_pending:  # edited clips still wait for their text check: so does the export
                self._export_waiting = True
                self.status_message.emit("Checking the edited clips' text first; the export starts in a moment…")
                return
            self.editor.player.stop()
            self.export_worker = export_dataset(self, self.project, self.segments, self.show_flagged)

    # -- helpers --------------------------------------------------------------------------------------------
    def _show_speaker_status(self, text: str) -> None:
        link = ""
        if self.segments is not None and self.segments.view("other_voice"):
            link = " <a href='other_voice'>Show them</a>"
        elif self.segments is not None and self.segments.speakers is not None and self.segments.speakers.main.note \
                and self.segments.speakers.main.second_share:  # two voices of equal share: the user says which
            link = " <a href='mine'>The selected clip is my voice</a>"
        self.speaker_status.setText(f"{html.escape(text)}{link}")
        links_by_keyboard(self.speaker_status)
        self.speaker_status.setVisible(bool(text) and self.segments is not None and len(self.segments) > 0)

    def _speaker_link(self, link: str) -> None:
        if link == "other_voice":
            self.editor.show_filter("other_voice")
            return
        segment = self.editor.current()
        if self.segments is None or segment is None:
            self.status_message.emit("Select a clip of your voice first, then mark it.")
            return
        try:
            self.segments.choose_main_voice(segment.id)
        except (SegmentEditError, OSError) as exc:
            self.status_message.emit(str(exc))
            return
        self.status_message.emit(f"Clip {segment.id} is your voice: clips of the other voice are flagged.")
        self._show_speaker_status(self.segments.speaker_status())

    def _run(self, worker: TranscribeWorker, on_done) -> None:
        self.worker = worker
        worker.report.connect(self.panel.show_progress)
        worker.download_progress.connect(self.panel.show_download)
        worker.finished.connect(on_done)
        worker.failed.connect(self._on_failed)
        self.panel.set_busy(True)
        # A running job replaces clips when it ends: an edit made meanwhile would be lost or applied to a clip
        # that changed under it, so the transcript is read-only until then.
        self.editor.player.stop()
        self.editor.setEnabled(False)
        if self.body.currentWidget() is self.empty:
            self.empty.setText("Transcribing…\nThe clips appear here when it is done.")
        worker.start()

    def _on_failed(self, traceback_text: str) -> None:
        self._done_busy()
        self._update_state()
        show_failure(self, "Transcription stopped", "The transcription stopped with an error.", traceback_text)

    def _done_busy(self) -> None:
        self.panel.set_busy(False)
        self.editor.setEnabled(True)

    def _update_state(self, problem: str = "") -> None:
        has_clips = self.segments is not None and len(self.segments) > 0
        self.export_button.setEnabled(has_clips)
        self.dataset_button.setEnabled(self.project is not None)
        self.known_text_button.setEnabled(self.project is not None and bool(self.project.sources))
        self.body.setCurrentWidget(self.editor if has_clips else self.empty)
        self.empty.setText("No transcript yet.\nChoose a model above and press Transcribe: the recordings are cut "
                           "into clips here for you to check." if self.project is not None and self.project.sources
                           else "")
        self.panel.transcribe_button.setText("Transcribe again" if has_clips else "Transcribe")
        lines = [problem] if problem else []
        if self.project is not None:
            if not self.project.sources:
                lines.append("No recordings yet: import some in step 1, then transcribe them here, or import a "
                             "dataset folder whose clips already have their text (Import dataset…).")
            elif self.segments is not None:
                covered = {s.source_id for s in self.segments}
                new = [s.name for s in self.project.sources if s.id not in covered]
                if new and len(self.segments):
                    lines.append(f"{plural(len(new), 'recording')} {noun(len(new), 'has')} no clips yet ({', '.join(new[:5])}"
                                 f"{'…' if len(new) > 5 else ''}). Transcribe again to include them.")
        self.notice.setText("<br>".join(lines))
        self.notice_box.setVisible(bool(lines))
