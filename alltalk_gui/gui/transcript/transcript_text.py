"""Where a clip's text is edited and where it is split.

The table edits text in place; a split cuts the text at the caret of that editor when it is open, so the
delegate remembers its open editor. Without a caret, :func:`caret_for_time` picks the place in the text that
matches the split time, from Whisper's word timings.
"""

from __future__ import annotations

import re

from PySide6.QtWidgets import QLineEdit, QStyledItemDelegate

from alltalk_gui.core.transcript.segments import Segment


class TextDelegate(QStyledItemDelegate):
    """The in-place text editor; remembers the open one so split can read its caret."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.editor: QLineEdit | None = None
        self.editing_row = -1

    def createEditor(self, parent, option, index):
        self.editor = QLineEdit(parent)
        self.editor.setFrame(False)
        self.editing_row = index.row()
        self.editor.destroyed.connect(self._forget)
        return self.editor

    def _forget(self) -> None:
        self.editor, self.editing_row = None, -1

    def close_editor(self) -> None:
        """Close the open editor without writing it back (the caller has applied the text itself)."""
        if self.editor is not None:
            editor = self.editor
            self._forget()
            self.closeEditor.emit(editor, QStyledItemDelegate.EndEditHint.NoHint)


def caret_for_time(segment: Segment, at_ms: int) -> int:
    """Where to split a clip's text for a split at ``at_ms`` when no caret was placed: after the words that
    end before it (by Whisper's word times), or in proportion to time at the nearest space when the text was
    edited and the words no longer match it."""
    text = segment.text
    tokens = list(re.finditer(r"\S+", text))
    words = segment.words_inside()
    if words and len(words) == len(tokens):
        before = sum(1 for w in words if (w.start_ms + w.end_ms) // 2 < at_ms)
        return tokens[before - 1].end() if before else 0
    if not tokens:
        return 0
    share = (at_ms - segment.start_ms) / max(1, segment.duration_ms)
    target = share * len(text)
    spaces = [m.start() for m in re.finditer(r"\s", text)] or [len(text)]
    return min(spaces, key=lambda p: abs(p - target))
