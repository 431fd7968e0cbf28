"""The dataset's longest training clip, read from its wavs' headers: what a run's memory is sized for."""

from __future__ import annotations

import numpy as np
import soundfile

from alltalk_gui.core.dataset.clip_lengths import longest_clip_seconds
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, MetadataRow, write_metadata


def _dataset(folder, train_seconds, eval_seconds=(), missing=()):
    (folder / "wavs").mkdir(parents=True)
    rows = {TRAIN_CSV: [], EVAL_CSV: []}
    for csv, lengths in ((TRAIN_CSV, train_seconds), (EVAL_CSV, eval_seconds)):
        for seconds in lengths:
            name = f"wavs/clip_{len(rows[TRAIN_CSV]) + len(rows[EVAL_CSV]):03d}.wav"
            soundfile.write(folder / name, np.zeros(int(seconds * 24000), dtype=np.float32), 24000)
            rows[csv].append(MetadataRow(name, "Words.", "anna"))
    rows[TRAIN_CSV] += [MetadataRow(f"wavs/{name}.wav", "Gone.", "anna") for name in missing]
    for csv, items in rows.items():
        write_metadata(folder / csv, items)
    return folder


def test_the_longest_training_clip_counts_not_an_eval_clip(tmp_path):
    folder = _dataset(tmp_path / "dataset", [2.5, 7.25, 4.0], eval_seconds=[20.0])
    assert abs(longest_clip_seconds(folder) - 7.25) < 1e-3


def test_a_missing_clip_is_left_to_training_to_report(tmp_path):
    folder = _dataset(tmp_path / "dataset", [3.0], missing=["not_there"])
    assert abs(longest_clip_seconds(folder) - 3.0) < 1e-3


def test_no_dataset_or_an_unreadable_one_is_unknown(tmp_path):
    assert longest_clip_seconds(tmp_path / "nothing") is None
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / TRAIN_CSV).write_bytes(b"\xff\xfe not a metadata file")
    assert longest_clip_seconds(tmp_path / "broken") is None
    empty = _dataset(tmp_path / "empty", [], missing=["gone"])
    assert longest_clip_seconds(empty) is None
