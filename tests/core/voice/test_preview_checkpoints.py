"""Checkpoint discovery for preview and export: latest, best, a path, a run folder; no checkpoint yet."""

from __future__ import annotations

import shutil

import pytest

from alltalk_gui.core.training.checkpoints import CheckpointError, list_checkpoints, read_checkpoint, resolve_checkpoint
from alltalk_gui.core.project.folder import VoiceProject
from tests.trained_voice import trained_voice


@pytest.fixture(scope="module")
def voice(tmp_path_factory):
    return trained_voice(tmp_path_factory)


def test_latest_best_path_and_run_folder(voice):
    found = list_checkpoints(voice.project)
    assert [c.step for c in found] == [2, 4] and all(c.eval_loss is not None for c in found)
    latest = resolve_checkpoint(voice.project, "latest")
    assert latest.step == 4 and latest.run == "run1" and latest.weights.is_file()
    assert latest.base_model_dir == voice.base_model and latest.language == "en"
    best = resolve_checkpoint(voice.project, "best")
    assert best.eval_loss == min(c.eval_loss for c in found)
    assert resolve_checkpoint(voice.project, str(found[0].path)).step == 2
    assert resolve_checkpoint(voice.project, "runs/run1").step == 4  # a run folder: its newest checkpoint
    assert resolve_checkpoint(voice.project, "best", run="run1") == best
    assert "run1 · step 4, eval loss" in latest.label


def test_no_checkpoint_yet(tmp_path):
    project = VoiceProject.create(tmp_path / "fresh")
    assert list_checkpoints(project.root) == []
    with pytest.raises(CheckpointError, match="no training checkpoint .* yet. Train the voice first"):
        resolve_checkpoint(project.root, "latest")
    with pytest.raises(CheckpointError, match="There is no run 'other'"):
        resolve_checkpoint(project.root, "best", run="other")


def test_incomplete_checkpoints_are_never_offered(voice, tmp_path):
    run = tmp_path / "runs" / "r"
    shutil.copytree(voice.project / "runs" / "run1", run)
    newest = run / "checkpoints" / "step_0000004"
    (newest / "train_state.json").unlink()  # as if the save had been cut short
    shutil.copytree(run / "checkpoints" / "step_0000002", run / "checkpoints" / ".tmp-step_0000006")
    assert [c.step for c in list_checkpoints(tmp_path)] == [2]
    with pytest.raises(CheckpointError, match="train_state.json is missing"):
        read_checkpoint(newest)


def test_best_needs_an_eval(voice, tmp_path):
    import json

    run = tmp_path / "runs" / "r"
    shutil.copytree(voice.project / "runs" / "run1", run)
    for state_file in run.glob("checkpoints/*/train_state.json"):
        state = json.loads(state_file.read_text())
        state["history"] = []
        state_file.write_text(json.dumps(state))
    with pytest.raises(CheckpointError, match="no 'best' one. Use 'latest'"):
        resolve_checkpoint(tmp_path, "best")
    assert resolve_checkpoint(tmp_path, "latest").step == 4


def test_not_a_checkpoint(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        resolve_checkpoint(tmp_path, str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="not a complete training checkpoint"):
        resolve_checkpoint(tmp_path, str(tmp_path / "empty"))


def _with_eval_losses(voice, tmp_path, losses: dict[int, float | None]):
    """A copy of the trained project whose checkpoints report ``losses`` (step -> eval loss, None: no eval)."""
    import json

    project = tmp_path / "voice"
    shutil.copytree(voice.project, project)
    for step, loss in losses.items():
        state_file = project / "runs" / "run1" / "checkpoints" / f"step_{step:07d}" / "train_state.json"
        state = json.loads(state_file.read_text())
        state["history"] = [h for h in state["history"] if h["step"] != step]
        if loss is not None:
            state["history"].append({"epoch": 0, "step": step, "loss": loss})
        state_file.write_text(json.dumps(state))
    return project


def test_the_default_is_the_best_checkpoint_and_latest_while_none_has_an_eval_loss(voice, tmp_path):
    from alltalk_gui.core.training.checkpoints import default_checkpoint

    project = _with_eval_losses(voice, tmp_path / "a", {2: 1.0, 4: 2.0})  # the earlier one is better
    assert default_checkpoint(project).step == 2 and resolve_checkpoint(project, "latest").step == 4
    project = _with_eval_losses(voice, tmp_path / "b", {2: None, 4: None})
    assert default_checkpoint(project).step == 4
