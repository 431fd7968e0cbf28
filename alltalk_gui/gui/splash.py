"""The start-up splash: the icon, the name and what is loading, shown until the main window is up.

The window itself needs only Qt and the light parts of the core, but on a cold start (first launch, a frozen
build, a slow disk) importing those still takes a few seconds, and a double-clicked icon that shows nothing
looks broken. The splash is painted from the palette, so it matches light and dark mode.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import QApplication, QSplashScreen

from alltalk_gui import __version__
from alltalk_gui.gui.style import app_icon

WIDTH, HEIGHT = 440, 220


def _splash_pixmap() -> QPixmap:
    palette = QApplication.palette()
    ratio = QGuiApplication.primaryScreen().devicePixelRatio() if QGuiApplication.primaryScreen() else 1.0
    pixmap = QPixmap(int(WIDTH * ratio), int(HEIGHT * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(palette.color(QPalette.ColorRole.Window))
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(palette.color(QPalette.ColorRole.Mid))
    painter.drawRect(0, 0, WIDTH - 1, HEIGHT - 1)
    painter.drawPixmap(28, 40, app_icon().pixmap(96, 96))
    painter.setPen(palette.color(QPalette.ColorRole.WindowText))
    title = QFont(QApplication.font())
    title.setPointSizeF(title.pointSizeF() * 1.8)
    title.setBold(True)
    painter.setFont(title)
    painter.drawText(QRect(144, 48, WIDTH - 160, 40), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                     "AllTalk GUI")
    painter.setFont(QApplication.font())
    painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
    painter.drawText(QRect(144, 90, WIDTH - 160, 44), Qt.TextFlag.TextWordWrap,
                     f"Version {__version__}\nXTTS v2 voice fine-tuning")
    painter.end()
    return pixmap


class StartupSplash(QSplashScreen):
    """``show_message("Loading …")`` updates the line at the bottom and repaints at once."""

    def __init__(self) -> None:
        super().__init__(_splash_pixmap())
        self.setWindowTitle("AllTalk GUI")

    def show_message(self, text: str) -> None:
        colour = QApplication.palette().color(QPalette.ColorRole.WindowText)
        self.showMessage(f"  {text}", Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignLeft, QColor(colour))
        # The caller is about to block the event loop with imports: paint now or the message never shows.
        QApplication.processEvents()
