"""Run folders: plain run names, the newest and the resumable run, and a resume that trains the open project."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from alltalk_gui.core.project.long_paths import DEEPEST_IN_RUN, MAX_PATH, MAX_PROJECT_PATH, MAX_RUN_NAME
from alltalk_gui.core.training.checkpoints import CONFIG_FILE, STATE_FILE, WEIGHTS_FILE
from alltalk_gui.core.training.config import ConfigError, TrainConfig
from alltalk_gui.core.training.events import Done, JsonlSink, Step
from alltalk_gui.core.training.launch import LaunchError, resume_config, write_launch_config
from alltalk_gui.core.training.run_folders import (
    RunNameError,
    check_new_run_name,
    check_run_name,
    new_run_name,
    newest_run_with_checkpoint,
    resumable_run,
    run_dir,
    run_finished,
)


@pytest.mark.parametrize("name", ["run_20261123_041502", "my run-2.b", "Ünïcode_é", "x" * MAX_RUN_NAME,
                                  "console", "NULL", "com10"])
def test_plain_run_names_are_accepted(name):
    assert check_run_name(name) == name


@pytest.mark.parametrize("name", ["", ".", "..", "../x", "../../../etc", "a/b", "a\\b", "/abs", "C:x", "C:\\x",
                                  " lead", "trail.", "a\nb", "x" * 101, "NUL", "con.txt", "Com1"])
def test_names_that_are_not_plain_folder_names_are_refused(name):
    with pytest.raises(RunNameError):
        check_run_name(name)
    with pytest.raises(RunNameError):
        run_dir("/tmp/project", name)


@pytest.mark.parametrize("name, said", [
    ("CON", "CON is a device name on Windows"), ("aux.final", "aux is a device name on Windows"),
    ("LPT1 ", "Windows drops a dot or space at the end"), ("take.", "Windows drops a dot or space at the end"),
    ("take<2>", "Windows does not allow < > in a name"), ('say "hi"', 'Windows does not allow " in a name'),
    ("why?", "Windows does not allow ? in a name"), ("a|b*", "Windows does not allow * | in a name"),
])
def test_names_windows_cannot_hold_are_refused_saying_why(name, said):
    with pytest.raises(RunNameError, match="cannot be a folder on Windows") as refused:
        check_run_name(name)
    assert said in str(refused.value)


def test_a_new_run_name_whose_checkpoints_would_pass_windows_path_limit_is_refused():
    """At most MAX_RUN_NAME characters (UTF-16 units, as Windows counts): the run's deepest file, a checkpoint
    shard being saved, is then no deeper than the feature cache the project folder's own check allows for. A run
    made under the older limit (100) keeps its name: it still resumes."""
    check_new_run_name("r" * MAX_RUN_NAME)
    with pytest.raises(RunNameError, match=f"has {MAX_RUN_NAME + 1} characters; at most {MAX_RUN_NAME}"):
        check_new_run_name("r" * (MAX_RUN_NAME + 1))
    with pytest.raises(RunNameError, match="260"):
        check_new_run_name("\U00020000" * (MAX_RUN_NAME // 2 + 1))  # a CJK letter outside the BMP counts twice
    deepest = MAX_PROJECT_PATH + len("/runs/") + MAX_RUN_NAME + 1 + DEEPEST_IN_RUN
    assert deepest == MAX_PATH - 1  # the NUL
    assert check_run_name("r" * 100) == "r" * 100  # an existing run's name
    with pytest.raises(RunNameError, match="at most 100"):
        check_run_name("r" * 101)


def test_the_config_refuses_a_run_name_with_path_separators(tmp_path):
    config = TrainConfig(project_dir=str(tmp_path), base_model_dir=str(tmp_path), run_name="../../outside")
    with pytest.raises(ConfigError, match="not a plain folder name"):
        config.validate(cuda_available=False)
    TrainConfig(project_dir=str(tmp_path), base_model_dir=str(tmp_path), run_name="ok").validate(cuda_available=False)


def test_a_new_run_is_named_by_its_start_time():
    stamp = time.mktime((2026, 11, 23, 4, 15, 2, 0, 0, -1))
    assert new_run_name(stamp) == "run_20261123_041502"
    assert check_run_name(new_run_name()).startswith("run_")


def _checkpoint(run: Path, step: int, project: Path) -> Path:
    folder = run / "checkpoints" / f"step_{step:07d}"
    folder.mkdir(parents=True)
    (folder / WEIGHTS_FILE).write_bytes(b"weights")
    (folder / CONFIG_FILE).write_text(json.dumps(TrainConfig(project_dir=str(project), run_name=run.name).to_dict()))
    (folder / STATE_FILE).write_text(json.dumps({"global_step": step, "epoch": 0}))
    return folder


def _done(run: Path, reason: str, step: int) -> None:
    with JsonlSink(run / "events.jsonl") as sink:
        sink.write(Done(step=step, epoch=0, reason=reason, final_loss=1.0, best_eval_loss=None, best_checkpoint=None,
                        last_checkpoint=None, elapsed_s=1.0))


def test_the_newest_run_is_the_one_with_the_newest_checkpoint_and_a_finished_run_is_not_resumable(tmp_path):
    runs = tmp_path / "runs"
    assert newest_run_with_checkpoint(runs) is None and resumable_run(runs) is None
    old, new = runs / "run_a", runs / "run_b"
    _checkpoint(old, 1, tmp_path)
    time.sleep(0.02)
    _checkpoint(new, 2, tmp_path)
    (runs / "empty").mkdir()  # no checkpoint: never picked
    assert newest_run_with_checkpoint(runs) == new
    assert resumable_run(runs) == new and not run_finished(new)
    _done(new, "stopped", 2)
    assert resumable_run(runs) == new  # stopped: there is more to train
    _done(new, "finished", 2)
    assert run_finished(new) and resumable_run(runs) is None


def _project_with_run(root: Path, dataset_dir: str = "") -> Path:
    run = root / "runs" / "r1"
    config = TrainConfig(project_dir=str(root), base_model_dir="/models/xtts", run_name="r1", epochs=3,
                         dataset_dir=dataset_dir)
    write_launch_config(config)
    _checkpoint(run, 1, root)
    return run


def test_a_resume_in_a_copied_project_trains_the_copy_not_the_original(tmp_path):
    original = tmp_path / "original"
    _project_with_run(original, dataset_dir=str(original / "my_dataset"))
    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    config = resume_config(copy, "r1")
    assert config.project_dir == str(copy.absolute()) and config.run_dir == copy.absolute() / "runs" / "r1"
    assert config.dataset_path == copy.absolute() / "my_dataset"  # a dataset inside the project moves with it
    assert config.base_model_dir == "/models/xtts" and config.epochs == 3  # the rest as launched

    shutil.rmtree(original)  # nothing of the original is needed
    assert resume_config(copy, "r1").run_dir.is_dir()


def test_a_dataset_outside_the_project_stays_and_a_missing_launch_config_falls_back_to_the_checkpoint(tmp_path):
    root = tmp_path / "p"
    _project_with_run(root, dataset_dir="/data/elsewhere")
    assert resume_config(root, "r1").dataset_dir == "/data/elsewhere"
    (root / "runs" / "r1" / "launch_config.json").unlink()
    moved = tmp_path / "moved"
    root.rename(moved)
    config = resume_config(moved, "r1")  # from the checkpoint's train_config.json (no dataset_dir there)
    assert config.project_dir == str(moved.absolute()) and config.run_name == "r1"


def test_a_moved_or_shared_project_does_not_resume_on_a_dataset_outside_it(tmp_path):
    """Issue 29: a copied project's launch_config.json is foreign input; its outside dataset_dir is not trained on."""
    root = tmp_path / "p"
    _project_with_run(root, dataset_dir=str(tmp_path / "someone_elses_dataset"))
    shared = tmp_path / "shared"
    shutil.copytree(root, shared)
    with pytest.raises(LaunchError, match="outside the project, and the project has moved"):
        resume_config(shared, "r1")


def test_resume_refuses_a_run_name_with_separators_and_a_run_without_anything(tmp_path):
    _project_with_run(tmp_path / "p")
    with pytest.raises(RunNameError):
        resume_config(tmp_path / "p", "../p/runs/r1")
    (tmp_path / "p" / "runs" / "bare").mkdir()
    with pytest.raises(LaunchError, match="nothing to resume"):
        resume_config(tmp_path / "p", "bare")
