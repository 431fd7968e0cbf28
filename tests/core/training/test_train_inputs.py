"""Bad inputs: each is a clear error before training starts, and nothing in the project or base model changes."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core.training import loop as train_module
from alltalk_gui.core.training.config import ConfigError, TrainConfig
from alltalk_gui.core.training.events import Done, Error, Started, Step
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV
from alltalk_gui.core.training.loop import train
from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
from alltalk_gui.testing.speech import make_speech_dataset


@pytest.fixture(scope="module")
def tiny_master(tmp_path_factory) -> Path:
    return build_tiny_xtts(tmp_path_factory.mktemp("tiny_xtts"))


@pytest.fixture(scope="module")
def dataset_master(tmp_path_factory) -> Path:
    return make_speech_dataset(tmp_path_factory.mktemp("speech") / "dataset", n_train=3, n_eval=1)


@pytest.fixture()
def setup(tmp_path, tiny_master, dataset_master):
    """A fresh copy of the project and base model per test, so each may damage its own."""
    project = tmp_path / "project"
    shutil.copytree(dataset_master, project / "dataset")
    base = tmp_path / "base"
    shutil.copytree(tiny_master, base)
    config = TrainConfig(project_dir=str(project), base_model_dir=str(base), run_name="run", device="cpu",
                         language="en", epochs=1,
                         options={"min_conditioning_seconds": 1.0, "max_conditioning_seconds": 2.0})
    return project, base, config


def _snapshot(*folders: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}


def _rejected(config: TrainConfig, kind: str, *needles: str) -> Error:
    events = list(train(config))
    assert not any(isinstance(e, (Started, Step)) for e in events), "training must not start"
    error = next(e for e in events if isinstance(e, Error))
    assert error.kind == kind, error.message
    for needle in needles:
        assert needle in error.message, error.message
    assert isinstance(events[-1], Done) and events[-1].reason == "error"
    return error


def _checked(setup, kind, *needles):
    project, base, config = setup
    before = _snapshot(project / "dataset", base)
    _rejected(config, kind, *needles)
    assert _snapshot(project / "dataset", base) == before
    assert not list(project.glob("runs/*/checkpoints/step_*"))


def test_missing_base_model_file(setup):
    (setup[1] / "mel_stats.pth").unlink()
    _checked(setup, "base_model", "missing mel_stats.pth")


def test_wrong_vocab(setup):
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(setup[1] / "vocab.json"))
    size = vocab.get_vocab_size()
    vocab.add_tokens(["zz", "qq"])  # as if it came from a model with a larger vocabulary
    vocab.save(str(setup[1] / "vocab.json"))
    _checked(setup, "base_model", "vocab.json", f"has {size + 2} tokens but model.pth was trained with {size}")


def test_no_dataset_folder_says_how_to_write_one(setup):
    shutil.rmtree(setup[0] / "dataset")
    _rejected(setup[2], "dataset", "There is no dataset folder", "Export dataset on the Transcribe & Edit page",
              "alltalk-gui dataset PROJECT")


def test_dataset_without_eval_file(setup):
    (setup[0] / "dataset" / EVAL_CSV).unlink()
    _checked(setup, "dataset", "has no metadata_eval.csv", "at least one eval clip")


def test_dataset_with_empty_eval_file(setup):
    (setup[0] / "dataset" / EVAL_CSV).write_text("audio_file|text|speaker_name\n")
    _checked(setup, "dataset", "metadata_eval.csv lists no clips")


def test_unreadable_wav(setup):
    (setup[0] / "dataset" / "wavs" / "clip_001.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    _checked(setup, "dataset", "metadata_train.csv line 3 (wavs/clip_001.wav): the audio file cannot be read")


def test_missing_wav(setup):
    (setup[0] / "dataset" / "wavs" / "clip_002.wav").unlink()
    _checked(setup, "dataset", "line 4 (wavs/clip_002.wav): the audio file does not exist")


def test_clip_over_the_length_limit(setup):
    wav, rate = sf.read(setup[0] / "dataset" / "wavs" / "clip_000.wav")
    sf.write(setup[0] / "dataset" / "wavs" / "clip_000.wav", np.tile(wav, 5), rate)  # ~15 s
    _checked(setup, "dataset", "line 2 (wavs/clip_000.wav): the clip is 1", "the limit is 11.6 s")


def test_text_with_unknown_characters(setup):
    csv = setup[0] / "dataset" / TRAIN_CSV
    lines = csv.read_text().splitlines()
    lines[2] = "wavs/clip_001.wav|the þing sat on the mat.|tester"  # a letter no XTTS language uses
    csv.write_text("\n".join(lines) + "\n")
    _checked(setup, "dataset", "line 3", "does not know: 'þ'")


def test_all_problems_reported_together(setup):
    (setup[0] / "dataset" / "wavs" / "clip_001.wav").write_bytes(b"junk")
    (setup[0] / "dataset" / "wavs" / "clip_002.wav").unlink()
    project, base, config = setup
    error = _rejected(config, "dataset", "2 clip(s)", "clip_001.wav", "clip_002.wav")
    assert error.message.count("\n  - ") == 2


def test_no_free_disk(setup, monkeypatch):
    monkeypatch.setattr(train_module, "disk_free_bytes", lambda path: 10 << 20)
    _checked(setup, "disk_full", "Not enough free disk space", "MB needed", "MB free")


def test_disk_fills_during_training_stops_cleanly_and_keeps_the_last_checkpoint(setup, monkeypatch):
    project, base, config = setup
    config.save_every_steps = 1
    config.epochs = 2
    calls = {"n": 0}

    def free(path):
        calls["n"] += 1
        return 100 << 30 if calls["n"] <= 2 else 1 << 20  # the start check and the first save fit, then full

    monkeypatch.setattr(train_module, "disk_free_bytes", free)
    events = list(train(config))
    error = next(e for e in events if isinstance(e, Error))
    assert error.kind == "disk_full"
    assert "The last checkpoint (step_0000001) is kept" in error.message and "--resume" in error.message
    assert events[-1].reason == "error" and events[-1].last_checkpoint.endswith("step_0000001")
    assert sorted(p.name for p in (config.run_dir / "checkpoints").iterdir()) == ["step_0000001"]

    monkeypatch.setattr(train_module, "disk_free_bytes", lambda path: 100 << 30)  # space freed
    rest = list(train(config, resume=True))
    assert rest[-1].reason == "finished" and [e.step for e in rest if isinstance(e, Step)][0] == 2


@pytest.mark.parametrize("pairs, message", [
    (["mixed_precision=fp16"], "fp16 needs a CUDA GPU"),
    (["optimizer=adamw8bit"], "runs on CUDA GPUs only"),
    (["batch_size=0"], "batch_size must be at least 1"),
    (["lr_schedule=linear"], "lr_schedule must be one of cosine, constant"),
    (["gradient_checkpointing=maybe"], "gradient_checkpointing expects true or false"),
    (["min_conditioning_seconds=7"], "min_conditioning_seconds must be at most max_conditioning_seconds"),
    (["text_ce_weight=-1"], "text_ce_weight must be between 0 and 10"),
    (["ema_decay=0.9"], "ema_decay is a setting of F5-TTS v1; it does nothing for XTTS v2"),
])
def test_impossible_settings_name_the_field(setup, pairs, message):
    project, base, config = setup
    with pytest.raises(ConfigError, match=message):
        config.with_overrides(pairs).validate(cuda_available=False)


def test_config_error_comes_out_as_an_event(setup):
    project, base, config = setup
    config.mixed_precision = "fp16"
    _checked(setup, "config", "fp16 needs a CUDA GPU")
