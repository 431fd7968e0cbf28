"""The main window and the Import step, driven with qtbot offscreen."""

import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication, QMessageBox

from alltalk_gui.core.project.duration_guidance import format_duration
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui import settings
from alltalk_gui.gui.main_window import STEPS, MainWindow
from alltalk_gui.gui.sources.sources_model import Column
from alltalk_gui.testing.speech import synthesize


@pytest.fixture
def window(qtbot):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    return w


@pytest.fixture
def recordings(tmp_path):
    folder = tmp_path / "recordings"
    folder.mkdir()
    speech = synthesize("The quick brown fox jumps over the lazy dog, then rests in the sun.", folder / "speech.wav")
    x, sr = sf.read(speech, dtype="float32")
    sf.write(folder / "loud.flac", np.clip(x * 8, -1, 1), sr)  # driven into clipping
    (folder / "readme.mp3").write_text("this is text, not audio")
    return folder


def _wait_import(qtbot, page):
    qtbot.waitUntil(lambda: not page.is_importing(), timeout=60000)


def test_without_a_project_only_the_welcome_page_is_shown_and_steps_are_disabled(window):
    assert window.stack.currentWidget() is window.welcome
    for row in range(window.sidebar.count()):
        assert not window.sidebar.item(row).flags() & Qt.ItemFlag.ItemIsEnabled
    # Steps that later work fills in say what they will do.
    for row, step in enumerate(STEPS):
        assert step.summary.split()[0] in window.sidebar.item(row).toolTip()


def test_import_page_shows_rows_verdicts_and_total(window, qtbot, tmp_path, recordings):
    project = VoiceProject.create(tmp_path / "voice", name="Voice")
    window.set_project(project)
    assert window.windowTitle().startswith("Voice")
    page = window.import_page
    assert window.stack.currentWidget() is page
    for row, step in enumerate(STEPS):  # steps with a page are enabled, those not built yet are not
        assert bool(window.sidebar.item(row).flags() & Qt.ItemFlag.ItemIsEnabled) == (step.page is not None)

    page.import_paths([str(recordings)])
    _wait_import(qtbot, page)

    model = page.model
    assert model.rowCount() == 2
    names = [model.index(r, Column.NAME).data() for r in range(2)]
    assert sorted(names) == ["loud.flac", "speech.wav"]
    loud_row = names.index("loud.flac")
    assert "clipped" in model.index(loud_row, Column.VERDICT).data()
    assert model.index(loud_row, Column.VERDICT).data().startswith("Check")
    assert model.index(loud_row, Column.LENGTH).data().endswith(" s")
    # The rejected text file is listed with its reason; the rest went in.
    assert page.rejected_box.isVisible()
    assert "readme.mp3" in page.rejected_list.item(0).text()
    # Summary and guidance against 3-10 minutes.
    total = sum(s.duration_s for s in project.sources)
    assert "2 recordings" in page.summary.text()
    assert format_duration(total) in page.summary.text()
    assert "record about" in page.guidance.text()
    # And it is all on disk.
    assert len(VoiceProject.open(project.root).sources) == 2


def test_dropping_files_on_the_window_imports_them(window, qtbot, tmp_path, recordings):
    window.set_project(VoiceProject.create(tmp_path / "voice"))
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(recordings / "speech.wav"))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    _wait_import(qtbot, window.import_page)
    assert window.import_page.model.rowCount() == 1


def test_drop_without_a_project_says_what_to_do(window, tmp_path, recordings):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(recordings / "speech.wav"))])
    window.dropEvent(QDropEvent(QPointF(1, 1), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                                Qt.KeyboardModifier.NoModifier))
    assert "Create or open a project first" in window.statusBar().currentMessage()


def test_recent_projects_are_remembered_and_a_broken_project_is_reported(window, tmp_path, monkeypatch):
    good = VoiceProject.create(tmp_path / "good")
    window.set_project(good)
    assert settings.recent_projects() == [str(good.root)]
    window.close_project()
    assert window.welcome.recent.count() == 1

    broken = VoiceProject.create(tmp_path / "broken")
    broken.project_file.write_text("{ not json", encoding="utf-8")
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    assert window.open_project(str(broken.root)) is False
    assert "not valid JSON" in shown[0]
    assert broken.project_file.read_text(encoding="utf-8") == "{ not json"
    assert window.project is None


@pytest.mark.timeout(60)
def test_play_button_toggles_playback(window, qtbot, tmp_path, recordings):
    window.set_project(VoiceProject.create(tmp_path / "voice"))
    page = window.import_page
    page.import_paths([str(recordings / "speech.wav")])
    _wait_import(qtbot, page)
    button = page.table.indexWidget(page.model.index(0, Column.PLAY))
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert page.player.current.endswith(".wav")
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert page.player.current == ""


def test_the_window_opens_without_importing_torch():
    code = ("import sys; from alltalk_gui.gui.app import create_application; create_application(); "
            "from alltalk_gui.gui.main_window import MainWindow; MainWindow(); "
            "heavy = [m for m in ('torch', 'whisper', 'faster_whisper', 'TTS') if m in sys.modules]; "
            "print(heavy); sys.exit(1 if heavy else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.timeout(60)
def test_tab_leaves_the_recordings_table_and_the_keyboard_plays_a_row(window, qtbot, tmp_path, recordings):
    """Tab walked every cell of every row (and stopped at each row's play button) before it reached the buttons
    under the table; now it goes on to them, and Space or Enter plays the current row."""
    window.set_project(VoiceProject.create(tmp_path / "voice"))
    page = window.import_page
    page.import_paths([str(recordings / "speech.wav"), str(recordings / "loud.flac"), str(recordings / "readme.mp3")])
    _wait_import(qtbot, page)
    assert page.model.rowCount() == 2 and page.rejected_box.isVisible()
    window.activateWindow()
    page.table.setFocus()
    page.table.setCurrentIndex(page.model.index(0, Column.NAME))
    qtbot.waitUntil(page.table.hasFocus, timeout=5000)  # it stayed on the table (it went to a row's play button)
    qtbot.keyClick(page.table, Qt.Key.Key_Tab)
    after = QApplication.focusWidget()
    assert after is not page.table and not page.table.isAncestorOf(after)
    assert page.rejected_box.isAncestorOf(after)  # the next control down: the refusals' Details or Dismiss
    page.table.setFocus()
    qtbot.keyClick(page.table, Qt.Key.Key_Down)
    qtbot.keyClick(page.table, Qt.Key.Key_Space)
    assert page.player.current.endswith(".wav") and page.player.current == str(
        page.project.path(page.model.source(1).audio_file))
    qtbot.keyClick(page.table, Qt.Key.Key_Return)
    assert page.player.current == ""
