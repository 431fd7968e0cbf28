"""The judge loaded once per test module, listening with the real faster-whisper tiny.en of the test extra."""

from __future__ import annotations

import pytest

from alltalk_gui.core.transcription.wer import IntelligibilityChecker
from alltalk_gui.core.voice.judge.judge import Judge
from alltalk_gui.testing.tiny_whisper import faster_tiny_en


@pytest.fixture(scope="module")
def judge() -> Judge:
    return Judge("cpu", checker=IntelligibilityChecker(model=str(faster_tiny_en()), device="cpu"))
