"""The transcript editor keeps the user's place (issue #17): the selection survives every edit and undo, Find
moves between matches, undo names the clip by its words, every action is in the Edit menu, Tab leaves the table."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.gui.test_transcript_editor import TEXTS, page, project  # noqa: F401 - the fixtures


def selected_ids(editor) -> list[str]:
    rows = editor.table.selectionModel().selectedRows()
    return [editor.model.segment(index.row()).id for index in rows]


def test_the_selection_stays_after_merge_split_and_undo(page, qtbot):
    editor = page.editor
    editor.select("c00002")
    editor.merge_action.trigger()
    qtbot.wait(10)
    assert selected_ids(editor) == ["c00002"] and editor.table.currentIndex().row() == 1
    assert editor.previous_action.isEnabled() and editor.next_action.isEnabled()
    editor.next_action.trigger()
    assert editor.current_id == "c00004"  # the clip after the merged one, not clip 1
    editor.previous_action.trigger()
    editor.undo_action.trigger()
    qtbot.wait(10)
    assert selected_ids(editor) == ["c00002"]
    editor.waveform.set_cursor_ms(6000)
    editor.split_action.trigger()
    qtbot.wait(10)
    assert len(selected_ids(editor)) == 1 and editor.table.currentIndex().row() == 1


def test_undo_names_the_clip_by_its_words_and_keeps_its_width(page):
    editor = page.editor
    editor.select("c00002")
    width = editor.toolbar.widgetForAction(editor.undo_action).sizeHint().width()
    editor.merge_action.trigger()
    assert editor.undo_action.text() == "Undo"
    assert "“A second sentence" in editor.undo_action.toolTip() and "c0000" not in editor.undo_action.toolTip()
    assert editor.toolbar.widgetForAction(editor.undo_action).sizeHint().width() == width


def test_find_moves_between_matches_with_enter(page, qtbot):
    editor = page.editor
    editor.find_edit.setFocus()
    qtbot.keyClicks(editor.find_edit, "th")
    assert editor.find_count.text() == "3 clips"
    qtbot.keyClick(editor.find_edit, Qt.Key.Key_Return)
    assert editor.current_id == "c00001" and editor.find_count.text() == "1 of 3"
    qtbot.keyClick(editor.find_edit, Qt.Key.Key_Return)
    assert editor.current_id == "c00003" and editor.find_count.text() == "2 of 3"
    editor.find_next_action.trigger()
    assert editor.current_id == "c00004"
    editor.find_next_action.trigger()  # wraps round
    assert editor.current_id == "c00001"
    editor.find_previous_action.trigger()
    assert editor.current_id == "c00004"
    # The matching clips are shown in bold in the table.
    font = editor.model.index(1, 5).data(Qt.ItemDataRole.FontRole)
    assert editor.model.index(0, 5).data(Qt.ItemDataRole.FontRole).bold() and (font is None or not font.bold())


def test_tab_leaves_the_table_and_the_toolbar_is_in_the_tab_order(page):
    editor = page.editor
    assert not editor.table.tabKeyNavigation()
    for action in (editor.play_action, editor.merge_action, editor.undo_action):
        assert editor.toolbar.widgetForAction(action).focusPolicy() & Qt.FocusPolicy.TabFocus


def test_every_action_is_listed_with_its_shortcut(page):
    listed = {action.text(): action.shortcut().toString() for action in page.editor.menu_actions() if action.text()}
    assert listed["Merge with next"] == "Ctrl+M" and listed["Split"] == "Ctrl+B" and listed["Undo"] == "Ctrl+Z"
    assert listed["Find next"] == "F3" and listed["Edit text"] == "F2"


def test_the_edit_menu_lists_the_editor_actions_on_the_transcript_step(qtbot, project,  # noqa: F811
                                                                       monkeypatch, tmp_path):
    from alltalk_gui.gui.main_window import MainWindow

    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    window = MainWindow()
    qtbot.addWidget(window)
    menu = window.edit_menu
    assert not menu.isEnabled()
    window.set_project(project)
    window.sidebar.setCurrentRow(1)
    assert menu.isEnabled()
    texts = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert {"Undo", "Redo", "Edit text", "Split", "Merge with next", "Find next", "Replace all"} <= set(texts)
    window.sidebar.setCurrentRow(0)
    assert not menu.isEnabled()
    window.pages[1].shutdown()


def test_undo_and_redo_start_disabled_and_name_the_edit(page):
    editor = page.editor
    assert not editor.undo_action.isEnabled() and not editor.redo_action.isEnabled()
    editor.select("c00001")
    editor.delete_action.trigger()
    assert editor.undo_action.isEnabled()
    assert editor.undo_action.toolTip() == "Undo delete “The quick brown fox…” (Ctrl+Z)"
    editor.undo_action.trigger()
    assert editor.redo_action.isEnabled() and "“The quick brown fox…”" in editor.redo_action.toolTip()
