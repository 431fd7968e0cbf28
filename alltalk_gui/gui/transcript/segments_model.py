"""Table adapter over the core's ``SegmentList``: one row per clip in the current filter and sort order.

The model only translates rows, columns and roles. Edits go the other way through ``text_edit_requested``:
the page turns the request into an undoable command, the ``SegmentList`` applies and saves it, and the model
hears about it through the list's subscription and refreshes. Rows are identified by clip id, never by row
number, because a split, a merge or a new sort moves them.
"""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPalette
from PySide6.QtWidgets import QApplication

from alltalk_gui.core.transcript.flags import OTHER_SPEAKER, Flag
from alltalk_gui.core.transcript.segments import Change, Segment, SegmentList
from alltalk_gui.gui.common.column_table import ColumnTableModel
from alltalk_gui.gui.common.media_icons import media_icon
from alltalk_gui.gui.common import status_colours

FLAG_LABEL = {
    "too_short": "short", "long": "long", "too_long": "too long", "low_confidence": "unsure",
    "non_speech": "may not be speech",
    "clipped": "clipped", "unencodable": "bad characters", "empty_text": "no text", "duplicate_text": "duplicate",
    "other_speaker": "another voice?",
}


def flag_label(flag: Flag) -> str:
    """A flag's short label for the list; another voice's with its likeness ("another voice? 0.58")."""
    label = FLAG_LABEL.get(flag.code, flag.code)
    return f"{label} {flag.value:.2f}" if flag.code == OTHER_SPEAKER and flag.value is not None else label


def flags_column_width(metrics: QFontMetrics) -> int:
    """Pixels for the Flags column: its longest single label (or its title), with the cell's margins."""
    labels = [*FLAG_LABEL.values(), flag_label(Flag(OTHER_SPEAKER, "", 0.0)), "deleted", "Flags"]
    return max(metrics.horizontalAdvance(text) for text in labels) + 16


DELETED_COLOUR = QColor("#8a8a8a")

# The core's sort keys, offered as one list (label, key, descending).
SORTS = [
    ("Time", "time", False), ("Shortest first", "duration", False), ("Longest first", "duration", True),
    ("Text A-Z", "text", False), ("Most flags", "flags", False), ("Least sure first", "confidence", False),
]


class Column(IntEnum):
    PLAY = 0
    FILE = 1
    START = 2
    END = 3
    LENGTH = 4
    TEXT = 5
    FLAGS = 6


HEADERS = {Column.PLAY: "", Column.FILE: "File", Column.START: "Start", Column.END: "End",
           Column.LENGTH: "Length", Column.TEXT: "Text", Column.FLAGS: "Flags"}
HEADER_TIPS = {
    Column.TEXT: "What is said in the clip. Double-click or press F2 to correct it; it is saved at once.",
    Column.FLAGS: "What may be wrong with the clip. Red: the dataset export leaves the clip out.",
}


def seconds(ms: int) -> str:
    return f"{ms / 1000:.2f}"


class SegmentsModel(ColumnTableModel):
    """Rows of ``segments.view(filter, sort)``. ``text_edit_requested(id, text)`` carries in-place edits."""

    COLUMNS, HEADERS, HEADER_TIPS = Column, HEADERS, HEADER_TIPS

    text_edit_requested = Signal(str, str)

    def __init__(self) -> None:
        super().__init__()
        self._segments: SegmentList | None = None
        self._unsubscribe = None
        self._rows: list[Segment] = []
        self._row_of: dict[str, int] = {}  # clip id -> row, for _rows
        self.filter = "all"
        self.sort_key, self.descending = "time", False
        self.playing_id = ""  # the clip being played: its play cell shows a stop icon
        self.highlight: set[str] = set()  # clips that match the Find box: their text is bold

    # -- what is shown --------------------------------------------------------------------------------------
    def set_segments(self, segments: SegmentList | None) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._segments = segments
        if segments is not None:
            self._unsubscribe = segments.subscribe(self._on_change)
        self.refresh()

    @property
    def segments(self) -> SegmentList | None:
        return self._segments

    def set_filter(self, name: str) -> None:
        self.filter = name
        self.refresh()

    def set_sort(self, key: str, descending: bool = False) -> None:
        self.sort_key, self.descending = key, descending
        self.refresh()

    def refresh(self) -> None:
        self.beginResetModel()
        self._set_rows([] if self._segments is None else self._segments.view(self.filter, self.sort_key,
                                                                             self.descending))
        self.endResetModel()

    def _set_rows(self, rows: list[Segment]) -> None:
        self._rows = rows
        self._row_of = {s.id: row for row, s in enumerate(rows)}

    def _on_change(self, change: Change) -> None:
        assert self._segments is not None
        if self._rows_stay(change):  # the common edit (text, flags) at any size: O(clips changed)
            for clip_id in change.ids:
                row = self._row_of[clip_id]
                self._rows[row] = self._segments[clip_id]
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(Column) - 1))
            return
        rows = self._segments.view(self.filter, self.sort_key, self.descending)
        if [s.id for s in rows] != [s.id for s in self._rows]:
            self.refresh()  # rows came, went or moved: the page re-selects by id
            return
        self._set_rows(rows)
        changed = change.ids  # a set built per call: once, not once per row
        for row, segment in enumerate(rows):
            if segment.id in changed:
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(Column) - 1))

    def set_highlight(self, ids: set[str]) -> None:
        if ids != self.highlight:
            self.highlight = set(ids)
            if self._rows:
                self.dataChanged.emit(self.index(0, Column.TEXT), self.index(len(self._rows) - 1, Column.TEXT),
                                      [Qt.ItemDataRole.FontRole])

    def refresh_play_column(self) -> None:
        if self._rows:
            self.dataChanged.emit(self.index(0, Column.PLAY), self.index(len(self._rows) - 1, Column.PLAY),
                                  [Qt.ItemDataRole.DecorationRole])

    def segment(self, row: int) -> Segment:
        return self._rows[row]

    def row_of(self, segment_id: str) -> int | None:
        return self._row_of.get(segment_id)

    def _rows_stay(self, change: Change) -> bool:
        """Whether ``change`` leaves every row where it is: all clips shown in time order, none added or
        removed, none moved in time."""
        if self.filter != "all" or self.sort_key != "time" or self._segments is None:
            return False
        before = {s.id: (s.source_id, s.start_ms) for s in change.before}
        after = {s.id: (s.source_id, s.start_ms) for s in change.after}
        return before == after and all(i in self._row_of for i in change.ids)

    # -- Qt model interface ---------------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        base = super().flags(index)
        if index.isValid() and index.column() == Column.TEXT and not self._rows[index.row()].deleted:
            return base | Qt.ItemFlag.ItemIsEditable
        return base

    def setData(self, index: QModelIndex | QPersistentModelIndex, value, role: int = Qt.ItemDataRole.EditRole):
        if role != Qt.ItemDataRole.EditRole or not index.isValid() or index.column() != Column.TEXT:
            return False
        segment = self._rows[index.row()]
        if str(value) != segment.text:
            self.text_edit_requested.emit(segment.id, str(value))
        return True

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        segment = self._rows[index.row()]
        col = Column(index.column())
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return self._display(col, segment)
        if role == Qt.ItemDataRole.DecorationRole and col == Column.PLAY:
            colour = QApplication.palette().color(QPalette.ColorRole.Text).name()
            return media_icon("stop" if segment.id == self.playing_id else "play", colour)
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == Column.PLAY:
                return "Play / stop this clip (Space)"
            if col == Column.FLAGS and segment.flags:
                return "\n".join(f"• {f.reason}" for f in segment.flags)
            if col == Column.TEXT:
                return segment.text
            if col == Column.FILE and self._segments is not None:
                return f"{self._segments.source_name(segment.source_id)} (clip {segment.id})"
        if role == Qt.ItemDataRole.ForegroundRole:
            if segment.deleted:
                return DELETED_COLOUR
            if col == Column.FLAGS and segment.flags:
                return status_colours.qcolour(status_colours.PROBLEM if segment.blocking_flags
                                              else status_colours.WARNING)
        if role == Qt.ItemDataRole.FontRole and col == Column.TEXT and (segment.deleted
                                                                        or segment.id in self.highlight):
            font = QFont()
            font.setStrikeOut(segment.deleted)
            font.setBold(segment.id in self.highlight)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (Column.START, Column.END, Column.LENGTH):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _display(self, col: Column, segment: Segment) -> str | None:
        if col == Column.FILE:
            return self._segments.source_name(segment.source_id) if self._segments is not None else ""
        if col == Column.START:
            return seconds(segment.start_ms)
        if col == Column.END:
            return seconds(segment.end_ms)
        if col == Column.LENGTH:
            return f"{segment.duration_ms / 1000:.1f} s"
        if col == Column.TEXT:
            return segment.text
        if col == Column.FLAGS:
            if segment.deleted:
                return "deleted"
            return ", ".join(flag_label(flag) for flag in segment.flags)
        return None
