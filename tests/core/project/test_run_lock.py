"""Issue 29 item 3: one owner while training runs.

The training child holds the project's run lock for as long as it runs (the launcher writes it with the child's
own process id, so it holds whoever started it: the app may close meanwhile). Any other program that wants to
change the project (the app opening it, a CLI command) is told that training is still running, which run, which
process since when, and how to stop it, and may open the project read-only, where every change is refused with
that message. The dataset export is refused even for the window that started the run: the training reads it.
A run lock whose process has ended is stale and taken over.

The holder in these tests is a real child process; the app's own run with a real training child is in
tests/gui/test_training_owner.py.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from alltalk_gui.cli import main
from alltalk_gui.core.project.folder import ProjectError, VoiceProject
from alltalk_gui.core.project.lock import ProjectLockedError
from tests.core.test_safe_paths import project  # noqa: F401  (a project with two clips: the fixture)


@pytest.fixture
def child():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process
    process.kill()
    process.wait()


def _training(project, child, run="run_20261126_101500"):
    from alltalk_gui.core.project.lock import RunLock

    return RunLock.hold(project.root, child.pid, run)


def _says_who_and_how_to_stop(message: str, child, run="run_20261126_101500", read_only: bool = True) -> None:
    assert "Training is still running" in message and f"run {run}" in message, message
    assert f"process {child.pid}" in message and "since " in message, message
    assert "alltalk-gui stop" in message and "Stop on the Train page" in message, message
    assert ("read-only" in message) == read_only, message


def test_while_training_runs_nobody_else_becomes_the_projects_writer(project, child):
    project.release_lock()
    _training(project, child)
    other = VoiceProject.open(project.root)
    with pytest.raises(ProjectLockedError) as caught:
        other.take_lock("alltalk-gui dataset")
    _says_who_and_how_to_stop(str(caught.value), child)
    assert other.lock is None  # nothing half-taken: the project lock was given back
    child.kill()
    child.wait()
    other.take_lock("alltalk-gui dataset")  # the training ended: its lock is stale
    other.release_lock()


def test_a_read_only_project_refuses_changes_with_the_training_named(project, child, tmp_path):
    from alltalk_gui.core.project.importer import import_files

    _training(project, child)
    other = VoiceProject.open(project.root)
    with pytest.raises(ProjectLockedError) as caught:
        other.take_lock("AllTalk GUI app")
    other.open_read_only(caught.value)
    with pytest.raises(ProjectError) as refused:
        import_files(other, [tmp_path / "anything.wav"])
    _says_who_and_how_to_stop(str(refused.value), child)


def test_the_dataset_export_waits_for_the_run_even_in_the_window_that_started_it(project, child):
    from alltalk_gui.core.dataset.export import export_dataset

    project.take_lock("AllTalk GUI app")  # this window started the run: it holds the project
    _training(project, child)
    with pytest.raises(ProjectError) as caught:
        export_dataset(project)
    assert "reads the dataset" in str(caught.value)
    _says_who_and_how_to_stop(str(caught.value), child, read_only=False)
    assert not project.dataset_dir.exists()
    project.release_lock()


def test_the_cli_refuses_to_write_and_stop_asks_the_run_to_stop(project, child, capsys):
    project.release_lock()
    _training(project, child)
    assert main(["dataset", str(project.root)]) == 2
    _says_who_and_how_to_stop(capsys.readouterr().err, child)
    assert main(["stop", str(project.root)]) == 0
    out = capsys.readouterr().out
    assert "Asked run run_20261126_101500" in out and f"process {child.pid}" in out
    assert (project.runs_dir / "run_20261126_101500" / "STOP").is_file()


def test_stop_without_a_running_training_says_so(project, capsys):
    assert main(["stop", str(project.root)]) == 0
    assert "No training is running" in capsys.readouterr().out


def test_a_second_training_of_the_project_is_refused_while_one_runs(project, child):
    from alltalk_gui.core.project.lock import RunLock, TrainingRunningError

    _training(project, child)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with pytest.raises(TrainingRunningError):
            RunLock.hold(project.root, other.pid, "run_b")
    finally:
        other.kill()
        other.wait()


def test_the_run_lock_ends_with_its_process(project):
    from alltalk_gui.core.project.lock import running_training

    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    _training(project, process)
    assert running_training(project.root).pid == process.pid
    process.wait()
    deadline = time.time() + 10
    while running_training(project.root) is not None and time.time() < deadline:
        time.sleep(0.1)
    assert running_training(project.root) is None
