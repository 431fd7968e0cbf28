"""The editor at scale: edits touch only their rows, and the page readies the first edit off the GUI thread.

A text edit in the time view must not reset the table (a reset makes Qt ask for every cell again); edits that add
or remove rows still do. Opening a project builds the edit indexes and starts the saving thread at once, and runs the
text check (coqui, which imports torch) in a child process, so the first edit is as quick as the others.
"""

from __future__ import annotations

import threading

import pytest

from alltalk_gui.core.transcript.flags import ClipChecker
from alltalk_gui.core.transcript.segments import SegmentList
from alltalk_gui.core.transcript.text_check_process import TextCheckProcess
from alltalk_gui.gui.transcript.segments_model import SegmentsModel
from alltalk_gui.gui.transcript.transcript_page import TranscriptPage
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like


class PlainText:
    language = "en"
    max_chars = None

    def problem(self, text: str) -> str | None:
        return None


@pytest.fixture
def model(qtbot):
    clips = SegmentList([segment(f"c{k + 1:05d}", "s001", k * 4000, k * 4000 + 3000,
                                 "Same words." if k in (10, 20, 30) else f"Clip {k} says something.")
                         for k in range(300)], checker=ClipChecker("xtts", "en", text_checker=PlainText()),
                        source_order=["s001"])
    clips._refresh(set(), {})
    model = SegmentsModel()
    model.set_segments(clips)
    return model


def spy(model: SegmentsModel) -> dict[str, list]:
    seen: dict[str, list] = {"reset": [], "changed": []}
    model.modelReset.connect(lambda: seen["reset"].append(True))
    model.dataChanged.connect(lambda top, bottom, _roles=(): seen["changed"].append((top.row(), bottom.row())))
    return seen


def test_a_text_edit_updates_its_row_only(model):
    seen = spy(model)
    model.segments.set_text("c00100", "A corrected sentence.")
    assert seen == {"reset": [], "changed": [(99, 99)]}
    assert model.segment(99).text == "A corrected sentence." and model.row_of("c00100") == 99


def test_editing_a_duplicate_original_updates_the_rows_it_reflags(model):
    seen = spy(model)
    model.segments.set_text("c00011", "No longer the same.")  # c00021 becomes the original, c00031 names it
    assert not seen["reset"] and sorted(seen["changed"]) == [(10, 10), (20, 20), (30, 30)]
    assert not model.segment(20).flags and "c00021" in model.segment(30).flags[0].reason


def test_edits_that_add_or_remove_rows_still_refresh_the_table(model):
    seen = spy(model)
    change = model.segments.split("c00050", 49 * 4000 + 1500, 5)
    assert seen["reset"] and model.rowCount() == 301
    assert model.row_of(change.after[1].id) == 50
    model.segments.undo(change)
    assert model.rowCount() == 300 and model.row_of("c00051") == 50


def test_opening_a_project_readies_the_first_edit_off_the_gui_thread(qtbot, tmp_path):
    """At open: the indexes, the saving thread, and the text check's child process; an edit's text flags follow
    from the child's answer (tests/gui/test_first_edit_is_quick.py times the edit itself)."""
    project = make_project(tmp_path)
    add_source(project, "take.wav", voice_like(12.0))
    SegmentList.create(project, [segment("c00001", "s001", 0, 3000, "A first clip."),
                                 segment("c00002", "s001", 4000, 7000, "A first clip!")]).close()
    page = TranscriptPage()
    qtbot.addWidget(page)
    started = []
    original = threading.Thread.start

    def record(thread):
        started.append(thread.name)
        return original(thread)

    threading.Thread.start = record
    try:
        page.set_project(project)
    finally:
        threading.Thread.start = original
    clips = page.segments
    assert "save segments.json" in started  # no edit has to start (and wait for) a thread
    assert isinstance(clips.checker.text_checker, TextCheckProcess)
    assert clips._dups is not None and clips._store is not None  # built at open, not at the first edit
    clips.set_text("c00002", "Now a different clip ☺.")
    assert "unencodable" not in clips["c00002"].flag_codes and clips.text_checks_pending
    qtbot.waitUntil(lambda: not clips.text_checks_pending, timeout=180000)  # the page applies the answer
    assert clips["c00002"].flag_codes == ("unencodable",) and not clips["c00001"].flags
    check = clips.checker.text_checker
    listening = len(check._listeners)  # this list, and any an earlier test of this process left open
    page.shutdown()
    page.set_project(None)  # closes the list: its journal is folded into segments.json
    assert not (project.root / "segments.json.journal").exists()
    assert len(check._listeners) == listening - 1  # this list stopped listening; the child stays for the next
    assert check.alive                               # list of the same language (no second import)
    page.set_project(project)
    assert page.segments.checker.text_checker is check
    page.set_project(None)
