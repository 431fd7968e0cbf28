"""Find and replace over the transcript: the search box moves between the clips that match, Replace all changes
them in one undoable edit.

Enter (or F3) goes to the next matching clip and Shift+Enter (Shift+F3) to the previous one, wrapping round;
the count says where you are ("2 of 3") once you have moved, and how many match before. The matching clips are
shown in bold in the table (the model's ``highlight``), so they can be seen while scrolling. The search itself
is the core's (``SegmentList.find``); this bar only keeps the order and the position.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

from alltalk_gui.core.transcript.segments import SegmentList
from alltalk_gui.gui.common.wording import plural


class FindBar(QWidget):
    """``select(clip id)`` is asked to show a match; ``replace_requested`` carries Replace all."""

    select = Signal(str)
    matches_changed = Signal(object)  # the set of matching clip ids (empty: nothing to highlight)
    replace_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.segments: SegmentList | None = None
        self.current_id: Callable[[], str | None] = lambda: None
        self.visible_order: Callable[[], list[str]] = lambda: []
        self.position: int | None = None  # index in the matches after Enter / F3; None: not moved yet
        self.find_edit = QLineEdit(placeholderText="Find…", clearButtonEnabled=True)
        self.find_edit.setToolTip("Enter or F3: next matching clip; Shift+Enter or Shift+F3: previous one")
        self.find_edit.textChanged.connect(self._text_changed)
        self.find_edit.returnPressed.connect(lambda: self.go(1))
        self.replace_edit = QLineEdit(placeholderText="Replace with…")
        self.replace_edit.returnPressed.connect(self.replace_requested)
        self.count = QLabel()
        self.next_action = _action("Find next", "F3", lambda: self.go(1), self)
        self.previous_action = _action("Find previous", "Shift+F3", lambda: self.go(-1), self)
        self.replace_action = _action("Replace all", None, self.replace_requested, self)
        replace_button = QToolButton()
        replace_button.setDefaultAction(self.replace_action)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.find_edit, 2)
        layout.addWidget(self.replace_edit, 2)
        layout.addWidget(replace_button)
        layout.addWidget(self.count)

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and \
                event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.go(-1)
            return
        super().keyPressEvent(event)

    def matches(self) -> list[str]:
        """The matching clips in the order the table shows them."""
        needle = self.find_edit.text()
        if self.segments is None or not needle:
            return []
        found = set(self.segments.find(needle))
        return [sid for sid in self.visible_order() if sid in found]

    def go(self, delta: int) -> None:
        """Select the next (``delta`` 1) or previous (-1) match after the current clip, wrapping round."""
        matches = self.matches()
        if not matches:
            self.refresh()
            return
        current = self.current_id()
        if current in matches and self.position is not None:
            index = (matches.index(current) + delta) % len(matches)
        else:  # first move: the match at or after the current clip (or before it, going back)
            order = self.visible_order()
            here = order.index(current) if current in order else -1
            ahead = [i for i, sid in enumerate(matches) if (order.index(sid) >= here if delta > 0
                                                            else order.index(sid) <= here)]
            index = (ahead[0] if delta > 0 else ahead[-1]) if ahead else (0 if delta > 0 else len(matches) - 1)
        self.position = index
        self.select.emit(matches[index])
        self.count.setText(f"{index + 1} of {len(matches)}")

    def refresh(self) -> None:
        """Count and highlight again (the text or the clips changed)."""
        matches = self.matches()
        self.matches_changed.emit(set(matches))
        if not self.find_edit.text() or self.segments is None:
            self.count.clear()
        elif self.position is not None and self.current_id() in matches:
            self.count.setText(f"{matches.index(self.current_id()) + 1} of {len(matches)}")
        else:
            self.count.setText(plural(len(matches), "clip") if matches else "no clip")

    def _text_changed(self) -> None:
        self.position = None
        self.refresh()


def _action(text: str, shortcut: str | None, slot, parent: QObject) -> QAction:
    action = QAction(text, parent)
    if shortcut:
        action.setShortcut(QKeySequence(shortcut))
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
    action.triggered.connect(slot)
    return action
