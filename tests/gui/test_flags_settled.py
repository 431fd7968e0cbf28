"""Flags a new user can settle (the walk of 2026-11-26: 14 of 54 clean clips flagged "probably not speech (p =
0.75)", a corrected text kept its flag, nothing cleared one, the dataset export took flagged clips in silently,
and the Train page's orange count looked like a link but did nothing)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentList
from alltalk_gui.gui.transcript.segments_model import Column
from tests.gui.walked_project import walked_window

FLAGGED = "c00003"  # Whisper unsure of its words and of the speech (walked_project)


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    with walked_window(qtbot, tmp_path) as window:
        window.sidebar.setCurrentRow(1)
        yield window


def _saved(window) -> dict:
    return {s.id: s for s in SegmentList.open(VoiceProject.open(window.project.root), audio=None)}


def test_the_flag_reads_plainly(window):
    editor = window.transcript_page.editor
    row = editor.model.row_of(FLAGGED)
    assert editor.model.index(row, Column.FLAGS).data() == "unsure, may not be speech"
    tip = editor.model.index(row, Column.FLAGS).data(Qt.ItemDataRole.ToolTipRole)
    assert "p =" not in tip and "Whisper" in tip and "Looks fine" in tip


def test_looks_fine_clears_the_flags_undoably(window, qtbot):
    editor = window.transcript_page.editor
    editor.show_filter("flagged")
    assert [editor.model.segment(r).id for r in range(editor.model.rowCount())] == [FLAGGED]
    assert editor.accept_action.isEnabled() and editor.accept_action.shortcut().toString() == "Ctrl+L"
    editor.table.setFocus()
    qtbot.keyClick(editor.table, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    assert editor.model.rowCount() == 0  # nothing flagged is left to show
    saved = _saved(window)[FLAGGED]
    assert saved.flags == () and set(saved.accepted) == {"low_confidence", "non_speech"}
    assert "flagged" not in editor.summary.text()
    assert editor.undo_action.toolTip().startswith("Undo mark “Taste as you go,")
    editor.undo_action.trigger()
    assert _saved(window)[FLAGGED].flag_codes == ("low_confidence", "non_speech")
    assert editor.model.rowCount() == 1 and "1 flagged" in editor.summary.text()


def test_a_corrected_text_clears_the_flags_it_no_longer_explains(window, qtbot):
    editor = window.transcript_page.editor
    row = editor.model.row_of(FLAGGED)
    editor.model.setData(editor.model.index(row, Column.TEXT), "Taste as you go, and add the salt a little at a time.",
                         Qt.ItemDataRole.EditRole)
    clips = window.transcript_page.segments
    qtbot.waitUntil(lambda: not clips.text_checks_pending, timeout=180000)
    assert clips[FLAGGED].flags == ()  # a person wrote the words: Whisper's doubts about its own are moot
    assert _saved(window)[FLAGGED].flags == ()


def test_the_export_says_how_many_flagged_clips_go_in_and_shows_them(window, qtbot, monkeypatch):
    page = window.transcript_page
    boxes = []

    def show_them(box):
        boxes.append(box.text())
        next(b for b in box.buttons() if b.text() == "Show the flagged clips").click()
        return 0

    monkeypatch.setattr(QMessageBox, "exec", show_them)
    page.export_button.click()
    qtbot.waitUntil(lambda: bool(boxes), timeout=60000)
    assert "1 clip in it is still flagged" in boxes[0] and "Looks fine" in boxes[0]
    assert page.editor.filter_combo.currentData() == "flagged"
    assert page.editor.current_id == FLAGGED
    qtbot.waitUntil(page.editor.table.hasFocus, timeout=5000)


def test_the_train_pages_flagged_count_opens_the_editor_on_them(window, qtbot):
    window.sidebar.setCurrentRow(2)
    label = window.train_page.setup.dataset_label
    assert "1 flagged clip in it" in label.text() and "<a href='flagged'" in label.text()
    label.linkActivated.emit("flagged")
    assert window.stack.currentWidget() is window.transcript_page
    editor = window.transcript_page.editor
    assert editor.filter_combo.currentData() == "flagged" and editor.current_id == FLAGGED
    qtbot.waitUntil(editor.table.hasFocus, timeout=5000)
    # Settled: the Train page says so when it is shown again.
    editor.accept_flags()
    window.sidebar.setCurrentRow(2)
    assert "no flagged clips" in label.text()
