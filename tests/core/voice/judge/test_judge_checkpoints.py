"""The judge on tiny-model runs on the CPU: an XTTS v2 run judges the base model (step 0) and each checkpoint
from the training process's events, keeps the judge's choice from pruning and exports report.json; an F5-TTS run
is judged after training with ``alltalk-gui judge``, and Preview defaults to the judge's choice. Both engines go
through the same judge. The tiny models speak noise, so the scores are what the judge makes of noise (WER 1, no
likeness); what is tested is that every step is judged, stored, chosen from and shown."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.training.checkpoints import KEEP_MARK, run_checkpoints
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.event_text import event_text
from alltalk_gui.core.training.events import Checkpoint, Done, Judged, Log, Started
from alltalk_gui.core.training.runner import load_observers, run_to_sink
from alltalk_gui.core.voice.judge import available, in_training
from alltalk_gui.core.voice.judge.in_training import TrainingJudge
from alltalk_gui.core.voice.judge.scores import read_scores
from alltalk_gui.core.voice.preview import GenerationSettings
from alltalk_gui.testing.speech import make_speech_dataset
from tests.trained_voice import whisper_tiny_en

pytestmark = pytest.mark.slow
FAST = GenerationSettings(options={"max_new_tokens": 8})  # the tiny XTTS model rarely stops by itself


def _config(root, engine, base, **more) -> TrainConfig:
    project = VoiceProject.create(root / "voice", name="Judged Voice", language="en")
    make_speech_dataset(project.dataset_dir, n_train=4, n_eval=2)
    return TrainConfig(engine=engine, project_dir=str(project.root), base_model_dir=str(base), run_name="run1",
                       device="cpu", language="en", batch_size=2, lr=1e-3, warmup_steps=0, keep_last=1,
                       memory_interval_s=60.0, judge_whisper_model=whisper_tiny_en(), **more)


@pytest.fixture(scope="module")
def xtts_run(tmp_path_factory):
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts

    root = tmp_path_factory.mktemp("judged_xtts")
    config = _config(root, "xtts", build_tiny_xtts(root / "tiny_base"), epochs=2)
    events = list(run_to_sink(config, resume=False, events_path=None, observers=[TrainingJudge(config, FAST)]))
    return config, events


def test_the_base_model_and_every_checkpoint_are_judged_during_training(xtts_run):
    config, events = xtts_run
    assert isinstance(events[-1], Done) and events[-1].reason == "finished"
    judged = [e for e in events if isinstance(e, Judged)]
    saved = [e.step for e in events if isinstance(e, Checkpoint)]
    assert [e.step for e in judged] == [0, *saved] and len(saved) == 2
    # Each Judged event follows what it judged: step 0 right after Started, a checkpoint right after its event.
    kinds = [type(e) for e in events]
    assert kinds[kinds.index(Started) + 1] is Judged
    for i, event in enumerate(events):
        if isinstance(event, Checkpoint):
            assert isinstance(events[i + 1], Judged) and events[i + 1].step == event.step
    for event in judged:
        assert event.sentences >= 4 and event.seconds > 0 and event.measure == "wer"
        assert event.error_rate is not None and 1.0 <= event.mos <= 5.0
        assert f"Judged {'step ' + str(event.step) if event.step else 'the base model'}" in event_text(event)
    assert judged[-1].best_step in saved and judged[-1].best_reason.startswith(f"step {judged[-1].best_step}: ")

    scores = read_scores(config.run_dir)
    assert [s.step for s in scores] == [0, *saved]
    for step in scores:
        assert all(step.wav(i).is_file() for i in range(len(step.sentences)))
    # The judge's choice survives pruning (keep_last=1), marked; the other older checkpoint is gone.
    kept = {c.step: c for c in run_checkpoints(config.run_dir)}
    assert judged[-1].best_step in kept and (kept[judged[-1].best_step].path / KEEP_MARK).is_file()
    assert sum((c.path / KEEP_MARK).is_file() for c in kept.values()) == 1


def test_the_export_carries_the_judges_report(xtts_run, tmp_path):
    from alltalk_gui.core.voice.export import ExportOptions, export_voice
    from alltalk_gui.core.voice.judge.best import best_choice

    config, _events = xtts_run
    choice = best_choice(config.project_dir)
    assert choice.scores is not None and choice.reason.startswith("chosen by the judge: step ")
    result = export_voice(choice.checkpoint, tmp_path, ExportOptions(format="alltalk", name="judged"))
    report = json.loads((result.folder / "report.json").read_text(encoding="utf-8"))
    assert "report.json" in result.files
    assert report["judged"] and report["step"] == choice.checkpoint.step
    assert report["judge_choice"]["step"] == choice.checkpoint.step
    assert report["base_model"]["step"] == 0 and len(report["scores"]["sentences"]) >= 4
    assert "wav" not in report["scores"]["sentences"][0]


def test_observers_follow_the_config_and_the_extra(tmp_path, monkeypatch):
    config = TrainConfig(project_dir=str(tmp_path), run_name="r")
    assert [type(o) for o in load_observers(config)] == [TrainingJudge]
    config.judge = False
    assert load_observers(config) == []
    config.judge = True
    monkeypatch.setattr(available, "missing_packages", lambda: ["resemblyzer"])
    (unavailable,) = load_observers(config)
    said = list(unavailable(STARTED))
    assert isinstance(said[0], Log) and "needs resemblyzer" in said[0].message
    assert in_training.observer(config) is not None


STARTED = Started(run_dir="", device="cpu", processes=1, train_clips=1, eval_clips=0, steps_per_epoch=1,
                  total_steps=1, start_step=0, start_epoch=0, trainable_parameters=1, config={})


def test_a_failing_judge_is_a_warning_and_training_goes_on(tmp_path):
    config = TrainConfig(project_dir=str(tmp_path / "missing"), run_name="r", language="en", device="cpu",
                         judge_whisper_model=whisper_tiny_en())
    (said,) = list(TrainingJudge(config)(STARTED))
    assert isinstance(said, Log) and said.message.startswith("The judge could not score the base model: ")


def test_without_a_whisper_model_the_judge_says_so_once_and_stays_off(tmp_path):
    config = TrainConfig(project_dir=str(tmp_path), run_name="r", language="en", device="cpu",
                         judge_whisper_model=str(tmp_path / "no_such_model"))
    judge = TrainingJudge(config)
    (said,) = list(judge(STARTED))
    assert isinstance(said, Log) and said.message.startswith("The checkpoint judge is off for this run: it listens "
                                                             "with Whisper, and there is no Whisper model")
    checkpoint = Checkpoint(step=2, epoch=1, path=str(tmp_path / "step_0000002"), reason="epoch")
    assert list(judge(checkpoint)) == []


def test_an_f5_run_is_judged_after_training_and_preview_follows_the_choice(tmp_path):
    from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5
    from alltalk_gui.core.training.loop import train

    config = _config(tmp_path, "f5", build_tiny_f5(tmp_path / "f5tts_v1_tiny"), epochs=1, judge=False,
                     max_audio_seconds=30.0, min_audio_seconds=1.0)
    assert list(train(config))[-1].reason == "finished"
    project = config.project_dir

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "alltalk_gui", *map(str, args)], capture_output=True, text=True,
                              timeout=900)

    done = cli("judge", project, "--whisper-model", whisper_tiny_en(), "--device", "cpu")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("base model (step 0): ") and lines[1].startswith("step ")
    assert lines[-2].startswith("Best: ") and lines[-1].strip().startswith("chosen by the judge: step ")
    assert [s.step for s in read_scores(config.run_dir)][0] == 0

    again = cli("judge", project, "--whisper-model", whisper_tiny_en(), "--device", "cpu", "--json")
    assert again.returncode == 0, again.stderr
    rows = [json.loads(line) for line in again.stdout.splitlines()]
    assert len(rows) == 1 and rows[0]["reason"].startswith("chosen by the judge")  # nothing left to judge

    listed = cli("checkpoints", project)
    assert "judge: " in listed.stdout and "(best)" in listed.stdout
    out = tmp_path / "take.wav"
    spoken = cli("preview", project, "--text", "Hello there.", "--out", out, "--steps", "4", "--device", "cpu")
    assert spoken.returncode == 0, spoken.stderr
    assert "Checkpoint: chosen by the judge: step " in spoken.stdout
