"""Issue 29 item 1, beyond datasets: every path that comes from a file the user did not write stays inside its
folder, as written and through links.

A project is shared as an archive, which keeps links: ``audio/x.wav -> /home/me/private.wav`` is as far outside as
``/home/me/private.wav`` written in project.json. The same holds for a project's dataset (training input, and the
references an export copies onward), a preview's JSON, checkpoint names read from train_state.json, run and
checkpoint folders, and a recording's script (the known text), which was read through project.json's
``original_path``, a path a shared project can set to any file on this computer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import soundfile as sf

from alltalk_gui.core.project.folder import ProjectError, VoiceProject
from tests.core.transcript.test_segments_support import RATE, add_source, make_project, voice_like


@pytest.fixture
def private(tmp_path) -> Path:
    """A recording outside every project (what a hostile link points at)."""
    path = tmp_path / "private" / "secret.wav"
    path.parent.mkdir()
    sf.write(path, voice_like(2.0, seed=9), RATE)
    return path


@pytest.mark.parametrize("key", ["file", "audio_file"])
def test_a_project_whose_source_is_a_link_to_a_file_outside_it_is_refused_on_open(tmp_path, private, key):
    project = make_project(tmp_path)
    source = add_source(project, "take.wav", voice_like(2.0))
    linked = project.path(getattr(source, key))
    linked.unlink()
    linked.symlink_to(private)
    before = project.project_file.read_bytes()
    with pytest.raises(ProjectError, match=f"'{key}' of source 's001' .* is a link to .*outside the project"):
        VoiceProject.open(project.root)
    assert project.project_file.read_bytes() == before  # left as it is


def test_a_project_whose_audio_folder_is_a_link_out_of_it_is_refused_on_open(tmp_path):
    project = make_project(tmp_path)
    add_source(project, "take.wav", voice_like(2.0))
    elsewhere = tmp_path / "elsewhere"
    project.audio_dir.rename(elsewhere)
    project.audio_dir.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ProjectError, match="outside the project"):
        VoiceProject.open(project.root)


def test_a_project_folder_that_is_itself_a_link_opens(tmp_path):
    """The project folder is the user's choice (kept on another disk and linked): only links inside it count."""
    project = make_project(tmp_path)
    add_source(project, "take.wav", voice_like(2.0))
    (tmp_path / "linked").symlink_to(project.root, target_is_directory=True)
    assert VoiceProject.open(tmp_path / "linked").sources[0].name == "take.wav"


def test_a_recordings_script_is_taken_at_import_and_never_through_original_path(tmp_path, private):
    from alltalk_gui.core.project.importer import import_files
    from alltalk_gui.core.transcript.known_text import known_text_file, load_known_text

    recordings = tmp_path / "recordings"
    recordings.mkdir()
    sf.write(recordings / "poem.wav", voice_like(3.0), RATE)
    (recordings / "poem.txt").write_text("Pity the world.\n", encoding="utf-8")
    project = make_project(tmp_path)
    source = import_files(project, [recordings / "poem.wav"]).imported[0]
    assert known_text_file(project, source.id).read_text(encoding="utf-8") == "Pity the world.\n"
    assert load_known_text(project, source) == "Pity the world."

    # A shared project's project.json names any file as the original; its .txt is not read.
    diary = tmp_path / "private" / "diary.txt"
    diary.write_text("My bank PIN is 1234.", encoding="utf-8")
    other = add_source(project, "other.wav", voice_like(2.0, seed=1))
    other.original_path = str(diary.with_suffix(".wav"))
    project.save()
    reopened = VoiceProject.open(project.root)
    assert load_known_text(reopened, reopened.source(other.id)) is None


def test_a_preview_json_whose_wav_is_a_link_out_of_the_folder_is_refused(tmp_path, private):
    from alltalk_gui.core.voice.preview import PreviewError, PreviewResult

    folder = tmp_path / "previews"
    folder.mkdir()
    (folder / "p.wav").symlink_to(private)
    info = folder / "p.json"
    info.write_text(json.dumps({"wav": "p.wav", "settings": {}}), encoding="utf-8")
    with pytest.raises(PreviewError, match="outside the previews folder"):
        PreviewResult.from_file(info)


def test_a_metadata_csv_row_that_is_a_link_out_of_the_dataset_is_refused(tmp_path, private):
    from alltalk_gui.core.dataset.metadata import MetadataError, read_metadata

    dataset = tmp_path / "dataset"
    (dataset / "wavs").mkdir(parents=True)
    (dataset / "wavs" / "c00002.wav").symlink_to(private)
    csv = dataset / "metadata_train.csv"
    csv.write_text("audio_file|text|speaker_name\nwavs/c00002.wav|Hostile.|me\n", encoding="utf-8")
    with pytest.raises(MetadataError, match="line 2: audio_file .* is a link to .*outside the dataset folder"):
        read_metadata(csv)


@pytest.mark.parametrize("best", ["../../../../victim", "/abs/step_1", "step_1/../../x"])
def test_a_best_checkpoint_name_that_is_a_path_is_refused(tmp_path, best):
    from alltalk_gui.core.training.checkpoints import (CONFIG_FILE, STATE_FILE, WEIGHTS_FILE, CheckpointError,
                                                        read_checkpoint)

    folder = tmp_path / "runs" / "r" / "checkpoints" / "step_0000004"
    folder.mkdir(parents=True)
    (folder / STATE_FILE).write_text(json.dumps({"global_step": 4, "best_checkpoint": best}), encoding="utf-8")
    (folder / CONFIG_FILE).write_text(json.dumps({"base_model_dir": "", "language": "en"}), encoding="utf-8")
    (folder / WEIGHTS_FILE).write_bytes(b"x")
    with pytest.raises(CheckpointError, match="'best_checkpoint' must name a checkpoint folder"):
        read_checkpoint(folder)


def test_run_and_checkpoint_folders_that_are_links_out_of_the_project_are_not_listed(tmp_path):
    from alltalk_gui.core.training.checkpoints import (CONFIG_FILE, STATE_FILE, WEIGHTS_FILE, list_checkpoints,
                                                        resolve_checkpoint)
    from alltalk_gui.core.training.loop import latest_checkpoint
    from alltalk_gui.core.training.run_folders import newest_run_with_checkpoint

    def checkpoint(folder: Path, step: int) -> Path:
        folder.mkdir(parents=True)
        (folder / STATE_FILE).write_text(json.dumps({"global_step": step}), encoding="utf-8")
        (folder / CONFIG_FILE).write_text(json.dumps({"base_model_dir": "", "language": "en"}), encoding="utf-8")
        (folder / WEIGHTS_FILE).write_bytes(b"x")
        return folder

    project = tmp_path / "project"
    checkpoint(project / "runs" / "own" / "checkpoints" / "step_0000001", 1)
    elsewhere = tmp_path / "elsewhere"  # someone's other training, which a resume would write to and prune
    checkpoint(elsewhere / "checkpoints" / "step_0000009", 9)
    (project / "runs" / "linked").symlink_to(elsewhere, target_is_directory=True)
    (project / "runs" / "own" / "checkpoints" / "step_0000005").symlink_to(
        elsewhere / "checkpoints" / "step_0000009", target_is_directory=True)

    assert [(c.run, c.step) for c in list_checkpoints(project)] == [("own", 1)]
    assert resolve_checkpoint(project).step == 1
    assert newest_run_with_checkpoint(project / "runs") == project / "runs" / "own"
    assert latest_checkpoint(project / "runs" / "own").name == "step_0000001"
