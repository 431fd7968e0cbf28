"""Freeing the disk space of a project's runs (core/voice/run_space.py), on copies of a project really trained on
the tiny XTTS model: sizes, keeping only the best checkpoint, deleting a run, and every refusal leaving the project
as it was."""

from __future__ import annotations

import os
import shutil

import pytest

from alltalk_gui.core.project.errors import ProjectError
from alltalk_gui.core.project.lock import RunLock
from alltalk_gui.core.training.checkpoints import KEEP_MARK, list_checkpoints, resolve_checkpoint
from alltalk_gui.core.voice.judge.best import best_choice
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.voice.run_space import (DELETING, delete_run, free_space, keep_only_best, other_space,
                                              other_space_sentence, plan_freeing, runs_on_disk, tree_bytes)
from tests.core.voice.test_preview_checkpoints import _with_eval_losses
from tests.trained_voice import folder_bytes, trained_voice


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


def two_runs(voice, tmp_path):
    """A copy of the trained project whose run1's earlier checkpoint is its best, plus a copy of that run."""
    project = _with_eval_losses(voice, tmp_path, {2: 1.0, 4: 2.0})
    shutil.copytree(project / "runs" / "run1", project / "runs" / "run2")
    return project


def _snapshot(project):
    return sorted((str(p.relative_to(project)), p.stat().st_size) for p in project.rglob("*") if p.is_file())


def test_each_run_is_listed_with_its_size_and_the_checkpoint_preview_uses(voice, tmp_path):
    project = two_runs(voice, tmp_path)
    runs = {run.name: run for run in runs_on_disk(project)}
    assert set(runs) == {"run1", "run2"}
    run = runs["run1"]
    assert run.size_bytes == folder_bytes(project / "runs" / "run1") > 0
    assert [c.step for c in run.checkpoints] == [2, 4] and run.best.step == 2
    assert run.engine == "xtts" and not run.training_now and "eval loss" in run.best_reason
    assert run.freed_by_keeping_best == folder_bytes(project / "runs" / "run1" / "checkpoints" / "step_0000004")


def test_keeping_the_best_deletes_the_others_and_preview_still_finds_it(voice, tmp_path):
    project = two_runs(voice, tmp_path)
    before = tree_bytes(project)
    kept, freed = keep_only_best(project, "run1")
    assert kept.step == 2 and (kept.path / KEEP_MARK).is_file() and not freed.problems
    mark = (kept.path / KEEP_MARK).stat().st_size  # written to keep it
    assert before - tree_bytes(project) + mark == freed.bytes > 0
    assert [c.step for c in list_checkpoints(project) if c.run == "run1"] == [2]
    assert best_choice(project, run="run1").checkpoint.path == kept.path
    assert resolve_checkpoint(project, "latest", run="run1").step == 2
    assert (project / "runs" / "run1" / "memory.json").is_file()  # the run's own files stay
    assert [c.step for c in list_checkpoints(project) if c.run == "run2"] == [2, 4]  # the other run is untouched


def test_deleting_a_run_removes_it_all_and_nothing_else(voice, tmp_path):
    project = two_runs(voice, tmp_path)
    size = tree_bytes(project / "runs" / "run2")
    others = [entry for entry in _snapshot(project) if not entry[0].startswith("runs/run2/")]
    freed = delete_run(project, "run2")
    assert freed.bytes == size and not freed.problems
    assert sorted(os.listdir(project / "runs")) == ["run1"] and _snapshot(project) == others


def test_a_plan_is_checked_whole_before_anything_is_deleted(voice, tmp_path):
    project = two_runs(voice, tmp_path)
    before = _snapshot(project)
    with pytest.raises(ProjectError, match="no run 'nope'.*Runs: run1, run2"):
        plan_freeing(project, delete=["run2", "nope"])
    for name in ("../voice", "runs", "", ".", "run1/checkpoints"):
        with pytest.raises(ProjectError, match="no run"):
            plan_freeing(project, keep_best=[name])
    assert _snapshot(project) == before
    plan = plan_freeing(project, delete=["run2"], every_run=True)
    assert [r.name for r in plan.delete] == ["run2"] and [r.name for r in plan.keep_best] == ["run1"]
    assert plan.steps()[0].startswith("delete the run run2 (") and "keep only step 2 of run1" in plan.steps()[1]
    freed = free_space(project, plan)
    assert freed.bytes == plan.bytes and sorted(os.listdir(project / "runs")) == ["run1"]
    assert plan_freeing(project, every_run=True).steps() == []  # nothing more to free


def test_the_run_that_is_training_is_refused(voice, tmp_path):
    project = two_runs(voice, tmp_path)
    lock = RunLock.hold(project, os.getpid(), "run2")  # a live process trains run2
    before = _snapshot(project)
    try:
        assert {r.name: r.training_now for r in runs_on_disk(project)} == {"run1": False, "run2": True}
        for ask in (dict(delete=["run2"]), dict(keep_best=["run2"])):
            with pytest.raises(ProjectError, match="'run2' is training now.*Nothing was deleted"):
                plan_freeing(project, **ask)
        with pytest.raises(ProjectError, match="training now"):
            delete_run(project, "run2")
        assert [r.name for r in plan_freeing(project, every_run=True).keep_best] == ["run1"]  # run2 left out
        assert _snapshot(project) == before
    finally:
        lock.release()


def test_links_are_never_followed(voice, tmp_path):
    project = two_runs(voice, tmp_path)
    outside = tmp_path / "elsewhere"
    shutil.copytree(project / "runs" / "run2", outside)
    (project / "runs" / "away").symlink_to(outside, target_is_directory=True)
    (project / "runs" / "alias").symlink_to(project / "runs" / "run2", target_is_directory=True)
    assert "away" not in {r.name for r in runs_on_disk(project)}
    with pytest.raises(ProjectError, match="no run 'away'"):
        delete_run(project, "away")
    assert delete_run(project, "alias").bytes == 0  # the link goes, not what it points at
    assert not (project / "runs" / "alias").exists() and len(list_checkpoints(outside.parent / "elsewhere")) == 0
    assert [c.step for c in list_checkpoints(project) if c.run == "run2"] == [2, 4]
    assert sorted(p.name for p in (outside / "checkpoints").iterdir()) == ["step_0000002", "step_0000004"]


def test_an_interrupted_delete_is_hidden_and_finished_by_the_next(voice, tmp_path):
    project = two_runs(voice, tmp_path)
    half = project / "runs" / f"{DELETING}run2-0badc0de"
    os.replace(project / "runs" / "run2", half)  # what a delete leaves when the app dies right after its rename
    assert {c.run for c in list_checkpoints(project)} == {"run1"}
    assert [r.name for r in runs_on_disk(project)] == ["run1"]
    shutil.copytree(project / "runs" / "run1", project / "runs" / "run3")
    delete_run(project, "run3")
    assert sorted(os.listdir(project / "runs")) == ["run1"]


def test_a_run_holding_an_open_file_is_not_deleted_and_says_so(voice, tmp_path, monkeypatch):
    """Windows: a take of the run playing, or its checkpoint loaded, holds a file: the run's rename is refused."""
    from alltalk_gui.core import folders
    from tests.held_file import holdable

    project = two_runs(voice, tmp_path)
    before = _snapshot(project)
    monkeypatch.setattr(folders, "RETRY_DELAYS_S", (0.0, 0.0))
    hold = holdable(project / "runs" / "run2")
    hold.hold()
    try:
        with pytest.raises(ProjectError, match=r"run 'run2': run2 \(or a file in it\) is open in another program"):
            delete_run(project, "run2")
    finally:
        hold.release()
    assert _snapshot(project) == before


def test_what_else_the_project_holds_is_said_beside_the_runs(voice, tmp_path):
    project = VoiceProject.open(two_runs(voice, tmp_path))
    project.previews_dir.mkdir(exist_ok=True)  # the shared trained voice may hold other tests' takes already
    (project.previews_dir / "take.wav").write_bytes(b"x" * 5000)
    parts = dict(other_space(project))
    folders = {"recordings": project.sources_dir, "working copies": project.audio_dir, "dataset": project.dataset_dir,
               "feature cache": project.root / "feature_cache", "previews": project.previews_dir}
    expected = {name: folder_bytes(folder) for name, folder in folders.items() if folder.is_dir()}
    assert parts == {name: size for name, size in expected.items() if size}  # an empty or missing part is left out
    assert parts["previews"] >= 5000 and parts["dataset"] > 0 and parts["feature cache"] > 0
    assert parts["feature cache"] > 0  # the run's front end, kept for the next
    assert other_space_sentence(other_space(project)).startswith("Besides the runs: dataset ")
    assert other_space_sentence([]) == ""
