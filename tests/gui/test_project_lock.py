"""Issue 18 item 3 in the app: the window holds the project's lock while the project is open; a project that
another program holds is offered read-only, with the holder named."""

from __future__ import annotations

import pytest

from alltalk_gui.core.project.folder import ProjectError, VoiceProject
from alltalk_gui.core.project.lock import LOCK_FILE, ProjectLock, read_holder
from alltalk_gui.gui.main_window import MainWindow


@pytest.fixture
def window(qtbot):
    w = MainWindow()
    qtbot.addWidget(w)
    return w



def test_the_window_holds_the_lock_while_the_project_is_open(window, tmp_path):
    root = VoiceProject.create(tmp_path / "voice").root
    assert window.open_project(str(root))
    assert read_holder(root).program == "AllTalk GUI app"
    window.close_project()
    assert not (root / LOCK_FILE).exists()


def test_a_project_held_elsewhere_opens_read_only_on_request(window, tmp_path, answer):
    root = VoiceProject.create(tmp_path / "voice", name="Voice").root
    with ProjectLock.acquire(root, "alltalk-gui train"):
        answer["click"] = "Cancel"
        assert window.open_project(str(root)) is False and window.project is None
        assert "is open in alltalk-gui train" in answer["text"]

        answer["click"] = "Open read-only"
        assert window.open_project(str(root)) is True
        assert window.project.read_only and "(read-only)" in window.windowTitle()
        with pytest.raises(ProjectError, match="open read-only"):
            window.project.save()
        assert read_holder(root).program == "alltalk-gui train"  # the holder keeps its lock
        window.close_project()
        assert read_holder(root).program == "alltalk-gui train"


def test_a_lock_copied_from_another_computer_can_be_taken_over(window, tmp_path, answer):
    import json

    root = VoiceProject.create(tmp_path / "voice", name="Voice").root
    (root / LOCK_FILE).write_text(json.dumps({
        "program": "AllTalk GUI app", "pid": 4242, "host": "laptop-of-a-friend", "user": "friend",
        "since": "2026-11-20T10:00:00+01:00", "started": 1.0, "token": "t"}), encoding="utf-8")
    answer["click"] = "It is not open there: take over"
    assert window.open_project(str(root)) is True
    assert "delete .alltalk-gui.lock" in answer["text"]
    assert not window.project.read_only and read_holder(root).program == "AllTalk GUI app"


def test_a_read_only_window_refuses_import_transcription_and_training(window, tmp_path, answer, qtbot):
    root = VoiceProject.create(tmp_path / "voice", name="Voice").root
    (tmp_path / "a.wav").write_bytes(b"")
    messages = []
    for page in (window.import_page, window.pages[1], window.train_page):
        page.status_message.connect(messages.append)
    with ProjectLock.acquire(root, "alltalk-gui train"):
        answer["click"] = "Open read-only"
        assert window.open_project(str(root))
        window.import_page.import_paths([str(tmp_path / "a.wav")])
        window.pages[1].start_transcription()
        window.train_page.start()
        window.train_page.resume()
    assert window.import_page.worker is None and not window.train_page.is_training()
    assert len(messages) == 4 and all("open read-only" in m for m in messages)
