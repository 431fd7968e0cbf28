"""Fixtures of the F5-TTS engine tests: the tiny random F5 model folder (one per test module), a short espeak-ng
clip with its transcript."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

# f5-tts is installed with --no-deps, by its own line (see pyproject.toml); an environment made before that
# line existed has no f5_tts: say so rather than fail every test with an ImportError.
pytest.importorskip("f5_tts", reason="f5-tts is not installed: pip install --no-deps f5-tts==1.1.22")

from alltalk_gui.core.engines.f5.tiny_model import build_tiny_f5  # noqa: E402

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
