"""Play, stop and arrow icons drawn in the palette's text colour, so they show in the light and the dark look.

Fusion's standard media icons are dark grey pictures: on the dark palette they all but vanish. These are
painted shapes in a given colour instead; callers draw them again when the palette changes.
"""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap, QPolygonF

SHAPES = ("play", "stop", "up", "down")


@lru_cache(maxsize=32)
def media_icon(shape: str, colour: str, size: int = 32) -> QIcon:
    """An icon of ``shape`` (play, stop, up, down) filled with ``colour`` (a colour name such as '#202020')."""
    if shape not in SHAPES:
        raise ValueError(f"Unknown icon shape '{shape}'; use one of {', '.join(SHAPES)}.")
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(colour))
    s = float(size)
    if shape == "stop":
        painter.drawRoundedRect(QRectF(0.25 * s, 0.25 * s, 0.5 * s, 0.5 * s), 0.06 * s, 0.06 * s)
    else:
        points = {
            "play": [(0.28, 0.18), (0.82, 0.5), (0.28, 0.82)],
            "up": [(0.18, 0.7), (0.5, 0.26), (0.82, 0.7)],
            "down": [(0.18, 0.3), (0.5, 0.74), (0.82, 0.3)],
        }[shape]
        painter.drawPolygon(QPolygonF([QPointF(x * s, y * s) for x, y in points]))
    painter.end()
    return QIcon(pixmap)
