"""Item 7 of issue 18: valid JSON of the wrong types gives each module's own message, never a traceback, and the
file is left as it was."""

from __future__ import annotations

import json

import pytest

from alltalk_gui.core.project.folder import ProjectError, VoiceProject
from alltalk_gui.core.training.checkpoints import (CONFIG_FILE, STATE_FILE, WEIGHTS_FILE, CheckpointError,
                                                   read_checkpoint)
from alltalk_gui.core.transcript.segments import SegmentList, SegmentsError
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like


@pytest.fixture
def project(tmp_path):
    project = make_project(tmp_path)
    add_source(project, "take.wav", voice_like(4.0))
    SegmentList.create(project, [segment("c00001", "s001", 0, 3000, "The first clip of my voice.")])
    return project


def _rewrite(path, change):
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path.read_bytes()


@pytest.mark.parametrize("change, message", [
    (lambda d: d["sources"][0].update(analysis="oops"), "'analysis' of source 's001' must be an object"),
    (lambda d: d["sources"][0].update(size_bytes="12"), "'size_bytes' of source 's001' must be a whole number"),
    (lambda d: d["sources"][0].update(reasons=[1]), "'reasons' of source 's001' must be a list of texts"),
    (lambda d: d["sources"][0]["analysis"].update(duration_s="long"), "'duration_s' must be a number"),
    (lambda d: d["sources"][0]["analysis"].update(envelope={"a": 1}), "'envelope' must be a list of numbers"),
    (lambda d: d["sources"][0].update(name=None), "'name' of source 's001' must be a text"),
])
def test_project_json_with_wrong_types(project, change, message):
    raw = _rewrite(project.project_file, change)
    with pytest.raises(ProjectError, match=message):
        VoiceProject.open(project.root)
    assert project.project_file.read_bytes() == raw


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(settings="x"), "'settings' must be an object, found str"),
    (lambda d: d.update(transcription=[]), "'transcription' must be an object"),
    (lambda d: d.update(next_number="7"), "'next_number' must be a whole number"),
    (lambda d: d["settings"].update(max_s="11"), "'settings.max_s' must be a number"),
    (lambda d: d["settings"].update(language=3), "'settings.language' must be a text"),
    (lambda d: d["segments"][0].update(flags="x"), "clip number 1 is malformed"),
])
def test_segments_json_with_wrong_types(project, change, message):
    raw = _rewrite(project.segments_file, change)
    with pytest.raises(SegmentsError, match=message):
        SegmentList.open(VoiceProject.open(project.root))
    assert project.segments_file.read_bytes() == raw


def _checkpoint(tmp_path, state):
    folder = tmp_path / "runs" / "r" / "checkpoints" / "step_4"
    folder.mkdir(parents=True)
    (folder / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
    (folder / CONFIG_FILE).write_text(json.dumps({"base_model_dir": "", "language": "en"}), encoding="utf-8")
    (folder / WEIGHTS_FILE).write_bytes(b"x")
    return folder


@pytest.mark.parametrize("state, message", [
    ([], "must hold a JSON object, found list"),
    ({"global_step": "4"}, "'global_step' is of the wrong type"),
    ({"global_step": 4, "history": [{"step": 4, "loss": "low"}]}, "'history' must be a list of objects"),
    ({"global_step": 4, "hacked": 1}, "'hacked' is an unknown key"),
])
def test_train_state_json_with_wrong_types(tmp_path, state, message):
    folder = _checkpoint(tmp_path, state)
    with pytest.raises(CheckpointError, match=message):
        read_checkpoint(folder)


def test_a_well_typed_train_state_still_reads(tmp_path):
    folder = _checkpoint(tmp_path, {"global_step": 4, "epoch": 1, "best_eval_loss": None,
                                    "history": [{"step": 4, "loss": 1.5}]})
    info = read_checkpoint(folder)
    assert (info.step, info.epoch, info.eval_loss) == (4, 1, 1.5)


@pytest.mark.parametrize("data, message", [
    ([], "must be a JSON object, found list"),
    ({"epochs": "10"}, "epochs must be int, found str"),
    ({"lr": None}, "lr must be float or int, found NoneType"),
    ({"gradient_checkpointing": 1}, "gradient_checkpointing must be bool, found int"),
])
def test_train_config_json_with_wrong_types(data, message):
    from alltalk_gui.core.training.config import ConfigError, TrainConfig

    with pytest.raises(ConfigError, match=message):
        TrainConfig.from_dict(data)


def test_a_train_config_with_an_int_for_a_float_still_reads():
    from alltalk_gui.core.training.config import TrainConfig

    assert TrainConfig.from_dict({"lr": 1, "epochs": 3}).epochs == 3


def test_a_preview_file_cannot_name_a_wav_outside_its_folder(tmp_path):
    from alltalk_gui.core.voice.preview import PreviewError, PreviewResult

    info = tmp_path / "p.json"
    info.write_text(json.dumps({"wav": "../../etc/passwd", "settings": {}}), encoding="utf-8")
    with pytest.raises(PreviewError, match="points outside"):
        PreviewResult.from_file(info)
