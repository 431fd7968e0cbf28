"""Fixtures of the Orpheus-TTS engine tests: the tiny random Orpheus base folder (one per test session,
tests/orpheus_tiny.py) and a small espeak-ng dataset at 22,050 Hz (the engine resamples to SNAC's 24 kHz)."""

from __future__ import annotations

from pathlib import Path

import pytest

from alltalk_gui.testing.speech import make_speech_dataset, speech_available
from tests.orpheus_tiny import tiny_orpheus_folder


@pytest.fixture(scope="module")
def tiny_orpheus(tmp_path_factory) -> Path:
    return tiny_orpheus_folder(tmp_path_factory)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A project folder holding ``dataset/`` (4 training and 1 eval clips of 2-4 s, speaker 'tester')."""
    if not speech_available():
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng)")
    root = tmp_path_factory.mktemp("orpheus_project")
    make_speech_dataset(root / "dataset", n_train=4, n_eval=1)
    return root
