"""``alltalk-gui checkpoints DIR [--keep-best RUN|all] [--delete-run RUN] [--yes]`` on copies of a project trained on
the tiny XTTS model: the listing says what each run takes and how to free it; deleting asks first, holds the
project's lock, and refuses what it cannot do without deleting anything."""

from __future__ import annotations

import os

import pytest

from alltalk_gui.cli import main
from alltalk_gui.core.project.lock import ProjectLock
from alltalk_gui.core.training.checkpoints import list_checkpoints
from tests.core.voice.test_run_space import two_runs
from tests.trained_voice import trained_voice


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


@pytest.fixture
def project(voice, tmp_path):
    return two_runs(voice, tmp_path)


def _files(project):
    return sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())


def test_the_listing_gives_each_runs_size_and_how_to_free_it(project, capsys):
    assert main(["checkpoints", str(project)]) == 0
    out = capsys.readouterr().out
    assert "run1 (xtts, can be resumed, 2 checkpoints, 17 MB); Preview and Export use step 2" in out
    assert "run1 · step 2, eval loss 1.000 (best)" in out and "run2 · step 4" in out
    assert "The runs take 33 MB in" in out and "free on that disk" in out and "Besides the runs: dataset " in out
    assert "To free 17 MB, keep only each run's best checkpoint: alltalk-gui checkpoints DIR --keep-best all" in out


def test_keep_best_asks_first_then_frees(project, capsys):
    before = _files(project)
    assert main(["checkpoints", str(project), "--keep-best", "all"]) == 2  # standard input is not a terminal
    captured = capsys.readouterr()
    assert "keep only step 2 of run1 (frees 8 MB); keep only step 2 of run2 (frees 8 MB)" in captured.out
    assert "add --yes" in captured.err and "Nothing was deleted." in captured.out and _files(project) == before
    assert main(["checkpoints", str(project), "--keep-best", "all", "--yes"]) == 0
    assert "Freed 17 MB." in capsys.readouterr().out
    assert [(c.run, c.step) for c in list_checkpoints(project)] == [("run1", 2), ("run2", 2)]
    assert main(["checkpoints", str(project), "--keep-best", "run1", "--yes"]) == 0
    assert "Nothing to free" in capsys.readouterr().out
    assert main(["checkpoints", str(project)]) == 0
    assert "To free" not in capsys.readouterr().out


def test_delete_run(project, capsys):
    assert main(["checkpoints", str(project), "--delete-run", "run2", "--yes"]) == 0
    assert "delete the run run2 (17 MB)" in capsys.readouterr().out
    assert sorted(os.listdir(project / "runs")) == ["run1"]


@pytest.mark.parametrize("args, message", [
    (["--delete-run", "run2", "--delete-run", "nope"], "There is no run 'nope'"),
    (["--keep-best", "../voice"], "There is no run '../voice'"),
    (["--delete-run", "run1"], "is open in"),
])
def test_refusals_delete_nothing(project, capsys, args, message):
    before = _files(project)
    holder = ProjectLock.acquire(project, "AllTalk GUI app") if message == "is open in" else None
    try:
        assert main(["checkpoints", str(project), *args, "--yes"]) == 2
    finally:
        if holder is not None:
            holder.release()
    assert message in capsys.readouterr().err and _files(project) == before
