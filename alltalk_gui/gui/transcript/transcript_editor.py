"""The transcript editor: the clip table, the waveform of the selected clip, and every edit with its shortcut.

Each edit is a method call on the core's ``SegmentList`` (which saves segments.json atomically at once) wrapped
in a QUndoCommand, so Ctrl+Z undoes exactly one edit and nothing is ever waiting to be saved. The table is
filtered and sorted by the core (``SegmentList.view``); rows are followed by clip id across edits.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence, QPalette, QUndoStack
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QSplitter,
    QTableView, QToolBar, QVBoxLayout, QWidget,
)

from alltalk_gui.core.project.duration_guidance import format_duration
from alltalk_gui.core.transcript.segments import Change, Segment, SegmentEditError, SegmentList
from alltalk_gui.gui.transcript.segments_model import SORTS, Column, SegmentsModel, flags_column_width
from alltalk_gui.gui.transcript.transcript_text import TextDelegate, caret_for_time
from alltalk_gui.gui.transcript.undo_commands import apply_edit
from alltalk_gui.gui.transcript.clip_player import ClipPlayer
from alltalk_gui.gui.transcript.find_bar import FindBar
from alltalk_gui.gui.transcript.clip_waveform import ClipWaveform
from alltalk_gui.gui.common.media_icons import media_icon
from alltalk_gui.gui.common.wording import plural
from alltalk_gui.gui.common import status_colours

FILTERS = [("All clips", "all"), ("Kept", "kept"), ("Flagged", "flagged"), ("Another voice?", "other_voice"),
           ("Deleted", "deleted")]
TABLE_MIN_ROWS = 3  # rows the table shows at least, its header above them
WAVEFORM_MIN_HEIGHT = 96  # px: the waveform, its ruler and a clip's edges to drag (150 took the table's rows)


class TranscriptEditor(QWidget):
    """Shows and edits a ``SegmentList``. ``retranscribe_requested(clip id)`` asks the page to re-run Whisper."""

    status_message = Signal(str)
    retranscribe_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.segments: SegmentList | None = None
        self.undo_stack = QUndoStack(self)
        self.current_id: str | None = None
        self._last_row = 0
        self._unsubscribe = None
        self.player = ClipPlayer(self)
        self.player.position.connect(self._on_play_position)
        self.player.playing_changed.connect(self._on_playing_changed)
        self.player.error.connect(self.status_message)
        self._build()

    # -- layout ---------------------------------------------------------------------------------------------
    def _build(self) -> None:
        self.toolbar = QToolBar()
        self.toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.play_action = self._add("Play", self.toggle_play, "Space")
        self.previous_action = self._add("Previous", lambda: self.step(-1), "Ctrl+Up")
        self.next_action = self._add("Next", lambda: self.step(1), "Ctrl+Down")
        self.toolbar.addSeparator()
        self.split_action = self._add("Split", self.split_at_cursor, "Ctrl+B",
                                      tip="Split the clip at the red cursor; the text is split at the caret.")
        self.merge_action = self._add("Merge with next", self.merge_with_next, "Ctrl+M")
        self.delete_action = self._add("Delete", self.delete_or_restore, "Delete")
        self.accept_action = self._add("Looks fine", self.accept_flags, "Ctrl+L",
                                       tip="You listened and the clip is fine: clear its warnings (undoable). "
                                           "Flags that keep it out of the dataset stay until fixed.")
        self.retranscribe_action = self._add("Re-transcribe", self._retranscribe, "Ctrl+R",
                                             tip="Run Whisper again on this clip only.")
        self.toolbar.addSeparator()
        # Fixed labels, so the toolbar does not shift as the edit names change; the tooltip names the edit.
        self.undo_action = self._add("Undo", self.undo_stack.undo, None)
        self.undo_action.setShortcuts([QKeySequence.StandardKey.Undo])
        self.redo_action = self._add("Redo", self.undo_stack.redo, None)
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        for action in (self.undo_action, self.redo_action):
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.undo_action.setEnabled(False)
        self.redo_action.setEnabled(False)
        self.undo_action.setToolTip("Nothing to undo")
        self.redo_action.setToolTip("Nothing to redo")
        self.undo_stack.canUndoChanged.connect(self.undo_action.setEnabled)
        self.undo_stack.canRedoChanged.connect(self.redo_action.setEnabled)
        self.undo_stack.undoTextChanged.connect(lambda t: self.undo_action.setToolTip(
            f"Undo {t[:1].lower() + t[1:]} (Ctrl+Z)" if t else "Nothing to undo"))
        self.undo_stack.redoTextChanged.connect(lambda t: self.redo_action.setToolTip(
            f"Redo {t[:1].lower() + t[1:]} (Ctrl+Shift+Z)" if t else "Nothing to redo"))
        self.edit_text_action = self._add("Edit text", self.edit_text, "F2", add_to_toolbar=False)
        for action in self.toolbar.actions():
            button = self.toolbar.widgetForAction(action)
            # Toolbar buttons take no focus by default: put them in the Tab order (not the separators: Tab
            # stopped on each of them, an invisible 6 px place with nothing to press).
            if button is not None and not action.isSeparator():
                button.setFocusPolicy(Qt.FocusPolicy.TabFocus)

        self.filter_combo = QComboBox()
        for label, name in FILTERS:
            self.filter_combo.addItem(label, name)
        self.filter_combo.currentIndexChanged.connect(
            lambda: self.model.set_filter(self.filter_combo.currentData()))
        self.sort_combo = QComboBox()
        for label, _key, _descending in SORTS:
            self.sort_combo.addItem(label)
        self.sort_combo.currentIndexChanged.connect(lambda i: self.model.set_sort(*SORTS[i][1:]))
        self.find_bar = FindBar()
        self.find_bar.current_id = lambda: self.current_id
        self.find_bar.visible_order = lambda: [self.model.segment(r).id for r in range(self.model.rowCount())]
        self.find_bar.select.connect(self.select)
        self.find_bar.replace_requested.connect(self.replace_all)
        # Short names the page and its tests use.
        self.find_edit, self.replace_edit = self.find_bar.find_edit, self.find_bar.replace_edit
        self.find_count, self.replace_action = self.find_bar.count, self.find_bar.replace_action
        self.find_next_action, self.find_previous_action = self.find_bar.next_action, self.find_bar.previous_action
        self.find_action = QAction("Find…", self, shortcut=QKeySequence.StandardKey.Find,
                                   shortcutContext=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.find_action.triggered.connect(lambda: (self.find_edit.setFocus(), self.find_edit.selectAll()))
        for action in (self.find_action, self.find_next_action, self.find_previous_action, self.replace_action):
            self.addAction(action)
        row = QHBoxLayout()
        row.addWidget(QLabel("Show"))
        row.addWidget(self.filter_combo)
        row.addWidget(QLabel("Sort"))
        row.addWidget(self.sort_combo)
        row.addStretch(1)
        row.addWidget(self.find_bar, 4)

        self.model = SegmentsModel()
        self.model.text_edit_requested.connect(lambda sid, text: self._edit(lambda: self.segments.set_text(sid, text)))
        self.model.dataChanged.connect(self._on_data_changed)
        self.find_bar.matches_changed.connect(self.model.set_highlight)
        self.table = QTableView()
        self.table.setModel(self.model)
        # After setModel: the view clears its current row on a reset, so selecting again must come after that.
        self.model.modelReset.connect(self._reselect)
        self.table.setTabKeyNavigation(False)  # Tab moves on to the next control, arrows move between cells
        self.text_delegate = TextDelegate(self.table)
        self.table.setItemDelegateForColumn(Column.TEXT, self.text_delegate)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                   | QAbstractItemView.EditTrigger.EditKeyPressed
                                   | QAbstractItemView.EditTrigger.AnyKeyPressed)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setResizeContentsPrecision(0)  # size columns from the visible rows: all 1,000 cost 100 ms per edit
        header.setSectionResizeMode(Column.TEXT, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(Column.FILE, QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(Column.FILE, 110)
        # Flags arrive after the rows (the text check answers later), which contents-sizing missed: at 1024 px the
        # column kept the header's width and cut every flag. It fits the longest single flag; more show in full in
        # the tooltip, and the user can widen it.
        header.setSectionResizeMode(Column.FLAGS, QHeaderView.ResizeMode.Interactive)
        self.table.setColumnWidth(Column.FLAGS, flags_column_width(self.table.fontMetrics()))
        header.setSectionsClickable(True)
        header.sectionClicked.connect(self._sort_by_column)
        self.table.selectionModel().currentRowChanged.connect(self._on_current_row)
        self.table.clicked.connect(self._on_clicked)

        self.waveform = ClipWaveform()
        self.waveform.bounds_changed.connect(self._on_bounds_dragged)
        # On a low window (1366x768 at 150 %) the table keeps a few rows and the waveform room to drag an edge;
        # the page scrolls below these minimums, and above them the table gets three parts of the room to one.
        self.waveform.setMinimumHeight(WAVEFORM_MIN_HEIGHT)
        self.table.setMinimumHeight(self.table.horizontalHeader().sizeHint().height()
                                    + TABLE_MIN_ROWS * self.table.verticalHeader().defaultSectionSize()
                                    + 2 * self.table.frameWidth())
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(self.waveform)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        splitter.setChildrenCollapsible(False)

        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.toolbar)
        layout.addLayout(row)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.summary)
        self.undo_stack.indexChanged.connect(self._update_actions)
        self._update_actions()
        self._paint_icons()

    def _paint_icons(self) -> None:
        colour = self.palette().color(QPalette.ColorRole.WindowText).name()
        self.play_action.setIcon(media_icon("stop" if self.player.current else "play", colour))
        self.previous_action.setIcon(media_icon("up", colour))
        self.next_action.setIcon(media_icon("down", colour))

    def changeEvent(self, event: QEvent) -> None:
        # Light/dark switch: the icons are painted in the palette's colours, so paint them again.
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "play_action"):
            self._paint_icons()
            self.model.refresh_play_column()
        super().changeEvent(event)

    def _add(self, text: str, slot, shortcut: str | None, icon=None, tip: str = "",
             add_to_toolbar: bool = True) -> QAction:
        action = QAction(text, self)
        if icon is not None:
            action.setIcon(icon)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
            # Only while this page has focus: Space and Delete mean other things elsewhere.
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            tip = f"{tip or text} ({QKeySequence(shortcut).toString(QKeySequence.SequenceFormat.NativeText)})"
        action.setToolTip(tip or text)
        action.triggered.connect(slot)
        self.addAction(action)
        if add_to_toolbar:
            self.toolbar.addAction(action)
        return action

    def show_filter(self, name: str) -> None:
        """Show only the clips of filter ``name`` (all, kept, flagged, deleted), the first of them selected."""
        self.filter_combo.setCurrentIndex(max(0, self.filter_combo.findData(name)))
        if self.model.rowCount() and self.model.row_of(self.current_id or "") is None:
            self.select(self.model.segment(0).id)

    # -- the list -------------------------------------------------------------------------------------------
    def set_segments(self, segments: SegmentList | None) -> None:
        """Show ``segments`` (None: nothing). The undo history belongs to one list, so it starts afresh."""
        self.player.stop()
        self.undo_stack.clear()
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.segments = segments
        self.find_bar.segments = segments
        self._unsubscribe = segments.subscribe(lambda _change: self._update_summary()) if segments else None
        self.current_id = None
        self.model.set_segments(segments)
        if self.model.rowCount():
            self.select(self.model.segment(0).id)
        self._update_summary()
        self._update_actions()

    def current(self) -> Segment | None:
        if self.segments is None or self.current_id is None:
            return None
        try:
            return self.segments[self.current_id]
        except SegmentEditError:
            return None

    def select(self, segment_id: str) -> None:
        row = self.model.row_of(segment_id)
        if row is not None:
            self.table.setCurrentIndex(self.model.index(row, Column.TEXT))
            self.table.scrollTo(self.model.index(row, 0))

    def _reselect(self) -> None:
        """After rows came or went: keep the same clip selected, or the row where it was."""
        row = self.model.row_of(self.current_id) if self.current_id else None
        if row is None:
            row = min(self._last_row, self.model.rowCount() - 1)
        if 0 <= row < self.model.rowCount():
            self.table.setCurrentIndex(self.model.index(row, Column.TEXT))
        else:
            self.current_id = None
            self.waveform.clear()
        self._update_actions()

    def _on_current_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if not current.isValid():
            return
        self._last_row = current.row()
        segment = self.model.segment(current.row())
        if segment.id != self.current_id and self.player.current:
            self.player.stop()
        self.current_id = segment.id
        self._show_waveform()
        self._update_actions()

    def _on_data_changed(self, top_left: QModelIndex, bottom_right: QModelIndex, roles=()) -> None:
        if list(roles) in ([Qt.ItemDataRole.DecorationRole], [Qt.ItemDataRole.FontRole]):
            return  # only the play icons or the Find highlight changed
        if self.current_id is not None and top_left.row() <= (self.model.row_of(self.current_id) or -1) \
                <= bottom_right.row():
            self._show_waveform()
            self._update_actions()

    def _show_waveform(self) -> None:
        segment = self.current()
        if segment is None or self.segments is None or self.segments.audio is None:
            self.waveform.clear()
            return
        try:
            samples, rate = self.segments.audio.source_samples(segment.source_id)
        except Exception as exc:  # noqa: BLE001 - a missing working copy is reported, editing text still works
            self.waveform.clear()
            self.status_message.emit(str(exc))
            return
        neighbours = [s for s in (self.segments.previous_in_source(segment.id),
                                  self.segments.next_in_source(segment.id)) if s is not None and not s.deleted]
        self.waveform.show_clip(samples, rate, segment, neighbours)

    # -- edits ----------------------------------------------------------------------------------------------
    def _edit(self, edit) -> Change | None:
        if self.segments is None:
            return None
        try:
            return apply_edit(self.undo_stack, self.segments, edit, self.status_message.emit)
        except SegmentEditError as exc:
            self.status_message.emit(str(exc))
            return None
        except OSError as exc:
            self.status_message.emit(f"The change could not be saved: {exc}")
            return None

    def _take_typed_text(self, segment: Segment) -> tuple[str, int] | None:
        """Close the in-place editor if it is open on ``segment``; return its text (spaces normalised as the
        core does) and caret position in that text, or None when no editor was open."""
        editor = self.text_delegate.editor
        if editor is None or self.model.row_of(segment.id) != self.text_delegate.editing_row:
            return None
        text, caret = editor.text(), editor.cursorPosition()
        self.text_delegate.close_editor()
        before = text[:caret]
        caret = len(" ".join(before.split())) + (1 if before.strip() and before[-1:].isspace() else 0)
        normalised = " ".join(text.split())
        return normalised, min(caret, len(normalised))

    def _edit_with_typed_text(self, segment: Segment, description: str, edit, typed=None) -> None:
        """Run ``edit`` after applying text typed but not yet committed in the clip's editor, as one undo step
        (an edit button must not throw away what was typed)."""
        typed = typed if typed is not None else self._take_typed_text(segment)
        if typed is None or typed[0] == segment.text:
            self._edit(edit)
            return
        self.undo_stack.beginMacro(description)
        self._edit(lambda: self.segments.set_text(segment.id, typed[0]))
        self._edit(edit)
        self.undo_stack.endMacro()

    def split_at_cursor(self) -> None:
        segment = self.current()
        if segment is None:
            return
        at_ms = self.waveform.cursor_ms
        if not segment.start_ms < at_ms < segment.end_ms:
            self.status_message.emit("Put the red cursor inside the clip first (click in the waveform, or play and "
                                     "stop where the split should be).")
            return
        self.player.stop()
        typed = self._take_typed_text(segment)
        caret = typed[1] if typed is not None else caret_for_time(segment, at_ms)
        self._edit_with_typed_text(segment, f"Split {segment.id}",
                                   lambda: self.segments.split(segment.id, at_ms, caret), typed)

    def merge_with_next(self) -> None:
        segment = self.current()
        if segment is not None:
            self._edit_with_typed_text(segment, f"Merge {segment.id} with the next clip",
                                       lambda: self.segments.merge_with_next(segment.id))

    def delete_or_restore(self) -> None:
        segment = self.current()
        if segment is None:
            return
        self.player.stop()
        if segment.deleted:
            self._edit(lambda: self.segments.restore(segment.id))
        else:
            self._edit_with_typed_text(segment, f"Delete {segment.id}", lambda: self.segments.delete(segment.id))

    def accept_flags(self) -> None:
        """"Looks fine": the current clip's warnings are accepted, as one undoable edit (text typed into it first)."""
        segment = self.current()
        if segment is not None and not segment.deleted:
            self._edit_with_typed_text(segment, f"Mark {segment.id} as fine",
                                       lambda: self.segments.accept_flags(segment.id))

    def _on_bounds_dragged(self, segment_id: str, start_ms: int, end_ms: int) -> None:
        if self._edit(lambda: self.segments.set_bounds(segment_id, start_ms, end_ms)) is None:
            self._show_waveform()  # refused: put the region back where the clip really is

    def replace_all(self) -> None:
        needle, replacement = self.find_edit.text(), self.replace_edit.text()
        change = self._edit(lambda: self.segments.replace_all(needle, replacement))
        if change is not None:
            self.status_message.emit(f"Replaced in {plural(len(change.after), 'clip')}." if change.after
                                     else f"No clip contains '{needle}'.")
        self._update_find_count()

    def replace_recognition(self, segment_id: str, words, windows) -> None:
        """Put a re-transcription's words (source timeline) and text into a clip, as one undoable edit."""
        self._edit(lambda: self.segments.set_recognition(segment_id, words, windows))

    def edit_text(self) -> None:
        """Open the current clip's text for typing (F2), as a double-click does."""
        index = self.table.currentIndex()
        if index.isValid():
            self.table.setFocus()
            self.table.edit(self.model.index(index.row(), Column.TEXT))

    def menu_actions(self) -> list[QAction]:
        """Every editor action in menu order (separators between groups), for the window's Edit menu."""
        groups = [[self.undo_action, self.redo_action],
                  [self.edit_text_action, self.split_action, self.merge_action, self.delete_action,
                   self.accept_action, self.retranscribe_action],
                  [self.play_action, self.previous_action, self.next_action],
                  [self.find_action, self.find_next_action, self.find_previous_action, self.replace_action]]
        actions: list[QAction] = []
        for group in groups:
            if actions:
                separator = QAction(self)
                separator.setSeparator(True)
                actions.append(separator)
            actions.extend(group)
        return actions

    def _retranscribe(self) -> None:
        if self.current_id is not None:
            self.retranscribe_requested.emit(self.current_id)

    def _sort_by_column(self, column: int) -> None:
        """A click on a column header picks the matching entry of the Sort list (Length toggles its order)."""
        label = {Column.FILE: "Time", Column.START: "Time", Column.END: "Time", Column.TEXT: "Text A-Z",
                 Column.FLAGS: "Most flags"}.get(Column(column))
        if column == Column.LENGTH:
            label = "Shortest first" if self.sort_combo.currentText() != "Shortest first" else "Longest first"
        if label is not None:
            self.sort_combo.setCurrentIndex(self.sort_combo.findText(label))

    # -- navigation and playback ----------------------------------------------------------------------------
    def step(self, delta: int) -> None:
        row = self.table.currentIndex().row() + delta
        if 0 <= row < self.model.rowCount():
            self.table.setCurrentIndex(self.model.index(row, Column.TEXT))

    def toggle_play(self) -> None:
        segment = self.current()
        if segment is None or self.segments is None or self.segments.audio is None:
            return
        if self.player.current == segment.id:
            self.player.stop()
            return
        try:
            samples, rate = self.segments.audio.clip(segment.source_id, segment.start_ms, segment.end_ms)
        except Exception as exc:  # noqa: BLE001 - shown to the user
            self.status_message.emit(str(exc))
            return
        self.player.play(samples, rate, segment.start_ms, segment.id)

    def _on_clicked(self, index: QModelIndex) -> None:
        if index.column() == Column.PLAY:
            self.toggle_play()

    def _on_play_position(self, ms: int) -> None:
        self.waveform.set_cursor_ms(ms)

    def _on_playing_changed(self, key: str) -> None:
        self.model.playing_id = key
        self.play_action.setText("Stop" if key else "Play")
        self._paint_icons()
        self.model.refresh_play_column()

    # -- state ----------------------------------------------------------------------------------------------
    def _update_actions(self) -> None:
        segment = self.current()
        has = segment is not None
        for action in (self.play_action, self.split_action, self.delete_action, self.retranscribe_action):
            action.setEnabled(has)
        self.merge_action.setEnabled(has and not segment.deleted)
        self.accept_action.setEnabled(has and not segment.deleted and len(segment.blocking_flags) < len(segment.flags))
        self.split_action.setEnabled(has and not segment.deleted)
        self.delete_action.setText("Restore" if has and segment.deleted else "Delete")
        self.replace_action.setEnabled(self.segments is not None)
        rows = self.model.rowCount()
        row = self.table.currentIndex().row()
        self.previous_action.setEnabled(rows > 0 and row > 0)
        self.next_action.setEnabled(rows > 0 and row < rows - 1)

    def _update_find_count(self) -> None:
        self.find_bar.segments = self.segments
        self.find_bar.refresh()

    def _update_summary(self) -> None:
        if self.segments is None or not len(self.segments):
            self.summary.clear()
            return
        s = self.segments.summary()
        parts = [f"<b>{plural(s.kept, 'clip')}</b>", f"{format_duration(s.kept_duration_s)} kept"]
        if s.flagged:
            parts.append(status_colours.span(status_colours.WARNING, f"{s.flagged} flagged"))
        if s.blocked:
            parts.append(status_colours.span(status_colours.PROBLEM, f"{s.blocked} left out of the dataset"))
        if s.deleted:
            parts.append(f"{s.deleted} deleted")
        colour = status_colours.guidance_colour(s.guidance.level)
        self.summary.setText(" · ".join(parts) + f"<br><span style='color:{colour}'>{s.guidance.message}</span>")
        self._update_find_count()
