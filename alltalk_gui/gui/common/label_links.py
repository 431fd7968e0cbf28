"""Links in a label that the keyboard reaches: Tab stops on the label's link, Enter follows it.

A QLabel's links are for the mouse only unless told otherwise, so "1 flagged clip in it" on the Train page, "Show
them" under the clip list and the licence link on the first-run page could not be followed without a mouse. With
the keyboard flag, Qt stops Tab on the label itself first and on its link only at the next Tab (the label shows no
focus meanwhile): the filter here goes straight on to the link. A label that shows no link is no Tab stop.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QLabel

_TAB_REASONS = (Qt.FocusReason.TabFocusReason, Qt.FocusReason.BacktabFocusReason)


class _OntoTheLink(QObject):
    """Tab or Backtab into the label focuses its first or last link at once."""

    def eventFilter(self, label, event) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.FocusIn and event.reason() in _TAB_REASONS:
            label.focusNextPrevChild(event.reason() == Qt.FocusReason.TabFocusReason)
        return False


def links_by_keyboard(label: QLabel) -> None:
    """Call after each ``setText``: the label's links (if it shows any) become Tab stops that Enter follows."""
    has_links = "<a " in label.text()
    flags = Qt.TextInteractionFlag.LinksAccessibleByMouse
    if has_links:
        flags |= Qt.TextInteractionFlag.LinksAccessibleByKeyboard
    label.setTextInteractionFlags(flags)
    label.setFocusPolicy(Qt.FocusPolicy.StrongFocus if has_links else Qt.FocusPolicy.NoFocus)
    if label.findChild(_OntoTheLink) is None:
        label.installEventFilter(_OntoTheLink(label))
