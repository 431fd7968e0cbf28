"""A QAbstractTableModel whose columns are an IntEnum with a header text and tooltip per column.

The sources and segments tables both describe their columns this way; this base answers ``columnCount`` and
``headerData`` from that description so each model only maps rows and roles.
"""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt


class ColumnTableModel(QAbstractTableModel):
    """Subclasses set ``COLUMNS`` (the enum), ``HEADERS`` and ``HEADER_TIPS`` (dicts keyed by its members)."""

    COLUMNS: type[IntEnum]
    HEADERS: dict
    HEADER_TIPS: dict = {}

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[self.COLUMNS(section)]
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.HEADER_TIPS.get(self.COLUMNS(section))
        return None
