"""A take's level on the Preview page reads as people write levels: a take that peaks just under full scale is
"peak 0 dBFS", not "peak -0 dBFS" (docs/images/preview_orpheus.png, first rendering: the tiny Orpheus model's
noise peaks at 0.99)."""

from __future__ import annotations

import numpy as np
import soundfile as sf

from alltalk_gui.core.voice.preview import GenerationSettings, PreviewResult
from alltalk_gui.gui.preview.ab_row import TakeView


def _take(qtbot, tmp_path, peak: float) -> TakeView:
    wav = tmp_path / "take.wav"
    sf.write(wav, np.sin(np.arange(24000) / 10).astype("float32") * peak, 24000)
    result = PreviewResult(wav=wav, info=tmp_path / "take.json", label="fine-tuned", text="Hello there.",
                           language="en", checkpoint=None, checkpoint_label="run · step 4", references=[],
                           settings=GenerationSettings(), sample_rate=24000, duration_s=1.0, generation_s=0.2)
    view = TakeView(result)
    qtbot.addWidget(view)
    return view


def test_a_take_just_under_full_scale_peaks_at_0_dbfs(qtbot, tmp_path):
    assert _take(qtbot, tmp_path, 0.99).info.text() == "1.0 s · peak 0 dBFS · made in 0.2 s"


def test_quieter_and_silent_takes(qtbot, tmp_path):
    assert "peak -20 dBFS" in _take(qtbot, tmp_path, 0.1).info.text()
    assert "· silent ·" in _take(qtbot, tmp_path, 0.0).info.text()
