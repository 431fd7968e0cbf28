"""Text files people write on Windows: UTF-8 "with BOM" (Notepad, Excel) and CRLF line ends read as they mean."""

from __future__ import annotations

import numpy as np
import soundfile as sf

from alltalk_gui.core.dataset.metadata import read_metadata
from alltalk_gui.core.voice.references import reference_text

BOM = "\ufeff"


def test_a_metadata_csv_saved_with_a_bom_and_crlf_reads(tmp_path):
    (tmp_path / "wavs").mkdir()
    sf.write(tmp_path / "wavs" / "a.wav", np.zeros(100, dtype="float32"), 22050)
    csv = tmp_path / "metadata_train.csv"
    csv.write_bytes((BOM + "audio_file|text|speaker_name\r\nwavs/a.wav|Grüß Gott.|Ana\r\n").encode("utf-8"))
    rows = read_metadata(csv)
    assert [(r.audio_file, r.text, r.speaker_name) for r in rows] == [("wavs/a.wav", "Grüß Gott.", "Ana")]


def test_a_reference_transcript_saved_with_a_bom_has_no_mark_in_its_words(tmp_path):
    clip = tmp_path / "voice.wav"
    sf.write(clip, np.zeros(100, dtype="float32"), 24000)
    (tmp_path / "voice.reference.txt").write_bytes((BOM + "Hello there,\r\nfriend.\r\n").encode("utf-8"))
    assert reference_text(clip) == "Hello there, friend."
