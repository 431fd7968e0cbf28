"""Paint a small waveform thumbnail in a table cell from a list of peak values (0..1)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPointF, Qt
from PySide6.QtGui import QPainter, QPalette, QPen
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

ENVELOPE_ROLE = Qt.ItemDataRole.UserRole + 1


class WaveformDelegate(QStyledItemDelegate):
    """Draws the list stored under ``ENVELOPE_ROLE`` as mirrored vertical bars, in the text colour."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        style = option.widget.style() if option.widget else None
        if style:
            style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelItemViewItem, option, painter, option.widget)
        envelope = index.data(ENVELOPE_ROLE) or []
        if not envelope:
            return
        rect = option.rect.adjusted(4, 3, -4, -3)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Highlight
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        painter.setPen(QPen(option.palette.color(role), 1))
        mid = rect.center().y()
        half = rect.height() / 2
        step = rect.width() / len(envelope)
        for i, value in enumerate(envelope):
            x = rect.left() + i * step
            h = max(0.5, min(1.0, float(value)) * half)
            painter.drawLine(QPointF(x, mid - h), QPointF(x, mid + h))
        painter.restore()
