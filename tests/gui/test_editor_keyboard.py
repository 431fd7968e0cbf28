"""The editor's shortcuts work as soon as its page is opened from the sidebar (the walk of 2026-11-26: Ctrl+F, F2,
Ctrl+Z and Space did nothing until a click into the table, because the focus stayed in the sidebar)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QToolButton

from tests.gui.walked_project import walked_window


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    with walked_window(qtbot, tmp_path) as window:
        yield window


def _open_editor_from_the_sidebar(window, qtbot) -> None:
    sidebar = window.sidebar
    rect = sidebar.visualItemRect(sidebar.item(1))
    qtbot.mouseClick(sidebar.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.stack.currentWidget() is window.transcript_page
    qtbot.waitUntil(window.transcript_page.editor.table.hasFocus, timeout=5000)


@pytest.mark.timeout(60)
def test_the_shortcuts_work_right_after_opening_the_page(window, qtbot):
    editor = window.transcript_page.editor
    _open_editor_from_the_sidebar(window, qtbot)

    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)  # Find
    assert editor.find_edit.hasFocus()

    window.sidebar.setCurrentRow(0)  # another step, then back: the focus goes to the table again
    _open_editor_from_the_sidebar(window, qtbot)
    first = editor.current_id
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_F2)  # edit the text in place
    assert editor.text_delegate.editor is not None
    typed = editor.text_delegate.editor
    typed.selectAll()
    qtbot.keyClicks(typed, "Typed at once.")
    qtbot.keyClick(typed, Qt.Key.Key_Return)  # Qt commits the editor's text on its next event-loop turn
    qtbot.waitUntil(lambda: editor.segments[first].text == "Typed at once.", timeout=5000)
    qtbot.waitUntil(editor.table.hasFocus, timeout=5000)

    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)  # Undo
    assert editor.segments[first].text != "Typed at once."

    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Space)  # Play
    assert editor.player.current == first
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Space)  # Stop
    assert editor.player.current == ""


@pytest.mark.timeout(60)
def test_tab_stops_only_at_controls_in_the_editor(window, qtbot):
    """Tab from the clip table round the page: each stop is something to press, type in or choose (the toolbar's
    separators were stops of their own, 6 px wide, with nothing to show the focus)."""
    _open_editor_from_the_sidebar(window, qtbot)
    editor = window.transcript_page.editor
    stops = []
    for _ in range(60):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        widget = QApplication.focusWidget()
        if widget is editor.table:
            break
        stops.append(widget)
    else:
        pytest.fail("Tab never came back to the clip table")
    in_toolbar = [w for w in stops if editor.toolbar.isAncestorOf(w)]
    assert in_toolbar, "the toolbar's buttons are in the Tab order"
    for widget in in_toolbar:
        assert isinstance(widget, QToolButton) and widget.text(), f"Tab stopped on {widget!r}"
        assert widget.width() > 10
