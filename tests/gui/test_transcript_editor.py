"""The transcript editor driven like a user would (qtbot, offscreen): every edit, undo/redo, filters, the
waveform drag, shortcuts; after each test the project is reopened from disk to check that everything was saved."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from alltalk_gui.core.project.duration_guidance import format_duration
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentList
from alltalk_gui.gui.transcript.segments_model import Column
from alltalk_gui.gui.transcript.transcript_text import caret_for_time
from alltalk_gui.gui.transcript.transcript_page import TranscriptPage
from alltalk_gui.gui.transcript.clip_player import ClipPlayer
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like

TEXTS = ["The quick brown fox jumps over it.", "A second sentence follows here.", "Third one is spoken slowly now.",
         "Another file starts with this."]


@pytest.fixture
def project(tmp_path):
    project = make_project(tmp_path)
    add_source(project, "first take.wav", voice_like(30.0))
    add_source(project, "second.flac", voice_like(20.0, seed=1))
    SegmentList.create(project, [
        segment("c00001", "s001", 0, 4000, TEXTS[0]),
        segment("c00002", "s001", 4000, 8000, TEXTS[1]),
        segment("c00003", "s001", 9000, 13000, TEXTS[2]),
        segment("c00004", "s002", 1000, 5000, TEXTS[3]),
    ])
    return project


@pytest.fixture
def page(qtbot, project):
    page = TranscriptPage()
    qtbot.addWidget(page)
    page.resize(1100, 750)
    page.show()
    qtbot.waitExposed(page)
    page.set_project(project)
    yield page
    page.shutdown()


def reopened(project) -> dict[str, dict]:
    """The clips as a fresh process would see them: project and segments.json read again from disk."""
    fresh = SegmentList.open(VoiceProject.open(project.root))
    return {s.id: s for s in fresh}


def texts(page) -> list[str]:
    return [page.editor.model.index(r, Column.TEXT).data() for r in range(page.editor.model.rowCount())]


def test_opening_a_project_shows_its_clips_and_summary(page):
    editor = page.editor
    assert texts(page) == TEXTS
    assert editor.model.index(0, Column.FILE).data() == "first take.wav"
    assert editor.model.index(3, Column.FILE).data() == "second.flac"
    assert editor.model.index(2, Column.START).data() == "9.00"
    assert editor.model.index(2, Column.LENGTH).data() == "4.0 s"
    assert editor.current_id == "c00001"
    assert editor.waveform.segment.id == "c00001" and editor.waveform.region.isVisible()
    # The waveform shows the audio around the clip, with its neighbours shaded.
    editor.select("c00002")
    x, _y = editor.waveform.curve.getData()
    assert x.min() < 3.0 and x.max() > 9.0
    assert [n.getRegion() for n in editor.waveform.neighbours] == [(0.0, 4.0), (9.0, 13.0)]
    editor.select("c00001")
    summary = editor.summary.text()
    assert "4 clips" in summary and f"{format_duration(16.0)} kept" in summary and "3-minute minimum" in summary
    assert page.panel.transcribe_button.text() == "Transcribe again"
    assert page.export_button.isEnabled()


def test_edit_text_in_place_then_undo_and_redo(page, qtbot, project):
    editor = page.editor
    index = editor.model.index(1, Column.TEXT)
    editor.table.setCurrentIndex(index)
    editor.table.edit(index)
    line = editor.text_delegate.editor
    assert line is not None and line.text() == TEXTS[1]
    line.selectAll()
    qtbot.keyClicks(line, "A corrected   sentence.")
    qtbot.keyClick(line, Qt.Key.Key_Return)  # Qt commits the editor's text on its next event-loop turn
    qtbot.waitUntil(lambda: editor.segments["c00002"].text == "A corrected sentence.")  # spaces normalised
    assert reopened(project)["c00002"].text == "A corrected sentence."
    assert texts(page)[1] == "A corrected sentence."

    editor.undo_action.trigger()
    assert reopened(project)["c00002"].text == TEXTS[1]
    editor.redo_action.trigger()
    assert reopened(project)["c00002"].text == "A corrected sentence."


def test_split_at_the_cursor_with_the_text_split_at_the_caret(page, project):
    editor = page.editor
    editor.select("c00001")
    editor.waveform.set_cursor_ms(1500)
    index = editor.model.index(0, Column.TEXT)
    editor.table.edit(index)
    line = editor.text_delegate.editor
    line.setText("The  quick brown fox jumps over it!")  # typed, not yet committed
    line.setCursorPosition(len("The  quick brown"))
    editor.split_action.trigger()

    clips = reopened(project)
    assert (clips["c00001"].start_ms, clips["c00001"].end_ms, clips["c00001"].text) == (0, 1500, "The quick brown")
    second = [s for s in clips.values() if s.start_ms == 1500][0]
    assert (second.end_ms, second.text) == (4000, "fox jumps over it!")
    assert texts(page)[:2] == ["The quick brown", "fox jumps over it!"]
    assert editor.current_id == "c00001"

    # The typed text and the split are one step: a single undo brings the original clip back.
    editor.undo_action.trigger()
    clips = reopened(project)
    assert (clips["c00001"].end_ms, clips["c00001"].text) == (4000, TEXTS[0])
    assert second.id not in clips


def test_split_without_a_caret_follows_the_word_timings(page, project):
    editor = page.editor
    editor.select("c00002")
    clip = editor.segments["c00002"]
    words = clip.words_inside()
    between = (words[2].end_ms + words[3].start_ms) // 2  # after "A second sentence"
    editor.waveform.set_cursor_ms(between)
    editor.split_action.trigger()
    clips = reopened(project)
    assert clips["c00002"].text == "A second sentence"
    assert any(s.text == "follows here." and s.start_ms == between for s in clips.values())


def test_split_refuses_a_cursor_outside_the_clip(page, project):
    editor = page.editor
    messages = []
    editor.status_message.connect(messages.append)
    editor.select("c00003")
    editor.waveform.set_cursor_ms(500)
    editor.split_action.trigger()
    assert len(reopened(project)) == 4
    assert "cursor inside the clip" in messages[-1]


def test_merge_with_next_and_the_refusal_at_the_end_of_a_file(page, project):
    editor = page.editor
    messages = []
    editor.status_message.connect(messages.append)
    editor.select("c00002")
    editor.merge_action.trigger()
    clips = reopened(project)
    assert "c00003" not in clips
    assert (clips["c00002"].start_ms, clips["c00002"].end_ms) == (4000, 13000)
    assert clips["c00002"].text == f"{TEXTS[1]} {TEXTS[2]}"
    assert editor.current_id == "c00002"

    editor.select("c00004")  # the last clip of second.flac
    editor.merge_action.trigger()
    assert "nothing after it to merge with" in messages[-1]
    editor.select("c00002")
    editor.undo_action.trigger()
    assert set(reopened(project)) == {"c00001", "c00002", "c00003", "c00004"}


def test_delete_shows_in_the_deleted_filter_and_restores(page, project):
    editor = page.editor
    editor.select("c00003")
    editor.delete_action.trigger()
    assert reopened(project)["c00003"].deleted
    assert editor.model.index(2, Column.FLAGS).data() == "deleted"
    assert "3 clips" in editor.summary.text() and "1 deleted" in editor.summary.text()

    editor.filter_combo.setCurrentIndex(editor.filter_combo.findData("kept"))
    assert texts(page) == [TEXTS[0], TEXTS[1], TEXTS[3]]
    editor.filter_combo.setCurrentIndex(editor.filter_combo.findData("deleted"))
    assert texts(page) == [TEXTS[2]]
    assert editor.current_id == "c00003"
    assert editor.delete_action.text() == "Restore"
    editor.delete_action.trigger()
    assert not reopened(project)["c00003"].deleted
    assert editor.model.rowCount() == 0  # nothing left in the "deleted" view
    editor.filter_combo.setCurrentIndex(editor.filter_combo.findData("all"))
    assert texts(page) == TEXTS


def test_flagged_filter_and_sorting(page, qtbot, project):
    editor = page.editor
    editor.select("c00004")
    editor.waveform.set_cursor_ms(2000)
    editor.split_action.trigger()  # 1.0 s + 3.0 s: the first part is too short
    editor.filter_combo.setCurrentIndex(editor.filter_combo.findData("flagged"))
    assert editor.model.rowCount() == 1
    assert editor.model.index(0, Column.FLAGS).data() == "short"
    assert "shorter than" in editor.model.index(0, Column.FLAGS).data(Qt.ItemDataRole.ToolTipRole)
    editor.filter_combo.setCurrentIndex(editor.filter_combo.findData("all"))
    editor.sort_combo.setCurrentIndex(editor.sort_combo.findText("Shortest first"))
    lengths = [float(editor.model.index(r, Column.LENGTH).data().split()[0]) for r in range(5)]
    assert lengths == sorted(lengths) and lengths[0] == 1.0
    # A click on the Length header sorts by length, a second click the other way round.
    editor.sort_combo.setCurrentIndex(editor.sort_combo.findText("Time"))
    header = editor.table.horizontalHeader()
    for expected in ("Shortest first", "Longest first"):
        qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                         pos=QPoint(header.sectionViewportPosition(Column.LENGTH) + 5, header.height() // 2))
        assert editor.sort_combo.currentText() == expected
    lengths = [float(editor.model.index(r, Column.LENGTH).data().split()[0]) for r in range(5)]
    assert lengths == sorted(lengths, reverse=True)


def _drag(plot, start: QPointF, end: QPointF) -> None:
    """A real left-button drag on the plot's viewport, in scene coordinates."""
    viewport = plot.viewport()
    a = plot.mapFromScene(start)
    b = plot.mapFromScene(end)
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    no_mod = Qt.KeyboardModifier.NoModifier

    def send(kind, pos: QPoint, button, buttons):
        event = QMouseEvent(kind, QPointF(pos), QPointF(viewport.mapToGlobal(pos)), button, buttons, no_mod)
        QApplication.sendEvent(viewport, event)

    send(QMouseEvent.Type.MouseButtonPress, a, left, left)
    steps = 10
    for i in range(1, steps + 1):
        p = a + (b - a) * (i / steps)
        send(QMouseEvent.Type.MouseMove, p, none, left)
    send(QMouseEvent.Type.MouseButtonRelease, b, left, none)


def test_dragging_the_end_boundary_trims_the_clip(page, qtbot, project):
    editor = page.editor
    editor.select("c00002")  # 4.0-8.0 s; the next clip starts at 9.0 s
    waveform = editor.waveform
    vb = waveform.plot.getPlotItem().vb
    y = 0.5
    start = vb.mapViewToScene(QPointF(8.0, y))
    end = vb.mapViewToScene(QPointF(8.5, y))
    _drag(waveform.plot, start, end)
    clip = reopened(project)["c00002"]
    assert clip.start_ms == 4000
    assert abs(clip.end_ms - 8500) < 60  # within a pixel or two of where the mouse let go
    assert editor.model.index(1, Column.END).data() == f"{clip.end_ms / 1000:.2f}"

    # The drag cannot reach into the next clip: its start is the limit. The event loop runs first, as it does
    # between a person's two drags: without it the second press missed the boundary in 1 of 6 runs on a loaded
    # machine (and once in CI), none in 8 with it.
    qtbot.wait(50)
    _drag(waveform.plot, vb.mapViewToScene(QPointF(clip.end_ms / 1000, y)), vb.mapViewToScene(QPointF(10.5, y)))
    assert reopened(project)["c00002"].end_ms == 9000
    editor.undo_action.trigger()
    editor.undo_action.trigger()
    assert reopened(project)["c00002"].end_ms == 8000
    assert waveform.region.getRegion() == pytest.approx((4.0, 8.0))


def test_find_and_replace_across_the_project_is_one_undo_step(page, project):
    editor = page.editor
    editor.find_edit.setText("sentence")
    assert editor.find_count.text() == "1 clip"
    editor.find_edit.setText("th")
    assert editor.find_count.text() == "3 clips"
    editor.replace_edit.setText("TH")
    editor.replace_action.trigger()
    clips = reopened(project)
    assert clips["c00001"].text == "THe quick brown fox jumps over it."
    assert clips["c00004"].text == "AnoTHer file starts wiTH THis."
    editor.undo_action.trigger()
    assert [s.text for s in reopened(project).values()] == TEXTS


def test_keyboard_shortcuts(page, qtbot, project):
    editor = page.editor
    page.activateWindow()
    editor.table.setFocus()
    editor.select("c00001")
    qtbot.keyClick(editor.table, Qt.Key.Key_Down, Qt.KeyboardModifier.ControlModifier)
    assert editor.current_id == "c00002"
    qtbot.keyClick(editor.table, Qt.Key.Key_Delete)
    assert reopened(project)["c00002"].deleted
    qtbot.keyClick(editor.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert not reopened(project)["c00002"].deleted
    qtbot.keyClick(editor.table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert reopened(project)["c00002"].deleted
    qtbot.keyClick(editor.table, Qt.Key.Key_Up, Qt.KeyboardModifier.ControlModifier)
    assert editor.current_id == "c00001"
    qtbot.keyClick(editor.table, Qt.Key.Key_M, Qt.KeyboardModifier.ControlModifier)
    # c00002 is deleted and lies between: the core refuses, nothing changes.
    assert set(reopened(project)) == {"c00001", "c00002", "c00003", "c00004"}


@pytest.mark.timeout(60)
def test_space_plays_the_clip_and_the_cursor_follows(page, qtbot):
    editor = page.editor
    page.activateWindow()
    editor.table.setFocus()
    editor.select("c00003")
    qtbot.keyClick(editor.table, Qt.Key.Key_Space)
    assert editor.player.current == "c00003"
    assert editor.play_action.text() == "Stop"
    qtbot.waitUntil(lambda: editor.waveform.cursor_ms > 9100, timeout=10000)
    qtbot.keyClick(editor.table, Qt.Key.Key_Space)
    assert editor.player.current == ""
    stopped = editor.waveform.cursor_ms
    assert 9000 < stopped < 13000  # split would now cut here


def test_caret_for_time_counts_words_or_falls_back_to_the_nearest_space():
    clip = segment("c1", "s1", 0, 4000, "one two three four")  # words 300 ms long, 100 ms apart, from 50 ms
    assert caret_for_time(clip, 420) == len("one")
    assert caret_for_time(clip, 20) == 0
    edited = segment("c1", "s1", 0, 4000, "one two three four five six", words=())
    assert caret_for_time(edited, 2000) == len("one two three")


def test_merge_keeps_text_typed_but_not_yet_committed(page, project):
    editor = page.editor
    editor.select("c00001")
    editor.table.edit(editor.model.index(0, Column.TEXT))
    editor.text_delegate.editor.setText("The quick brown fox jumped.")
    editor.merge_action.trigger()  # a toolbar click while typing: the typed text goes in first
    assert reopened(project)["c00001"].text == f"The quick brown fox jumped. {TEXTS[1]}"
    editor.undo_action.trigger()  # one step undoes both
    clips = reopened(project)
    assert clips["c00001"].text == TEXTS[0] and clips["c00002"].text == TEXTS[1]


def test_a_damaged_segments_file_is_reported_and_left_alone(qtbot, project):
    project.segments_file.write_text('{"segments": [', encoding="utf-8")
    page = TranscriptPage()
    qtbot.addWidget(page)
    page.set_project(project)
    assert page.notice_box.isVisibleTo(page)
    assert "segments.json is not valid JSON" in page.notice.text()
    assert page.editor.model.rowCount() == 0
    assert project.segments_file.read_text(encoding="utf-8") == '{"segments": ['


def test_the_clip_players_temporary_files_go_with_it(qtbot, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where TemporaryDirectory makes its folders
    player = ClipPlayer()
    assert not list(tmp_path.glob("alltalk-clip-*"))  # nothing until a clip plays
    player.play(np.zeros(2205, dtype=np.float32), 22050, 0, "c1")
    (folder,) = tmp_path.glob("alltalk-clip-*")
    assert any(folder.glob("clip*.wav"))
    player.stop()
    player.deleteLater()
    qtbot.waitUntil(lambda: not folder.exists(), timeout=5000)
