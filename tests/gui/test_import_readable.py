"""Import verdicts and errors a person can read (issue #17): a damaged file is explained in plain words with
the decoders' message one click away, the whole message fits in the box, and at 1024x700 the verdicts keep
their room and wrap instead of being squeezed behind a scroll bar."""

from __future__ import annotations

import os

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.plain_reasons import plain_reason
from alltalk_gui.gui.sources.sources_model import Column
from tests.gui.test_import_page import _wait_import, recordings, window  # noqa: F401 - fixtures


def test_a_damaged_file_is_explained_in_plain_words_with_details_one_click_away(window, qtbot, tmp_path,  # noqa: F811
                                                                                  recordings):  # noqa: F811
    broken = recordings / "broken.wav"
    broken.write_bytes(b"RIFF\x00\x00\x00\x00WAVEfmt " + os.urandom(300))
    window.resize(1024, 700)
    window.set_project(VoiceProject.create(tmp_path / "voice", name="Voice"))
    page = window.import_page
    page.import_paths([str(broken), str(recordings / "speech.wav"), str(recordings / "loud.flac")])
    _wait_import(qtbot, page)
    item = page.rejected_list.item(0)
    assert item.text().startswith("broken.wav could not be read as a recording: the file is damaged")
    assert "PyAV" not in item.text() and "libsndfile" in item.toolTip()
    # All of it shown: the list is as tall as the wrapped text.
    lines = page.rejected_list.fontMetrics().horizontalAdvance(item.text()) // page.rejected_list.viewport().width()
    assert page.rejected_list.height() >= (lines + 1) * page.rejected_list.fontMetrics().lineSpacing()
    assert page.details_button.isVisible()
    page.details_button.click()
    assert "libsndfile" in page.rejected_list.item(0).text()
    page.details_button.click()
    assert "libsndfile" not in page.rejected_list.item(0).text()

    # The verdict column keeps readable room at 1024x700 and wraps; no horizontal scroll bar.
    qtbot.wait(50)
    assert window.width() == 1024
    assert page.table.columnWidth(Column.VERDICT) >= 160 and page.table.wordWrap()
    assert not page.table.horizontalScrollBar().isVisible()
    row = next(r for r in range(page.model.rowCount()) if page.model.source(r).name == "loud.flac")
    verdict = page.model.index(row, Column.VERDICT)
    assert verdict.data().startswith("Check: clipped") and "clipped" in verdict.data(3)  # 3: the tooltip role


def test_plain_reasons_leave_plain_messages_alone():
    assert plain_reason("notes.txt: '.txt' is not a supported audio type.") == (
        "notes.txt: '.txt' is not a supported audio type.", "")
    plain, detail = plain_reason("x.mp3 is not an audio file PyAV or libsndfile can read (FFmpeg: bad; "
                                 "libsndfile: worse).")
    assert plain.startswith("x.mp3 could not be read as a recording") and detail == "FFmpeg: bad; libsndfile: worse"
