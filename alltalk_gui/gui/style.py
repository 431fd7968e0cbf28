"""The app's look: Fusion style, a light or dark palette that follows the system, the style sheet, the icon.

Fusion looks the same on Linux and Windows, so screenshots and instructions match what users see. Its colours
come from a palette built here: light or dark as the system's colour scheme says (Qt reports it through
``QStyleHints.colorScheme``), switched live when the user changes it. ``resources/style/app.qss`` adds the few
rules a palette cannot express (the sidebar, check cards) and uses palette roles only, so it suits both modes.

Resources are looked up with :func:`resource_path`, which finds them in a source checkout, in a frozen
(PyInstaller) build and in a wheel install (``share/alltalk-gui`` under the environment's prefix).
"""

from __future__ import annotations


from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPalette
from PySide6.QtWidgets import QApplication

from alltalk_gui.core.resources import resource_path  # noqa: F401  (re-exported for the GUI)

ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)

# Accent colours taken from the icon's gradient.
ACCENT_LIGHT = "#2b6fd6"
ACCENT_DARK = "#4a8ff0"


def app_icon() -> QIcon:
    """The app icon with every rendered size, so each place Qt shows it gets a sharp picture."""
    icon = QIcon()
    for size in ICON_SIZES:
        try:
            icon.addFile(str(resource_path("icons", f"alltalk-gui-{size}.png")))
        except FileNotFoundError:
            continue
    return icon


def system_is_dark() -> bool:
    return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def build_palette(dark: bool) -> QPalette:
    """A complete Fusion palette: every role in every colour group, so no widget falls back to a clashing default."""
    if dark:
        window, base, alt, text, button = "#26282c", "#1d1f22", "#2c2f34", "#e6e6e6", "#33363b"
        mid, midlight, light, dark_c, shadow = "#4a4e55", "#3a3d43", "#50545b", "#17181a", "#0c0d0e"
        accent, link, placeholder, disabled = ACCENT_DARK, "#6ea8ff", "#8a8f98", "#7b8089"
    else:
        window, base, alt, text, button = "#f3f4f6", "#ffffff", "#e9ebef", "#1d1f23", "#f7f8fa"
        mid, midlight, light, dark_c, shadow = "#b8bcc4", "#dde0e6", "#ffffff", "#9a9ea6", "#6b6f76"
        accent, link, placeholder, disabled = ACCENT_LIGHT, "#1f5fbf", "#80858e", "#9a9ea6"
    palette = QPalette()
    roles = {
        QPalette.ColorRole.Window: window, QPalette.ColorRole.WindowText: text,
        QPalette.ColorRole.Base: base, QPalette.ColorRole.AlternateBase: alt,
        QPalette.ColorRole.ToolTipBase: base, QPalette.ColorRole.ToolTipText: text,
        QPalette.ColorRole.PlaceholderText: placeholder, QPalette.ColorRole.Text: text,
        QPalette.ColorRole.Button: button, QPalette.ColorRole.ButtonText: text,
        QPalette.ColorRole.BrightText: "#ff5252", QPalette.ColorRole.Light: light,
        QPalette.ColorRole.Midlight: midlight, QPalette.ColorRole.Mid: mid, QPalette.ColorRole.Dark: dark_c,
        QPalette.ColorRole.Shadow: shadow, QPalette.ColorRole.Highlight: accent,
        QPalette.ColorRole.HighlightedText: "#ffffff", QPalette.ColorRole.Link: link,
        QPalette.ColorRole.LinkVisited: link, QPalette.ColorRole.Accent: accent,
    }
    for role, colour in roles.items():
        palette.setColor(role, QColor(colour))
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(disabled))
    palette.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Highlight, QColor(mid))
    return palette


def style_sheet() -> str:
    try:
        folder = resource_path("style")
        # The check marks' images (url(@style@/check.svg)): a path Qt finds whatever the working folder.
        return (folder / "app.qss").read_text(encoding="utf-8").replace("@style@", folder.as_posix())
    except FileNotFoundError:
        return ""  # the palette alone still gives a usable look


def apply_style(app: QApplication, dark: bool | None = None) -> None:
    """Give ``app`` the AllTalk GUI look; ``dark=None`` follows the system and keeps following it."""
    app.setStyle("Fusion")
    app.setPalette(build_palette(system_is_dark() if dark is None else dark))
    app.setStyleSheet(style_sheet())
    app.setWindowIcon(app_icon())
    if dark is None and not app.property("alltalkFollowsScheme"):
        # Connected once: a user switching the desktop between light and dark sees the app follow.
        QGuiApplication.styleHints().colorSchemeChanged.connect(
            lambda scheme: app.setPalette(build_palette(scheme == Qt.ColorScheme.Dark)))
        app.setProperty("alltalkFollowsScheme", True)
