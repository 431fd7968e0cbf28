"""Links in labels the keyboard reaches (the walk of 2026-11-27): the Train page's "1 flagged clip in it" could be
followed with the mouse only; now Tab stops on it and Enter opens the flagged clips in the editor."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.gui.walked_project import walked_window


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    with walked_window(qtbot, tmp_path) as window:
        yield window


@pytest.mark.timeout(60)
def test_tab_reaches_the_flagged_clips_link_and_enter_follows_it(window, qtbot):
    window.sidebar.setCurrentRow(2)
    setup = window.train_page.setup
    qtbot.waitUntil(lambda: "flagged clip" in setup.dataset_label.text())
    assert "<a " in setup.dataset_label.text()
    window.sidebar.setFocus()
    qtbot.waitUntil(window.sidebar.hasFocus)
    for _ in range(8):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        if QApplication.focusWidget() is setup.dataset_label:
            break
    else:
        pytest.fail("Tab never reached the dataset's flagged-clips link")
    qtbot.keyClick(setup.dataset_label, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.stack.currentWidget() is window.transcript_page, timeout=5000)
    assert window.transcript_page.editor.filter_combo.currentData() == "flagged"


def test_a_label_without_a_link_is_no_tab_stop(window, qtbot):
    window.sidebar.setCurrentRow(2)
    label = window.train_page.setup.dataset_label
    label.setText("8 training clips, no flagged clips.")
    from alltalk_gui.gui.common.label_links import links_by_keyboard

    links_by_keyboard(label)
    assert label.focusPolicy() == Qt.FocusPolicy.NoFocus
