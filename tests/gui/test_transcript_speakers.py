"""The Transcribe & Edit page's speaker check: the clips' voices are measured in a child process (never on the GUI
thread), clips of another voice show "another voice?" with the likeness in their reason and under the "Another
voice?" filter, and without the judge extra the page says the check is off and why."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt

from alltalk_gui.core.audio import speaker
from alltalk_gui.core.transcript.flags import OTHER_SPEAKER
from alltalk_gui.gui.transcript.segments_model import Column
from alltalk_gui.gui.transcript.speaker_worker import SpeakerMeasurer
from alltalk_gui.gui.transcript.transcript_page import TranscriptPage
from tests.core.transcript.test_speakers import interview, make_list, two_voices  # noqa: F401 (a fixture)


@pytest.fixture
def page(qtbot):
    page = TranscriptPage()
    qtbot.addWidget(page)
    page.resize(1100, 760)
    page.show()
    yield page
    page.shutdown()


def test_the_page_measures_the_voices_and_shows_the_other_voices_clips(qtbot, tmp_path, interview, page,
                                                                       monkeypatch):
    pytest.importorskip("resemblyzer")
    monkeypatch.setattr(SpeakerMeasurer, "enabled", True)
    make_list(tmp_path, interview, which={"reader", "arctic"}).close()  # a transcript, its voices not measured
    from alltalk_gui.core.project.folder import VoiceProject

    page.set_project(VoiceProject.open(tmp_path / "voice"))
    qtbot.waitUntil(lambda: "main voice holds" in page.speaker_status.text(), timeout=120_000)
    assert page.speaker_status.isVisible()
    page.editor.show_filter("other_voice")
    model = page.editor.model
    assert model.rowCount() == 2
    for row in range(2):
        assert re.fullmatch(r"another voice\? 0\.[0-7]\d", model.index(row, Column.FLAGS).data())
        assert "Likeness 0." in model.index(row, Column.FLAGS).data(Qt.ItemDataRole.ToolTipRole)  # the reason as the tooltip
    assert all(OTHER_SPEAKER in s.flag_codes for s in page.segments.view("other_voice"))


def test_without_the_judge_extra_the_page_says_the_check_is_off(qtbot, tmp_path, interview, page, monkeypatch):
    monkeypatch.setattr(speaker, "missing_packages", lambda *_modules: ["resemblyzer"])
    monkeypatch.setattr(SpeakerMeasurer, "enabled", True)
    make_list(tmp_path, interview, which={"reader", "arctic"}).close()
    from alltalk_gui.core.project.folder import VoiceProject

    page.set_project(VoiceProject.open(tmp_path / "voice"))
    assert page.speaker_status.text().startswith("Speaker check off:")
    assert "resemblyzer" in page.speaker_status.text() and page.speaker_status.isVisible()
    assert page.speakers.worker is None  # nothing was started


def test_two_voices_of_equal_share_ask_and_the_link_marks_the_selected_clip(qtbot, tmp_path, interview, page):
    """Five clips of one voice, five of another (their embeddings put in the store as the encoder would): the page
    asks which one is the user's; selecting a clip of the second voice and following the link flags the first's."""
    kept = two_voices(tmp_path, interview)
    from alltalk_gui.core.project.folder import VoiceProject

    page.set_project(VoiceProject.open(tmp_path / "voice"))
    assert "which one is yours?" in page.speaker_status.text() and "href='mine'" in page.speaker_status.text()
    page.editor.select(kept[7])
    page.speaker_status.linkActivated.emit("mine")
    assert {s.id for s in page.segments.view("other_voice")} == set(kept[:5])
    assert "5 clips may hold another voice" in page.speaker_status.text() and "1 of 11 clips still to measure" in page.speaker_status.text()
    page.speaker_status.linkActivated.emit("other_voice")
    assert page.editor.model.rowCount() == 5
