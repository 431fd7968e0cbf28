"""Issue 29 item 3, acceptance: closing the app during training leaves the project locked until the training child
ends, with a real training child.

The app starts a run on the tiny model and is closed with "keep training": the window's own lock goes, the child's
run lock stays. A second window is told that training is still running (which run, which process since when, how
to stop it) and opens the project read-only: the steps refuse changes with that message, and so does the command
line. Stop in that window's bar asks the run to save a checkpoint and end; when the child has ended, the bar
offers to open the project for editing, and the project is free.
"""

from __future__ import annotations

import shutil

import psutil
import pytest

from alltalk_gui.cli import main
from alltalk_gui.core.project.lock import read_holder, running_training
from alltalk_gui.core.training.checkpoints import run_checkpoints
from alltalk_gui.gui.main_window import MainWindow
from tests.trained_voice import trained_voice

CHILD_START_MS = 240_000  # a torch + coqui import on a shared CPU
FAST = dict(device="cpu", lr=1e-3, warmup_steps=0, min_conditioning_seconds=1.0, max_conditioning_seconds=2.0,
            memory_interval_s=0.0, save_every_steps=0, keep_last=1, epochs=500, batch_size=1, max_steps=5000,
            eval_each_epoch=False)


@pytest.fixture
def project_root(tmp_path, tmp_path_factory, monkeypatch):
    """A copy of the session's trained voice without its runs (its espeak dataset and tiny base model are made
    once per session, tests/trained_voice.py)."""
    from alltalk_gui.gui.start import system_checks

    voice = trained_voice(tmp_path_factory)
    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    system_checks.set_base_model_folder(voice.base_model)
    root = tmp_path / "voice"
    shutil.copytree(voice.project, root, ignore=shutil.ignore_patterns("runs", ".alltalk-gui*.lock"))
    return root


def test_closing_the_app_during_training_leaves_the_project_locked_until_the_child_ends(qtbot, project_root,
                                                                                         answer, monkeypatch,
                                                                                         capsys):
    first = MainWindow()
    qtbot.addWidget(first)
    assert first.open_project(str(project_root))
    page = first.train_page
    built = page.setup.build_config
    monkeypatch.setattr(page.setup, "build_config", lambda: built().with_values(FAST))
    page.start()
    qtbot.waitUntil(lambda: page.run.history.step >= 1, timeout=CHILD_START_MS)  # really training
    pid = page.run.supervisor.pid
    run = page.run.run_dir.name

    monkeypatch.setattr(page, "ask_on_close", lambda: "detach")
    assert first.close()
    qtbot.waitUntil(lambda: not page.run.supervisor.isRunning(), timeout=10_000)
    # The window's lock is given back; the child's run lock holds the project, and the child goes on.
    assert read_holder(project_root) is None
    holder = running_training(project_root)
    assert holder is not None and holder.pid == pid and holder.run == run and psutil.pid_exists(pid)

    second = MainWindow()
    qtbot.addWidget(second)
    answer["click"] = "Open read-only"
    assert second.open_project(str(project_root))
    for text in (answer["text"], second.owner_bar.text()):
        assert "Training is still running" in text and f"run {run}" in text and f"process {pid}" in text, text
    assert second.project.read_only and "read-only" in second.windowTitle()
    messages = []
    second.import_page.status_message.connect(messages.append)
    second.import_page.import_paths([str(project_root / "nothing.wav")])
    assert messages and "Training is still running" in messages[-1] and f"run {run}" in messages[-1]

    capsys.readouterr()
    assert main(["dataset", str(project_root)]) == 2
    refused = capsys.readouterr().err
    assert "Training is still running" in refused, refused
    assert psutil.pid_exists(pid) and running_training(project_root).pid == pid  # still locked while it runs

    assert not second.owner_bar.stop_button.isHidden() and second.owner_bar.edit_button.isHidden()
    second.owner_bar.stop_button.click()  # the run saves a checkpoint and ends
    qtbot.waitUntil(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
                    timeout=180_000)
    assert run_checkpoints(project_root / "runs" / run), "the stop saved a checkpoint"
    qtbot.waitUntil(lambda: not second.owner_bar.edit_button.isHidden(), timeout=10_000)
    assert "has ended" in second.owner_bar.text()
    second.owner_bar.edit_button.click()
    assert not second.project.read_only and read_holder(project_root).program == "AllTalk GUI app"
    second.close()
