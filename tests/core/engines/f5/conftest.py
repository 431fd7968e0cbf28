"""Fixtures of the F5-TTS engine tests: the tiny random F5 model folder (one per test module), a short espeak-ng
clip with its transcript."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5

REFERENCE_TEXT = "Hello there, this is a short test of the voice."


@pytest.fixture(scope="module")
def tiny_f5(tmp_path_factory) -> Path:
    return build_tiny_f5(tmp_path_factory.mktemp("tiny_f5") / "f5tts_v1_tiny")


@pytest.fixture(scope="module")
def speech(tmp_path_factory) -> Path:
    """About 3 s of synthetic speech (espeak-ng) saying :data:`REFERENCE_TEXT`."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (Debian: espeak-ng)")
    path = tmp_path_factory.mktemp("speech") / "reference.wav"
    subprocess.run(["espeak-ng", "-w", str(path), REFERENCE_TEXT], check=True, capture_output=True)
    return path
