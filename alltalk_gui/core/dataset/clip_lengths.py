"""How long a dataset's training clips are, from their wav headers: what sizes a run's memory.

A run pads every micro-batch to its longest clip, so its peak memory is set by the longest training clip it keeps:
the shorter of the dataset's longest and the run's ``max_audio_seconds`` (clips above that are left out). The
profiles' estimates and the micro-batch they fill to (:mod:`alltalk_gui.core.training.profiles`) size for it, not
for the engine's limit: F5-TTS, Orpheus-TTS and Parler-TTS accept 30 s clips, while clips cut at a speaker's pauses
are seldom over 15 s.
"""

from __future__ import annotations

import os
from pathlib import Path

from alltalk_gui.core.dataset.metadata import TRAIN_CSV, MetadataError, MetadataRow, read_metadata


def clip_seconds(folder: str | os.PathLike[str], rows: list[MetadataRow]) -> list[float]:
    """The lengths of ``rows``' clips in the dataset ``folder`` that can be read, in seconds (from the headers)."""
    import soundfile

    found = []
    for row in rows:
        try:
            found.append(soundfile.info(str(Path(folder) / row.audio_file)).duration)
        except (RuntimeError, OSError):
            continue  # a missing or broken clip is training's to report, with its name
    return found


def longest_clip_seconds(dataset_dir: str | os.PathLike[str]) -> float | None:
    """The longest training clip of the dataset in ``dataset_dir`` (``metadata_train.csv``'s wavs), in seconds;
    None when there is no dataset there or none of its clips can be read (a run then sizes for its limit)."""
    try:
        rows = read_metadata(Path(dataset_dir) / TRAIN_CSV)
    except (MetadataError, OSError, ValueError):  # none there, unreadable, or not text
        return None
    return max(clip_seconds(dataset_dir, rows), default=None)
