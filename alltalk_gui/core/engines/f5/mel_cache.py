"""F5-TTS's frozen front end, once per clip: the Vocos mel of every training clip, cached on disk.

F5 learns from each clip's mel spectrogram (:func:`~alltalk_gui.core.engines.f5.data.mel_spectrogram`: decode,
resample to 24 kHz, STFT, mel bands, log). Nothing in it learns, yet the loader computed it again every time a clip
came round, every epoch. Here it runs once per clip before training and is kept in
:mod:`~alltalk_gui.core.training.feature_cache`, keyed by the clip's bytes and the mel's settings (and the f5-tts
version whose function computes it); a later run, or a resumed one, reads it. The numbers are the function's own,
stored as float32: a run from the cache gets exactly the batches a run that computed them gets.

The mels stay in memory for the run: 5 minutes of audio is 28,000 frames of 100 bands, 11 MB.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from alltalk_gui.core.engines.f5.files import MEL
from alltalk_gui.core.training.feature_cache import FeatureCache, cache_root, text_digest

KIND = "f5-vocos-mel"
VERSION = 1


def model_key() -> str:
    """The mel's identity: its settings and the f5-tts release whose function computes it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("f5-tts")
    except PackageNotFoundError:  # a source checkout: the settings alone
        release = "unknown"
    return text_digest(json.dumps({"kind": KIND, "f5_tts": release, **MEL}, sort_keys=True))


def compute_mel(path: Path) -> dict[str, np.ndarray]:
    """A clip's entry: its Vocos mel, frames x 100, float32."""
    from alltalk_gui.core.engines.f5.data import load_audio_24k, mel_spectrogram

    return {"mel": mel_spectrogram(load_audio_24k(path)).numpy().astype(np.float32, copy=False)}


class ClipMels:
    """Every clip's mel, from the cache or computed (on the CPU, as the loader computed it)."""

    def __init__(self, config, *, root: str | os.PathLike[str] | None | bool = True) -> None:
        where = cache_root(config) if root is True else (root or None)
        self.cache = FeatureCache(where, KIND, model_key(), VERSION)

    def of(self, clips: Sequence[Any]) -> list[np.ndarray]:
        """Mels of ``clips`` (objects with ``audio_path`` and ``frames``), in order."""
        return [self.cache.get(clip.audio_path, compute_mel, check=_checker(clip.frames))["mel"] for clip in clips]

    def note(self) -> str:
        return self.cache.summary("Mel spectrograms")


def _checker(frames: int):
    bands = MEL["n_mel_channels"]

    def check(arrays: dict[str, np.ndarray]) -> bool:
        mel = arrays["mel"]
        # The clip's length in frames comes from its duration; the resampled waveform may differ by a sample.
        return (mel.dtype == np.float32 and mel.ndim == 2 and mel.shape[1] == bands
                and abs(mel.shape[0] - frames) <= 1 and bool(np.isfinite(mel).all()))

    return check


