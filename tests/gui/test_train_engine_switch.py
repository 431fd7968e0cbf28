"""Switching the engine on the Train page, offscreen: the page says what the switch changes and asks, re-checks the
clips the Transcribe & Edit page has open (its table shows the new flags), writes the dataset again at the new
engine's rate with progress, and says what changed; keeping the engine changes nothing."""

from __future__ import annotations

import os

import pytest
import soundfile as sf

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.importer import import_files
from alltalk_gui.core.transcript.segments import SegmentList
from alltalk_gui.gui.train.train_page import TrainPage
from alltalk_gui.gui.transcript.transcript_page import TranscriptPage
from tests.core.transcript.test_segments_support import segment, voice_like

pytest.importorskip("f5_tts", reason="f5-tts is not installed: pip install --no-deps f5-tts==1.1.22")


@pytest.fixture
def config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))


def _project(tmp_path) -> VoiceProject:
    """An F5 project: a 48 kHz recording, a 20 s clip F5 takes and XTTS cannot, two short clips, a 24 kHz dataset."""
    from alltalk_gui.core.dataset.export import export_dataset

    recording = tmp_path / "reading.wav"
    sf.write(recording, voice_like(40.0, 48_000), 48_000)
    project = VoiceProject.create(tmp_path / "voice", engine="f5")
    assert import_files(project, [recording]).rejected == []
    source = project.sources[0].id
    SegmentList.create(project, [
        segment("c00001", source, 0, 20_000, "A long clip that goes on and on, as long as a breath allows."),
        segment("c00002", source, 21_000, 25_000, "A short clip."),
        segment("c00003", source, 26_000, 30_000, "Another short clip."),
    ]).close()
    export_dataset(project)
    return project


def _pages(qtbot, project: VoiceProject) -> tuple[TrainPage, TranscriptPage]:
    transcript, train = TranscriptPage(), TrainPage()
    for page in (transcript, train):
        qtbot.addWidget(page)
    train.setup.set_devices([])  # no device scan in a child process
    train.setup.switcher.open_segments = lambda: transcript.segments  # as the main window wires them
    transcript.set_project(project)
    train.set_project(project)
    train.resize(1200, 900)
    return train, transcript


def test_a_switch_asks_rechecks_the_open_clips_rewrites_the_dataset_and_says_what_changed(qtbot, tmp_path,
                                                                                            config_dir):
    project = _project(tmp_path)
    train, transcript = _pages(qtbot, project)
    asked = []
    train.setup.ask_switch = lambda change: (asked.append(change.messages()), True)[1]
    assert train.setup.engine == "f5" and transcript.segments["c00001"].flag_codes == ()

    seen = []  # the editor's table learns of the new flags through the list's change notices
    transcript.segments.subscribe(lambda change: seen.append((change.description, [s.id for s in change.after])))
    train.setup.engine_choice.buttons["xtts"].click()
    assert not train.setup.engine_choice.isEnabled()  # the clips are judged in a worker, one switch at a time
    qtbot.waitUntil(lambda: "written again" in train.setup.switch_note.text(), timeout=120_000)
    assert asked == [["The project now trains with XTTS v2 instead of F5-TTS v1.",
                      "1 clip is now too long for XTTS v2 (over 11.6 s): c00001. Until it is fixed on the Transcribe "
                      "& Edit step, the dataset leaves it out.",
                      "The dataset will be written again at 22,050 Hz (it was 24 kHz), from the recordings."]]
    # The transcript page's own list was judged again (one writer), its listeners told on the GUI thread.
    assert "too_long" in transcript.segments["c00001"].flag_codes and ("recheck flags", ["c00001"]) in seen
    assert train.setup.engine_choice.isEnabled() and not train.setup.switcher.is_running()
    note = train.setup.switch_note.text()
    assert "The dataset was written again at 22,050 Hz: 1 training clip and 1 evaluation clip." in note
    assert train.setup.switch_note.isVisibleTo(train) and train.setup.engine == "xtts"
    assert VoiceProject.open(project.root).engine == "xtts"
    assert sorted(p.name for p in (project.dataset_dir / "wavs").iterdir()) == ["c00002.wav", "c00003.wav"]
    assert sf.info(project.dataset_dir / "wavs" / "c00002.wav").samplerate == 22_050
    assert train.setup.dataset_label.text().startswith("1 training clip (")  # the facts were read again
    if os.environ.get("ALLTALK_SCREENSHOTS"):
        train.grab().save(os.environ["ALLTALK_SCREENSHOTS"] + "/train_engine_switched.png")


def test_keeping_the_engine_changes_nothing(qtbot, tmp_path, config_dir):
    project = _project(tmp_path)
    before = {p: p.read_bytes() for p in project.dataset_dir.rglob("*") if p.is_file()}
    train, transcript = _pages(qtbot, project)
    train.setup.ask_switch = lambda change: False
    train.setup.engine_choice.buttons["xtts"].click()
    qtbot.waitUntil(lambda: train.setup.engine_choice.isEnabled(), timeout=120_000)
    assert train.setup.engine == "f5" and train.setup.engine_choice.buttons["f5"].isChecked()
    assert VoiceProject.open(project.root).engine == "f5"
    assert transcript.segments["c00001"].flag_codes == ()
    assert {p: p.read_bytes() for p in project.dataset_dir.rglob("*") if p.is_file()} == before
    assert not train.setup.switch_note.isVisibleTo(train)


def test_a_dataset_at_another_rate_is_pointed_out(qtbot, tmp_path, config_dir):
    """An older F5 project's dataset was written at 22,050 Hz: the Train page says so, and how to mend it."""
    from alltalk_gui.testing.speech import make_speech_dataset

    project = VoiceProject.create(tmp_path / "voice", engine="f5")
    make_speech_dataset(project.dataset_dir, n_train=2, n_eval=1)
    train, _transcript = _pages(qtbot, project)
    text = train.setup.dataset_label.text()
    assert "2 training clips" in text and "written at 22,050 Hz; F5-TTS v1 trains at 24 kHz. Export it again" in text
