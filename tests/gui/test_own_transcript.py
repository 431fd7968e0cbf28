"""Bring your own transcript in the app: a Chinese dataset folder imported from the Transcribe & Edit page (its
clips show their text, the Import step lists the recordings), and a recording's known text pasted in."""

from __future__ import annotations

import pytest

from alltalk_gui.core.engines.xtts.sample_sentences import SAMPLE_SENTENCES
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.known_text import known_text_file
from alltalk_gui.gui.main_window import MainWindow
from alltalk_gui.gui.transcript.own_transcript import KnownTextDialog
from alltalk_gui.testing.speech import espeak_available, synthesize

pytestmark = pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed")


@pytest.fixture
def chinese_dataset(tmp_path):
    folder = tmp_path / "zh_data"
    (folder / "wavs").mkdir(parents=True)
    lines = []
    for i, text in enumerate(SAMPLE_SENTENCES["zh-cn"]):
        synthesize(text, folder / "wavs" / f"zh_{i}.wav", voice="cmn")
        lines.append(f"zh_{i}|{text}")
    (folder / "metadata.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_a_dataset_folder_becomes_clips_with_their_text(qtbot, tmp_path, chinese_dataset):
    project = VoiceProject.create(tmp_path / "voice", name="普通话", language="zh-cn")
    window = MainWindow()
    qtbot.addWidget(window)
    window.set_project(project)
    page = window.pages[1]
    assert page.dataset_button.isEnabled() and not page.known_text_button.isEnabled()
    page.import_dataset(str(chinese_dataset))
    qtbot.waitUntil(lambda: page.segments is not None and len(page.segments) == 3, timeout=60_000)
    assert [s.text for s in page.segments] == list(SAMPLE_SENTENCES["zh-cn"])
    assert page.body.currentWidget() is page.editor
    assert window.import_page.model.rowCount() == 3  # the Import step lists the new recordings
    assert page.known_text_button.isEnabled()

    dialog = KnownTextDialog(VoiceProject.open(project.root), page)
    qtbot.addWidget(dialog)
    dialog.recording.setCurrentIndex(0)
    dialog.text.setPlainText("今天天气真好。")
    assert dialog.apply(page.segments) == 1
    assert page.segments.segments[0].text == "今天天气真好。"
    assert known_text_file(project, dialog.source_id()).read_text(encoding="utf-8").strip() == "今天天气真好。"
    again = KnownTextDialog(VoiceProject.open(project.root), page)
    qtbot.addWidget(again)
    assert again.text.toPlainText() == "今天天气真好。"  # shown again when the dialog reopens
