"""Every engine's training data reaches DataLoader workers started as Windows starts them (spawned, so pickled):
the datasets and collate function each engine's ``training_setup`` really builds, on its tiny model and espeak-ng
speech, on the CPU. Parler-TTS builds them in its own environment: tests/core/engines/parler/test_training.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.testing.speech import make_speech_dataset, speech_available
from tests.loader_workers import round_trip, spawned_batch
from tests.orpheus_tiny import tiny_orpheus_folder


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    if not speech_available():
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng)")
    root = tmp_path_factory.mktemp("loader_workers")
    make_speech_dataset(root / "dataset", n_train=2, n_eval=1)
    return root


def tiny_model(engine: str, tmp_path_factory) -> Path:
    if engine == "orpheus":
        return tiny_orpheus_folder(tmp_path_factory)
    if engine == "f5":
        pytest.importorskip("f5_tts", reason="f5-tts is not installed: pip install --no-deps f5-tts==1.1.22")
    return get_engine(engine).make_test_model(tmp_path_factory.mktemp(f"tiny_{engine}") / "tiny")


_SETUPS: dict = {}  # engine -> its TrainingSetup, shared by the module's tests


def setup_of(engine: str, project: Path, base: Path):
    """What ``engine``'s training_setup builds for the training loop, on the CPU (made once per engine)."""
    if engine in _SETUPS:
        return _SETUPS[engine]
    config = TrainConfig().with_values(dict(
        engine=engine, project_dir=str(project), base_model_dir=str(base), run_name=f"workers_{engine}",
        device="cpu", language="en", batch_size=2, max_audio_seconds=30.0, min_audio_seconds=1.0))
    config.run_dir.mkdir(parents=True, exist_ok=True)  # the loop makes it before training_setup
    implementation = get_engine(engine)
    _SETUPS[engine] = implementation.training_setup(config, implementation.load_clips(config), torch.device("cpu"))
    return _SETUPS[engine]


@pytest.mark.parametrize("engine", ["xtts", "f5", "orpheus"])
def test_datasets_and_collate_pickle_as_spawned_workers_get_them(engine, project, tmp_path_factory):
    round_trip(setup_of(engine, project, tiny_model(engine, tmp_path_factory)))


def test_a_spawned_worker_loads_the_same_batch(project, tmp_path_factory):
    """One engine's loader with one worker started by spawning, Windows' only way (seconds: the worker imports
    torch and the engine's data module); the other engines' objects are the same kind and pickle above."""
    setup = setup_of("orpheus", project, tiny_model("orpheus", tmp_path_factory))
    assert spawned_batch(setup) < 60
