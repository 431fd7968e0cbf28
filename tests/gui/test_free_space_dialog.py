"""Project › Free disk space…, on copies of a project really trained on the tiny XTTS model: the runs with their
sizes, keeping only the best checkpoint, deleting a run (each after a question whose default keeps everything), the
run being trained left alone, a read-only project refused, and the Train page's disk warning leading here."""

from __future__ import annotations

import os

import pytest

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.lock import RunLock
from alltalk_gui.core.training.checkpoints import list_checkpoints
from alltalk_gui.gui.train.free_space_dialog import FreeSpaceDialog
from tests.core.voice.test_run_space import two_runs
from tests.trained_voice import trained_voice


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


@pytest.fixture
def project(voice, tmp_path):
    return VoiceProject.open(two_runs(voice, tmp_path))


def _dialog(qtbot, project, **kwargs) -> FreeSpaceDialog:
    dialog = FreeSpaceDialog(project, **kwargs)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitUntil(lambda: dialog.table.topLevelItemCount() == len(os.listdir(project.runs_dir)), timeout=10000)
    return dialog


def _select(dialog, name):
    item = next(dialog.table.topLevelItem(i) for i in range(dialog.table.topLevelItemCount())
                if dialog.table.topLevelItem(i).text(0) == name)
    dialog.table.setCurrentItem(item)
    return item


def _row(dialog, name):
    """The row's texts but the time it was last written."""
    texts = [_select(dialog, name).text(c) for c in range(dialog.table.columnCount())]
    return texts[:2] + texts[3:]


def test_the_runs_are_listed_with_what_they_take(qtbot, project, tmp_path):
    dialog = _dialog(qtbot, project)
    assert _row(dialog, "run1") == ["run1", "XTTS v2", "can be resumed", "2 (uses step 2)", "17 MB", "8 MB"]
    text = dialog.summary.text()
    assert "The 2 training runs of “Test Voice” take 33 MB" in text and "free on that disk" in text
    assert "Keeping only the best of every run frees 17 MB. Besides the runs: dataset " in text
    assert dialog.keep_best.isEnabled() and dialog.delete.isEnabled() and dialog.keep_all.isEnabled()
    dialog.grab().save(str(tmp_path / "free_space.png"))


def test_keep_only_the_best_after_the_question(qtbot, project):
    freed, asked, released = [], [], []
    dialog = _dialog(qtbot, project, before_delete=lambda: released.append(True))
    dialog.freed.connect(lambda: freed.append(True))
    _select(dialog, "run2")
    dialog.confirm = lambda plan: asked.append(plan.steps()) or False  # the user says Cancel
    dialog.keep_best.click()
    assert asked == [["keep only step 2 of run2 (frees 8 MB)"]] and not released
    assert len(list_checkpoints(project.root)) == 4
    dialog.confirm = lambda plan: True
    dialog.keep_best.click()
    qtbot.waitUntil(lambda: bool(freed) and not dialog.is_busy(), timeout=10000)
    assert released == [True] and dialog.status.text().startswith("Freed 8 MB in ")
    assert sorted((c.run, c.step) for c in list_checkpoints(project.root)) == [("run1", 2), ("run1", 4), ("run2", 2)]
    qtbot.waitUntil(lambda: _row(dialog, "run2")[3:] == ["1 (uses step 2)", "8 MB", "—"], timeout=10000)
    _select(dialog, "run2")
    assert not dialog.keep_best.isEnabled() and dialog.delete.isEnabled()


def test_delete_a_run_and_every_runs_best(qtbot, project):
    dialog = _dialog(qtbot, project)
    _select(dialog, "run2")
    dialog.confirm = lambda plan: True
    dialog.delete.click()
    qtbot.waitUntil(lambda: dialog.table.topLevelItemCount() == 1 and not dialog.is_busy(), timeout=10000)
    assert sorted(os.listdir(project.runs_dir)) == ["run1"] and dialog.status.text().startswith("Freed 17 MB")
    dialog.keep_all.click()
    qtbot.waitUntil(lambda: not dialog.keep_all.isEnabled() and not dialog.is_busy(), timeout=10000)
    assert [c.step for c in list_checkpoints(project.root)] == [2]


def test_the_run_in_training_and_a_read_only_project_are_left_alone(qtbot, project):
    lock = RunLock.hold(project.root, os.getpid(), "run2")
    try:
        dialog = _dialog(qtbot, project)
        assert _row(dialog, "run2")[2] == "training now"
        assert not dialog.keep_best.isEnabled() and not dialog.delete.isEnabled()
        _select(dialog, "run1")
        assert dialog.keep_best.isEnabled()
    finally:
        lock.release()
    project.read_only, project.read_only_reason = True, "it is open in alltalk-gui train."
    dialog = _dialog(qtbot, project)
    _select(dialog, "run1")
    assert not (dialog.keep_best.isEnabled() or dialog.delete.isEnabled() or dialog.keep_all.isEnabled())
    assert "read-only" in dialog.status.text()
    assert len(list_checkpoints(project.root)) == 4


def test_the_project_menu_opens_it_and_the_pages_read_the_runs_again(qtbot, project, monkeypatch):
    """Project › Free disk space…: the Preview page's models are given back before a delete, and the Train page shows
    what is left after it."""
    from alltalk_gui.gui.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    assert not window.free_space_action.isEnabled()
    project.take_lock("AllTalk GUI app")
    window.set_project(project)
    assert window.free_space_action.isEnabled()
    seen = []
    monkeypatch.setattr(window.preview_page, "release_models", lambda: seen.append("models given back"))
    monkeypatch.setattr(window.train_page, "runs_changed", lambda: seen.append("runs shown again"))

    def use(dialog):  # what the user does in the (modal) window
        qtbot.waitUntil(lambda: dialog.table.topLevelItemCount() == 2, timeout=10000)
        _select(dialog, "run2")
        dialog.confirm = lambda plan: True
        dialog.delete.click()
        qtbot.waitUntil(lambda: dialog.table.topLevelItemCount() == 1 and not dialog.is_busy(), timeout=10000)
        return 0

    monkeypatch.setattr(FreeSpaceDialog, "exec", use)
    window.free_space_action.trigger()
    assert seen == ["models given back", "runs shown again"] and sorted(os.listdir(project.runs_dir)) == ["run1"]
    window.set_project(None)
