"""The app on a small screen (the walk of 2026-11-26 found a 1100x720 window on a 1024x700 screen, its right edge
and status bar off-screen): the first size comes from the screen's free area, a saved geometry is clamped to it,
and at 1024x600 every page shows its essential controls without scrolling sideways."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QByteArray, QPoint, QRect
from PySide6.QtWidgets import QAbstractScrollArea, QApplication, QScrollArea, QWidget

from alltalk_gui.core.machine.gpu import DeviceInfo
from alltalk_gui.gui import settings
from alltalk_gui.gui.main_window import MainWindow
from tests.gui.walked_project import fake_run, walked_project

SMALL = QRect(0, 0, 1024, 600)


def _window(qtbot, monkeypatch, area: QRect = SMALL) -> MainWindow:
    monkeypatch.setattr(MainWindow, "screen_area", lambda self: area)
    window = MainWindow()
    qtbot.addWidget(window)
    return window


def test_the_first_size_fits_the_screens_free_area(qtbot, monkeypatch):
    window = _window(qtbot, monkeypatch, QRect(0, 24, 1024, 576))  # a 1024x600 screen with a 24 px panel
    frame_w, frame_h = 8, 36  # the frame assumed before the window manager has framed the window
    assert window.width() <= 1024 - frame_w and window.height() <= 576 - frame_h
    assert window.x() >= 0 and window.y() >= 24
    roomy = _window(qtbot, monkeypatch, QRect(0, 0, 1920, 1080))
    assert (roomy.width(), roomy.height()) == (1100, 720)  # the preferred size where it fits


def test_a_saved_geometry_from_a_bigger_screen_is_clamped(qtbot, monkeypatch):
    big = _window(qtbot, monkeypatch, QRect(0, 0, 2560, 1440))
    big.resize(1800, 1200)
    big.move(600, 200)
    settings.settings().setValue("window/geometry", big.saveGeometry())
    assert isinstance(settings.settings().value("window/geometry"), QByteArray)
    window = _window(qtbot, monkeypatch)
    assert window.width() <= 1016 and window.height() <= 564
    assert window.x() + window.width() + 8 <= 1024 and window.y() + window.height() + 36 <= 600


def test_the_minimum_size_allows_a_1024x600_screen(qtbot, monkeypatch, tmp_path):
    window = _window(qtbot, monkeypatch)
    hint = window.minimumSizeHint()
    assert hint.width() <= 1016 and hint.height() <= 540, hint


@pytest.fixture
def small_window(qtbot, monkeypatch, tmp_path):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    project = walked_project(tmp_path)
    fake_run(project, "run_20261126_120147", "xtts", 30, finished=True, eval_losses=(3.92, 3.85, 3.8, 3.7, 3.63))
    window = _window(qtbot, monkeypatch)
    window.train_page.setup.set_devices([DeviceInfo("cpu", 0, "AMD EPYC 7B13", 23.5, 19.2, False, cores=2)])
    window.show()
    qtbot.waitExposed(window)
    window.resize(1024 - 8, 600 - 36)  # the window inside its frame on a 1024x600 screen
    assert window.open_project(str(project.root))
    yield window
    window.transcript_page.shutdown()
    window.set_project(None)


def _scroll_area_of(widget: QWidget) -> QScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):
            return parent
        parent = parent.parentWidget()
    return None


def _fully_visible(window: MainWindow, widget: QWidget) -> bool:
    """The widget is shown and lies inside the window; inside a (vertically) scrolling page, once scrolled to."""
    if not widget.isVisibleTo(window):
        return False
    area = _scroll_area_of(widget)
    if area is not None:
        area.ensureWidgetVisible(widget, 0, 0)
        QApplication.processEvents()
        viewport = QRect(area.viewport().mapTo(window, QPoint(0, 0)), area.viewport().size())
    else:
        viewport = window.centralWidget().geometry()
    rect = QRect(widget.mapTo(window, QPoint(0, 0)), widget.size())
    return viewport.contains(rect)


def _no_sideways_scrolling(page: QWidget) -> bool:
    return all(not area.horizontalScrollBar().isVisible() for area in page.findChildren(QAbstractScrollArea))


def test_every_page_shows_its_essential_controls_at_1024x600(qtbot, small_window):
    window = small_window
    window.sidebar.setCurrentRow(0)
    qtbot.wait(50)
    assert (window.width(), window.height()) == (1016, 564)
    imp = window.import_page
    essentials = {0: [imp.table, imp.add_files_button, imp.add_folder_button],
                  1: [window.transcript_page.panel.transcribe_button, window.transcript_page.editor.filter_combo,
                      window.transcript_page.editor.table, window.transcript_page.editor.waveform,
                      window.transcript_page.editor.find_edit, window.transcript_page.export_button],
                  2: [*window.train_page.setup.engine_choice.buttons.values(),
                      *window.train_page.setup.picker.buttons.values(), window.train_page.run.start_button,
                      window.train_page.run.resume_button, window.train_page.run.progress,
                      window.train_page.run.loss_plot],
                  3: [window.preview_page.checkpoint_box, window.preview_page.text_box,
                      window.preview_page.generate_button, window.preview_page.compare_button,
                      window.preview_page.export_panel.format, window.preview_page.export_panel.folder,
                      window.preview_page.export_panel.button]}
    for row, widgets in essentials.items():
        window.sidebar.setCurrentRow(row)
        qtbot.wait(100)
        page = window.stack.currentWidget()
        assert page is window.pages[row]
        hidden = [w.objectName() or type(w).__name__ + (f" '{w.text()}'" if hasattr(w, "text") else "")
                  for w in widgets if not _fully_visible(window, w)]
        assert not hidden, f"step {row + 1}: not (fully) visible at 1024x600: {hidden}"
        assert _no_sideways_scrolling(page), f"step {row + 1} scrolls sideways at 1024x600"
        assert page.width() >= page.minimumSizeHint().width()
    window.set_project(None)
    for button in window.welcome.findChildren(QWidget):
        if hasattr(button, "text") and button.text() in ("New voice project…", "Open project…"):
            assert _fully_visible(window, button)


def test_the_editors_columns_fit_and_a_flag_reads_whole_at_1024x600(qtbot, small_window):
    from alltalk_gui.gui.transcript.segments_model import FLAG_LABEL, Column

    small_window.sidebar.setCurrentRow(1)
    qtbot.wait(100)
    table = small_window.transcript_page.editor.table
    header = table.horizontalHeader()
    # The flags arrive after the rows; the column was sized before and cut "clipped" to "clip..." (walk at 1024 px).
    longest = max(table.fontMetrics().horizontalAdvance(label) for label in FLAG_LABEL.values())
    assert header.sectionSize(Column.FLAGS) > longest
    assert header.length() <= table.viewport().width()  # and the text column gives way, not the window


# 1366x768 at 150 % scaling: 911x512 logical pixels, less Windows 11's 48 px taskbar. The walk of 2026-11-27 found
# Transcribe & edit 939 px wide and 509 px high at its minimum (its four choices' and button's row, the editor's
# 150 px waveform under a table of any height), so the window could not fit that screen.
LAPTOP_150 = QRect(0, 0, 911, 512 - 48)


def test_transcribe_and_edit_fits_a_1366x768_laptop_at_150_percent(qtbot, monkeypatch, tmp_path):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    project = walked_project(tmp_path)
    window = _window(qtbot, monkeypatch, LAPTOP_150)
    window.show()
    qtbot.waitExposed(window)
    assert window.open_project(str(project.root))
    window.sidebar.setCurrentRow(1)
    frame_w, frame_h = 8, 36
    window.resize(LAPTOP_150.width() - frame_w, LAPTOP_150.height() - frame_h)
    qtbot.wait(100)
    page = window.transcript_page
    hint = window.minimumSizeHint()
    assert hint.width() + frame_w <= 911 and hint.height() + frame_h <= 464, hint
    assert (window.width(), window.height()) == (903, 428)
    assert page.width() >= page.minimumSizeHint().width() and _no_sideways_scrolling(page)
    editor = page.editor
    essentials = [page.panel.transcribe_button, editor.filter_combo, editor.find_edit, editor.table,
                  editor.waveform, page.export_button]
    hidden = [type(w).__name__ for w in essentials if not _fully_visible(window, w)]
    assert not hidden, f"not (fully) visible once scrolled to at 911x464: {hidden}"
    # The editor is never squeezed out: scrolled to it, the table (three rows at least) and the waveform are in
    # view together, so a clip can be picked, heard and its edges dragged without scrolling the page between.
    page.page_scroll.ensureWidgetVisible(editor.table, 0, 0)
    qtbot.wait(50)
    assert _fully_visible(window, editor.waveform) and _fully_visible(window, editor.table)
    rows = editor.table.viewport().height() / editor.table.verticalHeader().defaultSectionSize()
    assert rows >= 3, rows
    page.shutdown()
    window.set_project(None)
