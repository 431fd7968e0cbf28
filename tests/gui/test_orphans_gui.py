"""Issue 29 item 4 in the app: opening a project where a killed import left files asks what to do with them;
"Import them" adds them as recordings (on the Import step, shown like any import), "Remove them" deletes them,
"Not now" leaves everything as it is."""

from __future__ import annotations

import pytest

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.orphans import find_orphans
from alltalk_gui.gui.main_window import MainWindow
from tests.cli.test_orphans_cli import killed_import, recordings


@pytest.fixture
def killed(tmp_path, monkeypatch):
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    root = VoiceProject.create(tmp_path / "voice").root
    killed_import(root, recordings(tmp_path / "takes", count=30))
    return root, find_orphans(VoiceProject.open(root))



def _window(qtbot):
    window = MainWindow()
    qtbot.addWidget(window)
    return window


def test_import_them(qtbot, killed, answer):
    root, orphans = killed
    listed = {s.name for s in VoiceProject.open(root).sources}
    answer["click"] = "Import them"
    window = _window(qtbot)
    assert window.open_project(str(root))
    assert "an import was interrupted" in answer["text"] and f"{len(orphans.originals)} recording" in answer["text"]
    qtbot.waitUntil(lambda: not window.import_page.is_importing(), timeout=120_000)
    assert {s.name for s in window.project.sources} == listed | {p.name for p in orphans.originals}
    assert window.import_page.model.rowCount() == len(window.project.sources)
    assert not find_orphans(VoiceProject.open(root))


def test_remove_them(qtbot, killed, answer):
    root, orphans = killed
    before = (root / "project.json").read_bytes()
    answer["click"] = "Remove them"
    window = _window(qtbot)
    assert window.open_project(str(root))
    assert not find_orphans(VoiceProject.open(root)) and (root / "project.json").read_bytes() == before
    assert window.statusBar().currentMessage() == f"Removed {len(orphans.files)} files."  # not "file(s)"


def test_not_now_leaves_everything(qtbot, killed, answer):
    root, orphans = killed
    answer["click"] = "Not now"
    window = _window(qtbot)
    assert window.open_project(str(root))
    assert find_orphans(VoiceProject.open(root)).files == orphans.files
