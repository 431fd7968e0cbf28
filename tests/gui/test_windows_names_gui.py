"""Opening a project that holds names Windows cannot hold says which; 'Rename the recordings' renames the
recordings' copies (project.json following), 'Not now' leaves everything as it is."""

from __future__ import annotations

import os

import pytest

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.gui.main_window import MainWindow
from tests.core.project.test_windows_names import old_project  # noqa: F401  (fixture)

pytestmark = pytest.mark.skipif(os.name == "nt", reason="Windows cannot make the names these tests need")


@pytest.fixture(autouse=True)
def _config(tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))


def _open(qtbot, root) -> MainWindow:
    window = MainWindow()
    qtbot.addWidget(window)
    assert window.open_project(str(root))
    return window


def test_rename_the_recordings(qtbot, old_project, answer):  # noqa: F811
    answer["click"] = "Rename the recordings"
    window = _open(qtbot, old_project.root)
    assert "4 name(s) in the project folder cannot be used on Windows" in answer["text"]
    assert "sources/take:1.wav: Windows does not allow : in a name" in answer["text"]
    assert window.statusBar().currentMessage() == "Renamed 3 recording copies for Windows."
    assert [s.file for s in VoiceProject.open(old_project.root).sources] == [
        "sources/take_1.wav", "sources/aux_.wav", "sources/Anna.wav", "sources/anna-2.wav"]
    assert [s.file for s in window.project.sources] == [s.file for s in VoiceProject.open(old_project.root).sources]


def test_not_now_leaves_everything(qtbot, old_project, answer):  # noqa: F811
    before = (old_project.root / "project.json").read_bytes()
    answer["click"] = "Not now"
    _open(qtbot, old_project.root)
    assert "let the app rename the 3 recording copy(ies)" in answer["text"]
    assert (old_project.root / "project.json").read_bytes() == before
    assert (old_project.root / "sources" / "take:1.wav").is_file()
