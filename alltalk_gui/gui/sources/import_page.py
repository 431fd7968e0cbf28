"""Step 1, Import: add recordings (buttons or drag and drop), see each one's analysis, play it.

The import itself runs in a worker thread; the table refreshes after every file so a long batch shows
progress as it goes. Files that are refused are listed with their reasons under the table.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView, QFileDialog, QFrame, QHBoxLayout, QHeaderView, QLabel, QListWidget, QListWidgetItem,
    QMessageBox,
    QProgressBar, QPushButton, QTableView, QToolButton, QVBoxLayout, QWidget,
)

from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.project.duration_guidance import format_duration, guidance
from alltalk_gui.core.project.importer import ImportReport
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.common.step_page import CloseAnswer
from alltalk_gui.gui.common.waiting_note import wait_for_workers
from alltalk_gui.gui import settings
from alltalk_gui.core.project.plain_reasons import plain_reason
from alltalk_gui.gui.sources.sources_model import Column, SourcesModel
from alltalk_gui.gui.sources.bulk_drop import confirm_bulk_import
from alltalk_gui.gui.common.project_lock import is_read_only, read_only_message
from alltalk_gui.gui.common.audio_player import AudioPlayer
from alltalk_gui.gui.common.media_icons import media_icon
from alltalk_gui.gui.sources.waveform_delegate import WaveformDelegate
from alltalk_gui.gui.common.workers import Worker, adopt_worker, import_worker
from alltalk_gui.gui.common.wording import noun, plural
from alltalk_gui.gui.common.failure import failure_message, log_failure
from alltalk_gui.gui.common import status_colours



def _file_filter() -> str:
    patterns = " ".join(f"*{ext}" for ext in sorted(audio.SUPPORTED_EXTENSIONS))
    return f"Audio and video ({patterns});;All files (*)"


NAME_MAX_PX = 150  # the file-name column's widest (a long name wraps or is elided; its tooltip has it)

class ImportPage(QWidget):
    """The Import step. ``sources_changed`` fires after every import so other steps can update."""

    sources_changed = Signal()
    status_message = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project: VoiceProject | None = None
        self.worker: Worker | None = None
        self.player = AudioPlayer(self)
        self.player.playing_changed.connect(self._update_play_buttons)
        self.player.error.connect(self.status_message)
        self.setAcceptDrops(True)
        self._build()

    # -- layout ---------------------------------------------------------------------------------------------
    def _build(self) -> None:
        title = QLabel("<h2>Import recordings</h2>")
        intro = QLabel("Add 3 to 10 minutes of one person speaking: wav, flac, mp3, ogg/opus, m4a, a phone's "
                       "voice recordings (amr, 3gp) or the sound of a video. Your files are copied into the "
                       "project and never changed.")
        intro.setWordWrap(True)

        self.drop_zone = QFrame(objectName="dropZone")
        self.drop_zone.setFrameShape(QFrame.Shape.StyledPanel)
        self.drop_zone.setStyleSheet("#dropZone { border: 2px dashed palette(mid); border-radius: 8px; }")
        drop_label = QLabel("Drop audio or video files, or whole folders, here")
        drop_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.add_files_button = QPushButton("Add files…")
        self.add_folder_button = QPushButton("Add folder…")
        self.add_files_button.clicked.connect(self._choose_files)
        self.add_folder_button.clicked.connect(self._choose_folder)
        zone = QHBoxLayout(self.drop_zone)
        zone.addWidget(drop_label, 1)
        zone.addWidget(self.add_files_button)
        zone.addWidget(self.add_folder_button)

        self.progress = QProgressBar()
        self.progress_label = QLabel()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self._cancel)
        self.progress_row = QWidget()
        row = QHBoxLayout(self.progress_row)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.progress_label)
        row.addWidget(self.progress, 1)
        row.addWidget(self.cancel_button)
        self.progress_row.hide()

        self.model = SourcesModel()
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setItemDelegateForColumn(Column.WAVEFORM, WaveformDelegate(self.table))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        # Two lines per row, and the verdict wraps onto the second: "Check: clipped 6.7 % of samples" was cut
        # off, and at 1024 px squeezed to "…" behind a horizontal scroll bar. The format gets a fixed width
        # (the whole of it is in its tooltip), so the verdict keeps the room.
        self.table.verticalHeader().setDefaultSectionSize(2 * self.fontMetrics().lineSpacing() + 8)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(True)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(Column.WAVEFORM, QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(Column.FORMAT, QHeaderView.ResizeMode.Interactive)
        # The file name as wide as it is, up to NAME_MAX_PX (its tooltip holds it whole): a long name took the
        # verdict's room at 1024 px.
        header.setSectionResizeMode(Column.NAME, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(Column.VERDICT, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(40)
        self.table.setColumnWidth(Column.WAVEFORM, 84)
        self.table.setColumnWidth(Column.FORMAT, 110)
        self.model.modelReset.connect(self._fit_name_column)
        self.table.doubleClicked.connect(lambda index: self._toggle_play(index.row()))
        # Keyboard: Tab leaves the table (it walked every cell of every row before reaching Details, Dismiss and
        # what follows), the arrows move between rows, and Enter or Space plays the current row. The rows' play
        # buttons are for the mouse only, so Tab does not stop at each of them.
        self.table.setTabKeyNavigation(False)
        for key in (Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter):
            QShortcut(QKeySequence(key), self.table, self._play_current, context=Qt.ShortcutContext.WidgetShortcut)
        self.model.modelReset.connect(self._install_play_buttons)

        self.rejected_title = QLabel()
        self.rejected_list = QListWidget()
        self.rejected_list.setWordWrap(True)
        dismiss = QToolButton(text="Dismiss")
        dismiss.clicked.connect(self._clear_rejections)
        self.details_button = QToolButton(text="Details", checkable=True)
        self.details_button.setToolTip("Show what the audio decoders said (for a bug report)")
        self.details_button.toggled.connect(self._show_details)
        self.details_button.hide()
        self.rejected_box = QFrame(objectName="rejectedBox")
        self.rejected_box.setStyleSheet("#rejectedBox { border: 1px solid #c62828; border-radius: 6px; }")
        box = QVBoxLayout(self.rejected_box)
        top = QHBoxLayout()
        top.addWidget(self.rejected_title, 1)
        top.addWidget(self.details_button)
        top.addWidget(dismiss)
        box.addLayout(top)
        box.addWidget(self.rejected_list)
        self.rejected_box.hide()

        self.summary = QLabel()
        self.guidance = QLabel()
        self.guidance.setWordWrap(True)

        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(intro)
        layout.addWidget(self.drop_zone)
        layout.addWidget(self.progress_row)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.rejected_box)
        layout.addWidget(self.summary)
        layout.addWidget(self.guidance)

    # -- project --------------------------------------------------------------------------------------------
    def set_project(self, project: VoiceProject | None) -> None:
        self.player.stop()
        self.project = project
        self.model.set_project(project)
        self._clear_rejections()
        self._update_summary()

    def import_paths(self, paths: list[str]) -> None:
        """Start importing ``paths`` in the background (ignored while another import runs)."""
        if self.project is None or not paths or self.is_importing():
            return
        if is_read_only(self.project):
            self.status_message.emit(read_only_message(self.project))
            return
        if not confirm_bulk_import(self, paths):
            return
        self._run(import_worker(self.project, paths, self))

    def adopt(self, orphans) -> None:
        """Import, in the background, the recordings an interrupted import left in the project folder
        (:func:`alltalk_gui.core.project.orphans.adopt_orphans`), shown like any import."""
        if self.project is None or self.is_importing() or is_read_only(self.project):
            return
        self._run(adopt_worker(self.project, orphans, self))

    def _run(self, worker) -> None:
        self.worker = worker
        self.worker.progress.connect(self._on_progress)
        self.worker.finished.connect(self._on_finished)
        self.worker.failed.connect(self._on_failed)
        self._set_busy(True)
        self.worker.start()

    def is_importing(self) -> bool:
        return self.worker is not None and self.worker.is_running()

    # -- StepPage -------------------------------------------------------------------------------------------
    def busy_message(self) -> str | None:
        return "Wait for the import to finish or cancel it first." if self.is_importing() else None

    def close_work(self) -> str | None:
        return "an import: it stops after the current file" if self.is_importing() else None

    def confirm_close(self, decided: CloseAnswer | None = None) -> bool:
        """An import that runs stops after the current file, if the user agrees (the window waits for it with its
        event loop running); playback stops."""
        if self.is_importing():
            if decided is None:
                answer = QMessageBox.question(self, "Import running",
                                              "An import is running. Stop it after the current file and quit?")
                decided = CloseAnswer.STOP if answer == QMessageBox.StandardButton.Yes else CloseAnswer.KEEP
            if decided == CloseAnswer.KEEP:
                return False
            self.worker.cancel()
            wait_for_workers(self, "Closing", "Stopping the import after the current file…", [self.worker])
        self.player.stop()
        return True

    # -- slots ----------------------------------------------------------------------------------------------
    def _choose_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Add recordings", settings.last_folder("import"),
                                                _file_filter())
        if files:
            settings.set_last_folder("import", Path(files[0]).parent)
            self.import_paths(files)

    def _choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of recordings", settings.last_folder("import"))
        if folder:
            settings.set_last_folder("import", folder)
            self.import_paths([folder])

    def _cancel(self) -> None:
        if self.worker:
            self.worker.cancel()
            self.progress_label.setText("Stopping after this file…")

    def _on_progress(self, done: int, total: int, name: str) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress_label.setText(f"Importing {name} ({done + 1} of {total})" if name else "Finishing…")
        self.model.refresh()
        self._update_summary()

    def _on_finished(self, report: ImportReport) -> None:
        self._set_busy(False)
        self.model.refresh()
        self._update_summary()
        for rej in report.rejected:
            self._add_rejection(rej.reason)
        if self.rejected_list.count():
            self._fit_rejected_list()
            self.rejected_title.setText(f"<b>{plural(self.rejected_list.count(), 'file')} {noun(self.rejected_list.count(), 'was')} not imported</b>")
            self.rejected_box.show()
        parts = [f"{len(report.imported)} imported"]
        if report.rejected:
            parts.append(f"{len(report.rejected)} not imported")
        if report.skipped_non_audio:
            parts.append(f"{plural(report.skipped_non_audio, 'non-audio file')} skipped")
        if report.cancelled:
            parts.append("cancelled")
        self.status_message.emit(", ".join(parts) + ".")
        self.sources_changed.emit()

    def _on_failed(self, traceback_text: str) -> None:
        self._set_busy(False)
        self.model.refresh()
        self._update_summary()
        log_failure("The import stopped", traceback_text)
        self.rejected_list.addItem(f"The import stopped with an error nobody expected: "
                                   f"{failure_message(traceback_text)}. The files imported before it are kept; the "
                                   "log file has the details.")
        self._fit_rejected_list()
        self.rejected_title.setText("<b>The import stopped</b>")
        self.rejected_box.show()

    def _add_rejection(self, reason: str) -> None:
        """The reason in plain words; the decoders' own message in the tooltip and behind Details."""
        plain, detail = plain_reason(reason)
        item = QListWidgetItem(plain)
        item.setData(Qt.ItemDataRole.UserRole, (plain, f"{plain}\n{detail}" if detail else plain))
        item.setToolTip(detail or plain)
        self.rejected_list.addItem(item)
        self.details_button.setVisible(self.details_button.isVisible() or bool(detail))

    def _fit_name_column(self) -> None:
        self.table.setColumnWidth(Column.NAME, min(self.table.sizeHintForColumn(Column.NAME), NAME_MAX_PX))

    def _show_details(self, shown: bool) -> None:
        for i in range(self.rejected_list.count()):
            item = self.rejected_list.item(i)
            texts = item.data(Qt.ItemDataRole.UserRole)
            if texts:
                item.setText(texts[1] if shown else texts[0])
        self._fit_rejected_list()

    def _fit_rejected_list(self) -> None:
        # As tall as its wrapped rows, up to four; a scroll bar beyond that. Measured against the list's width:
        # sizeHintForRow gave one line per row before the list had been laid out, cutting messages in half.
        shown = self.rejected_list.isVisible()
        width = (self.rejected_list.viewport().width() if shown else self.width() - 70) - 16
        metrics = self.rejected_list.fontMetrics()
        rows = sum(metrics.boundingRect(QRect(0, 0, max(width, 150), 10000), Qt.TextFlag.TextWordWrap,
                                        self.rejected_list.item(i).text()).height() + 8
                   for i in range(min(4, self.rejected_list.count())))
        self.rejected_list.setFixedHeight(rows + 2 * self.rejected_list.frameWidth() + 6)
        if not shown:  # measure again once it is laid out at its real width
            QTimer.singleShot(0, self, self._fit_rejected_list_once)

    def _fit_rejected_list_once(self) -> None:
        if self.rejected_list.isVisible():
            self._fit_rejected_list()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        if self.rejected_list.count():
            self._fit_rejected_list()

    def _clear_rejections(self) -> None:
        self.rejected_list.clear()
        self.details_button.setChecked(False)
        self.details_button.hide()
        self.rejected_box.hide()

    def _set_busy(self, busy: bool) -> None:
        self.progress_row.setVisible(busy)
        self.add_files_button.setEnabled(not busy)
        self.add_folder_button.setEnabled(not busy)
        if busy:
            self.progress.setRange(0, 0)
            self.progress_label.setText("Looking for audio…")

    def _update_summary(self) -> None:
        if self.project is None:
            self.summary.clear()
            self.guidance.clear()
            return
        sources = self.project.sources
        flagged = sum(1 for s in sources if s.verdict != "ok")
        total = sum(s.duration_s for s in sources)
        usable = self.project.usable_duration_s()
        text = f"<b>{plural(len(sources), 'recording')}</b> · {format_duration(total)} in total"
        if flagged:
            text += f" · {flagged} to check"
        self.summary.setText(text)
        g = guidance(usable)
        self.guidance.setText(f"<span style='color:{status_colours.guidance_colour(g.level)}'>{g.message}</span>")

    # -- playback -------------------------------------------------------------------------------------------
    def _install_play_buttons(self) -> None:
        for row in range(self.model.rowCount()):
            button = QToolButton()
            button.setAutoRaise(True)
            button.setToolTip("Play / stop (double-click a row, or Enter or Space on it)")
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            button.clicked.connect(lambda _=False, r=row: self._toggle_play(r))
            self.table.setIndexWidget(self.model.index(row, Column.PLAY), button)
        self._update_play_buttons(self.player.current)

    def _play_current(self) -> None:
        if self.table.currentIndex().isValid():
            self._toggle_play(self.table.currentIndex().row())

    def _toggle_play(self, row: int) -> None:
        if self.project is None:
            return
        self.player.toggle(self.project.path(self.model.source(row).audio_file))

    def _update_play_buttons(self, playing: str) -> None:
        if self.project is None:
            return
        for row in range(self.model.rowCount()):
            button = self.table.indexWidget(self.model.index(row, Column.PLAY))
            if button is None:
                continue
            is_playing = bool(playing) and Path(playing) == self.project.path(self.model.source(row).audio_file)
            # Painted in the palette's text colour: Fusion's standard media icons are dark grey pictures that
            # all but vanished on the dark palette.
            colour = self.palette().color(QPalette.ColorRole.Text).name()
            button.setIcon(media_icon("stop" if is_playing else "play", colour))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.PaletteChange:  # light/dark switch: paint the play icons again
            self._update_play_buttons(self.player.current)
        super().changeEvent(event)

    # -- drag and drop --------------------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if self.project is not None and event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.import_paths(paths)
