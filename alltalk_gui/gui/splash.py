"""The start-up splash: the icon, the name and what is loading, shown until the main window is up.

The window itself needs only Qt and the light parts of the core, but on a cold start (first launch, a frozen
build, a slow disk) importing those still takes a few seconds, and a double-clicked icon that shows nothing
looks broken. The splash is painted from the palette, so it matches light and dark mode.

It is a frameless QLabel, not a QSplashScreen: QSplashScreen.show() waits up to a second for the window
system to expose it (measured here: 1.0 s on Xvfb and offscreen, every start), which alone was half of the
time to the main window.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QFont, QGuiApplication, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import QApplication, QLabel, QWidget

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
                     f"Version {__version__}\nVoice fine-tuning for AllTalk")
    painter.end()
    return pixmap


class StartupSplash(QLabel):
    """``show_message("Loading …")`` updates the line at the bottom and repaints at once; ``finish(window)``
    closes it once the main window is shown."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowFlags(Qt.WindowType.SplashScreen | Qt.WindowType.FramelessWindowHint
                            | Qt.WindowType.WindowStaysOnTopHint)
        self.setWindowTitle("AllTalk GUI")
        self._base = _splash_pixmap()
        self._message = ""
        self.setPixmap(self._base)
        self.setFixedSize(WIDTH, HEIGHT)
        screen = QGuiApplication.primaryScreen()
        if screen is not None:
            self.move(screen.availableGeometry().center() - self.rect().center())

    def message(self) -> str:
        return self._message

    def show_message(self, text: str) -> None:
        self._message = f"  {text}"
        pixmap = QPixmap(self._base)
        painter = QPainter(pixmap)
        painter.setPen(QApplication.palette().color(QPalette.ColorRole.WindowText))
        painter.drawText(QRect(8, HEIGHT - 36, WIDTH - 16, 28),
                         int(Qt.AlignmentFlag.AlignBottom | Qt.AlignmentFlag.AlignLeft), self._message)
        painter.end()
        self.setPixmap(pixmap)
        # The caller is about to block the event loop with imports: paint now or the message never shows.
        self.repaint()
        QApplication.processEvents()

    def finish(self, window: QWidget) -> None:
        self.close()
