"""Which Whisper model the checkpoint judge listens with when nobody chose one: the model that transcribed the
project (still on this computer), not the Transcribe step's default, which a user who transcribed with another
model may never have downloaded. Before, ``alltalk-gui train`` after ``transcribe --model X`` judged nothing:
"there is no Whisper model 'small' on this computer"."""

from __future__ import annotations

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Log, Started
from alltalk_gui.core.transcript.segments import SegmentList
from alltalk_gui.core.transcription.wer import transcribed_with
from alltalk_gui.core.voice.judge import judge as judge_module
from alltalk_gui.core.voice.judge.in_training import TrainingJudge

STARTED = Started(run_dir="", device="cpu", processes=1, train_clips=1, eval_clips=0, steps_per_epoch=1,
                  total_steps=1, start_step=0, start_epoch=0, trainable_parameters=1, config={})


def _transcribed(tmp_path, model: str) -> VoiceProject:
    project = VoiceProject.create(tmp_path / "voice", language="en")
    SegmentList.create(project, [], meta={"backend": "faster-whisper", "model": model, "language": "en"})
    return project


class _RecordingJudge:
    """Stands in for the Judge: remembers the model it was asked to listen with, and has no Whisper."""

    asked: list = []

    def __init__(self, device, whisper_model=None, checker=None) -> None:  # noqa: ARG002 - Judge's signature
        _RecordingJudge.asked.append(whisper_model)

    def checker(self):
        return None, "no Whisper here"


def test_the_model_that_transcribed_the_project_is_known_while_it_is_there(tmp_path):
    folder = tmp_path / "my whisper"
    folder.mkdir()
    assert transcribed_with(_transcribed(tmp_path / "a", str(folder)).root) == str(folder)
    assert transcribed_with(_transcribed(tmp_path / "b", "tiny.en").root) == "tiny.en"  # a name: the cache's
    assert transcribed_with(_transcribed(tmp_path / "c", str(tmp_path / "gone")).root) is None
    assert transcribed_with(VoiceProject.create(tmp_path / "d" / "voice").root) is None  # not transcribed
    assert transcribed_with(None) is None


def test_the_judge_listens_with_the_projects_model_unless_one_was_chosen(tmp_path, monkeypatch):
    folder = tmp_path / "whisper"
    folder.mkdir()
    project = _transcribed(tmp_path, str(folder))
    monkeypatch.setattr(judge_module, "Judge", _RecordingJudge)
    _RecordingJudge.asked = []
    for chosen in ("", "base.en"):
        config = TrainConfig(project_dir=str(project.root), run_name="r", language="en", device="cpu",
                             judge_whisper_model=chosen)
        (said,) = list(TrainingJudge(config)(STARTED))
        assert isinstance(said, Log) and "no Whisper here" in said.message
    assert _RecordingJudge.asked == [str(folder), "base.en"]
