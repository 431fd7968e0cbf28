"""The app's look: resources found, icon sizes, light and dark palettes, the style sheet, the splash."""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from alltalk_gui.gui import style
from alltalk_gui.gui.splash import StartupSplash


def test_resources_are_found_and_every_icon_size_is_there():
    assert style.resource_path("icons", "alltalk-gui.svg").is_file()
    icon = style.app_icon()
    assert sorted(s.width() for s in icon.availableSizes()) == list(style.ICON_SIZES)
    assert icon.pixmap(48, 48).width() == 48


def test_missing_resource_names_the_places_it_looked():
    try:
        style.resource_path("icons", "nope.png")
    except FileNotFoundError as exc:
        assert "resources/icons/nope.png" in str(exc)
    else:
        raise AssertionError("expected FileNotFoundError")


def test_palettes_are_light_and_dark_with_readable_text():
    for dark in (False, True):
        palette = style.build_palette(dark)
        window = palette.color(QPalette.ColorRole.Window).lightness()
        text = palette.color(QPalette.ColorRole.WindowText).lightness()
        assert (window < 128) == dark
        assert abs(window - text) > 150  # enough contrast either way
        disabled = palette.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text)
        assert disabled != palette.color(QPalette.ColorRole.Text)


def test_apply_style_sets_fusion_palette_sheet_and_icon(qapp):
    app = QApplication.instance()
    style.apply_style(app, dark=True)
    assert app.palette().color(QPalette.ColorRole.Window).lightness() < 128
    assert "#stepSidebar" in app.styleSheet()
    assert not app.windowIcon().isNull()
    style.apply_style(app, dark=False)
    assert app.palette().color(QPalette.ColorRole.Window).lightness() > 128
    assert QGuiApplication.desktopFileName() == "alltalk-gui"
    # With a style sheet set, app.style() is Qt's sheet wrapper; the base style shows once the sheet is gone.
    app.setStyleSheet("")
    assert app.style().name().lower() == "fusion"
    app.setPalette(app.style().standardPalette())


def test_splash_shows_the_name_and_what_is_loading(qtbot):
    splash = StartupSplash()
    qtbot.addWidget(splash)
    splash.show()
    splash.show_message("Loading the interface…")
    assert splash.message().strip() == "Loading the interface…"
    assert not splash.pixmap().isNull()


def test_the_sidebar_shows_when_it_has_the_keyboard_focus(qtbot, tmp_path):
    """The sheet's ``outline: none`` hid Qt's focus rectangle: tabbing into the sidebar showed nothing at all."""
    from alltalk_gui.core.project.folder import VoiceProject
    from alltalk_gui.gui.main_window import MainWindow

    app = QApplication.instance()
    style.apply_style(app, dark=False)
    try:
        window = MainWindow()
        qtbot.addWidget(window)
        window.show()
        qtbot.waitExposed(window)
        window.activateWindow()
        assert window.open_project(str(VoiceProject.create(tmp_path / "voice").root))
        window.import_page.setFocus()
        qtbot.waitUntil(lambda: not window.sidebar.hasFocus())
        unfocused = window.sidebar.grab().toImage()
        window.sidebar.setFocus()
        qtbot.waitUntil(window.sidebar.hasFocus)
        assert window.sidebar.grab().toImage() != unfocused
    finally:
        app.setStyleSheet("")
        app.setPalette(app.style().standardPalette())
