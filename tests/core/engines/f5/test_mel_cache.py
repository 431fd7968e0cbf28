"""F5's mels run once per clip: the first use computes and caches every clip's Vocos mel, a later run reads them
(no mel computed), and a run from the cache trains exactly as one that computed every mel and kept nothing (the
same batches, losses and weights; fp32, CPU). A damaged entry is computed again, never trusted."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from alltalk_gui.core.engines.f5 import data as f5_data
from alltalk_gui.core.engines.f5 import mel_cache
from alltalk_gui.core.engines.f5.data import ClipSet, collate, load_dataset
from alltalk_gui.core.engines.f5.files import read_vocab
from alltalk_gui.core.engines.f5.mel_cache import ClipMels
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.events import Eval, Log, Step
from alltalk_gui.core.training.feature_cache import CACHE_DIR, file_digest
from alltalk_gui.core.training.loop import latest_checkpoint, train
from alltalk_gui.testing.speech import make_speech_dataset

TRAIN, EVAL = 3, 1


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("f5_mels")
    make_speech_dataset(root / "dataset", n_train=TRAIN, n_eval=EVAL)
    return root


class Counted:
    """Counts the mels computed (F5's front end) while it is installed."""

    def __init__(self, monkeypatch) -> None:
        self.calls = 0
        real = f5_data.mel_spectrogram

        def counted(wave):
            self.calls += 1
            return real(wave)

        monkeypatch.setattr(f5_data, "mel_spectrogram", counted)


def _config(project: Path, tiny_f5: Path, run: str) -> TrainConfig:
    return TrainConfig().with_values(dict(
        engine="f5", project_dir=str(project), base_model_dir=str(tiny_f5), run_name=run, device="cpu",
        language="en", lr=3e-3, lr_batch=0, warmup_steps=0, memory_interval_s=0.0, batch_size=2, max_steps=2,
        max_audio_seconds=30.0, min_audio_seconds=1.0))


def test_mels_are_computed_once_then_read_and_give_the_same_batches(project, tiny_f5, monkeypatch):
    vocab = read_vocab(tiny_f5 / "vocab.txt")
    clips, _ = load_dataset(project / "dataset", vocab, min_seconds=1.0, max_seconds=30.0, add_missing=False)
    config = _config(project, tiny_f5, "unused")

    counted = Counted(monkeypatch)
    first = ClipMels(config)
    computed = first.of(clips)
    assert counted.calls == TRAIN and first.cache.computed == TRAIN and first.cache.hits == 0
    [folder] = (project / CACHE_DIR).iterdir()
    assert len(list(folder.glob("*.npz"))) == TRAIN

    counted = Counted(monkeypatch)
    again = ClipMels(config)
    read = again.of(clips)
    assert counted.calls == 0 and again.cache.hits == TRAIN
    assert "3 clip(s) read from the cache, 0 computed" in again.note()

    uncached = collate([ClipSet(clips, vocab)[i] for i in range(TRAIN)])  # the loader's own mels, every time
    for mels in (computed, read):
        batch = collate([ClipSet(clips, vocab, mels)[i] for i in range(TRAIN)])
        assert batch.keys() == uncached.keys()
        for key, value in uncached.items():
            assert torch.equal(batch[key], value), key

    # A torn entry and another clip's entry under this clip's name are computed again, then replaced.
    torn, swapped, other = (folder / f"{file_digest(c.audio_path)}.npz" for c in clips[:3])
    torn.write_bytes(torn.read_bytes()[:100])
    swapped.write_bytes(other.read_bytes())
    counted = Counted(monkeypatch)
    repaired = ClipMels(config)
    repaired.of(clips)
    assert counted.calls == 2 and repaired.cache.rejected == 2
    assert "2 cached entries were damaged or stale and computed again" in repaired.note()
    counted = Counted(monkeypatch)
    ClipMels(config).of(clips)
    assert counted.calls == 0


def test_a_run_from_the_cache_trains_exactly_as_one_that_keeps_nothing(project, tiny_f5, monkeypatch):
    vocab = read_vocab(tiny_f5 / "vocab.txt")
    clips = load_dataset(project / "dataset", vocab, min_seconds=1.0, max_seconds=30.0, add_missing=False)
    ClipMels(_config(project, tiny_f5, "unused")).of(clips[0] + clips[1])  # every clip cached (or already was)
    counted = Counted(monkeypatch)
    cached_again = list(train(_config(project, tiny_f5, "cached-again")))
    assert counted.calls == 0
    assert any(f"{TRAIN + EVAL} clip(s) read from the cache, 0 computed" in e.message
               for e in cached_again if isinstance(e, Log))

    monkeypatch.setattr(mel_cache, "cache_root", lambda config: None)
    counted = Counted(monkeypatch)
    uncached = list(train(_config(project, tiny_f5, "uncached")))
    assert counted.calls == TRAIN + EVAL  # nothing kept: every clip computed

    def summary(events):
        return ([(e.step, e.loss, e.lr) for e in events if isinstance(e, Step)],
                [e.loss for e in events if isinstance(e, Eval)])

    assert summary(uncached) == summary(cached_again) and len(summary(uncached)[0]) == 2
    weights = [load_file(str(latest_checkpoint(project / "runs" / run) / "model.safetensors"))
               for run in ("uncached", "cached-again")]
    for name, tensor in weights[0].items():
        assert torch.equal(tensor, weights[1][name]), name
