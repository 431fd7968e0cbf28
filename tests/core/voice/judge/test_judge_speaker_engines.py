"""The checkpoint judge on an engine that speaks from a speaker name (Orpheus-TTS): the base model and each
checkpoint speak the judging set as the run's speaker, as a preview of the checkpoint does. Before, the judge asked
every engine for reference clips and scored no Orpheus or Parler step at all ("Orpheus-TTS 3B speaks from the name
of the speaker: give it")."""

from __future__ import annotations

import pytest

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Done, Judged, Log
from alltalk_gui.core.training.runner import run_to_sink
from alltalk_gui.core.voice.judge.in_training import TrainingJudge
from alltalk_gui.core.voice.judge.scores import read_scores
from alltalk_gui.core.voice.preview import GenerationSettings
from alltalk_gui.testing.speech import make_speech_dataset
from alltalk_gui.testing.tiny_whisper import faster_tiny_en
from tests.orpheus_tiny import tiny_orpheus_folder

pytestmark = pytest.mark.slow


def test_an_orpheus_run_is_judged_as_its_speaker(tmp_path, tmp_path_factory):
    project = VoiceProject.create(tmp_path / "voice", name="Judged Voice", language="en", engine="orpheus")
    make_speech_dataset(project.dataset_dir, n_train=3, n_eval=2, speaker="judged_voice")
    config = TrainConfig(engine="orpheus", project_dir=str(project.root), run_name="run1",
                         base_model_dir=str(tiny_orpheus_folder(tmp_path_factory)), device="cpu", language="en",
                         max_steps=1, warmup_steps=0, options={"base_weights": "fp32"},
                         judge_whisper_model=str(faster_tiny_en()))
    short = GenerationSettings(options={"max_seconds": 0.9})  # the random model would speak until its cap
    events = list(run_to_sink(config, resume=False, events_path=None,
                              observers=[TrainingJudge(config, short)]))
    said = [e.message for e in events if isinstance(e, Log)]
    problems = [m for m in said if m.startswith(("The judge", "The checkpoint judge"))]
    assert not problems
    assert isinstance(events[-1], Done)
    assert [e.step for e in events if isinstance(e, Judged)] == [0, 1]
    scores = read_scores(config.run_dir)
    assert [s.step for s in scores] == [0, 1]
    assert all(s.sentences and all(s.wav(i).is_file() for i in range(len(s.sentences))) for s in scores)
