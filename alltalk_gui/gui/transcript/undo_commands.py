"""QUndoCommands over the core's ``Change``: one command per transcript edit, so Ctrl+Z reverses exactly it.

The ``SegmentList`` does the work (apply, flag, save atomically); a command only remembers the ``Change``
and hands it back to ``undo`` / ``redo``. Edits are applied *before* the command is pushed, so an edit the
core refuses (``SegmentEditError``) never reaches the stack, and an edit that changed nothing is not pushed.
"""

from __future__ import annotations

import re
from typing import Callable

from PySide6.QtGui import QUndoCommand, QUndoStack

from alltalk_gui.core.transcript.segments import Change, SegmentList


class ChangeCommand(QUndoCommand):
    """An edit that has already been applied to ``segments``; undo and redo replay its ``Change``.

    ``on_error`` receives the message when an undo or redo cannot be saved (disk full, folder gone...):
    Qt ignores exceptions raised inside these virtuals, so they are reported instead of lost.
    """

    def __init__(self, segments: SegmentList, change: Change, on_error: Callable[[str], None] | None = None) -> None:
        text = describe(change)
        super().__init__(text[:1].upper() + text[1:])
        self.segments = segments
        self.change = change
        self._on_error = on_error
        self._applied = True  # the first redo(), which QUndoStack.push calls, has nothing left to do

    def redo(self) -> None:
        if self._applied:
            return
        self._run(self.segments.redo, self.change)
        self._applied = True

    def undo(self) -> None:
        self._run(self.segments.undo, self.change)
        self._applied = False

    def _run(self, action: Callable[[Change], Change], change: Change) -> None:
        try:
            action(change)
        except Exception as exc:  # noqa: BLE001 - reported to the user; the stack itself cannot fail
            if self._on_error is None:
                raise
            self._on_error(str(exc))


def describe(change: Change, words: int = 4) -> str:
    """The change's description with each clip id replaced by the clip's first words, as a person knows it:
    "merge “A second sentence follows…” with “Third one is spoken…”", not "merge c00005 with c00006"."""
    texts = {s.id: s.text for s in (*change.before, *change.after)}

    def words_of(match: re.Match) -> str:
        text = texts.get(match.group(0))
        if text is None:
            return match.group(0)
        first = text.split()
        return f"“{' '.join(first[:words])}{'…' if len(first) > words else ''}”" if first else "an empty clip"

    return re.sub(r"\b" + "|".join(map(re.escape, sorted(texts, key=len, reverse=True))) + r"\b", words_of,
                  change.description) if texts else change.description


def apply_edit(stack: QUndoStack, segments: SegmentList, edit: Callable[[], Change],
               on_error: Callable[[str], None] | None = None) -> Change:
    """Run ``edit()`` (a SegmentList method call) and push it on ``stack`` if it changed anything.

    Raises whatever the edit raises (``SegmentEditError`` for a refused edit); the stack is then unchanged.
    """
    change = edit()
    if not change.is_empty:
        stack.push(ChangeCommand(segments, change, on_error))
    return change
