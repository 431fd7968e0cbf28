"""``alltalk-gui make-test-model DIR --engine f5-tts`` as a real process."""

from __future__ import annotations

import subprocess
import sys

from alltalk_gui.core.engines.f5.files import validate_base_model


def test_make_test_model_writes_a_valid_f5_folder(tmp_path):
    folder = tmp_path / "f5tts_v1_tiny"
    result = subprocess.run([sys.executable, "-m", "alltalk_gui", "make-test-model", str(folder), "--engine", "f5-tts"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "F5-TTS" in result.stdout and "not a voice" in result.stdout
    info = validate_base_model(folder)
    assert info.arch["dim"] == 64 and info.has_vocoder
