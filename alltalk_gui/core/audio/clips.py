"""The audio of clips: cut spans out of a project's working copies and measure them.

Clips are spans (start_ms, end_ms) of a source's normalised working copy (a mono wav in ``audio/`` at the
recording's own rate, at most 48 kHz; projects made before that have 22 050 Hz copies). The transcript editor
measures each clip after an edit (peak, clipped samples, how noise-like it is) for its flags; the dataset export
cuts the same spans into ``dataset/wavs``, at the engine's rate. Working copies are read once and kept in memory
(5 minutes of mono float32 at 48 kHz is about 58 MB).

Clipping cannot be measured on a working copy directly: the importer turns a clipped recording down (its peak
ends at -1 dBFS) and resamples it. So clipping is located, not detected, here: when the original recording was
clipped (the importer's analysis says so) or the working copy itself reaches full scale, the samples within
:data:`NEAR_PEAK` of the file's own peak mark where the flat tops are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np


CLIP_LEVEL = 0.999        # a sample at or above this magnitude is counted as clipped
NEAR_PEAK = 0.9           # in a clipped source, samples this close to the file's peak are the clipped ones
SOURCE_CLIPPED = 0.001    # the importer's analysis calls a source clipped from this share of samples
_FLATNESS_FRAME = 1024


class SourceFolder(Protocol):
    """What this module reads of a project (a :class:`alltalk_gui.core.project.folder.VoiceProject`): audio sits
    below projects in the layers, so it names only this."""

    def source(self, source_id: str) -> Any:
        """The source with ``source_id`` (its ``audio_file`` and ``analysis``); KeyError if there is none."""
        ...

    def path(self, relative: str) -> Path:
        """A project-relative path made absolute."""
        ...


class ClipAudioError(Exception):
    """A source's working audio is missing or unreadable; the message names the file and the source."""


@dataclass(frozen=True)
class AudioStats:
    peak: float
    clipped_fraction: float
    flatness: float  # mean spectral flatness of the louder frames: ~0 for tones and voice, ~0.5+ for noise
    # Share of 50 ms frames quieter than half the clip's mean level. Speech dips between syllables and words
    # (espeak sentences measured 0.21-0.35); music and hum are steady (0.0 for synthetic chords).
    low_energy_ratio: float | None = None

    def to_dict(self) -> dict[str, float | None]:
        return {"peak": round(self.peak, 5), "clipped_fraction": round(self.clipped_fraction, 6),
                "flatness": round(self.flatness, 4),
                "low_energy_ratio": None if self.low_energy_ratio is None else round(self.low_energy_ratio, 4)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AudioStats":
        ratio = data.get("low_energy_ratio")  # absent in files written before it was measured
        return cls(float(data["peak"]), float(data["clipped_fraction"]), float(data["flatness"]),
                   None if ratio is None else float(ratio))


def measure(samples: np.ndarray, sample_rate: int, clip_level: float = CLIP_LEVEL) -> AudioStats:
    """Peak, clipped fraction (share of samples at or above ``clip_level``) and spectral flatness of a mono
    float signal."""
    if samples.size == 0:
        return AudioStats(0.0, 0.0, 0.0, None)
    magnitude = np.abs(samples)
    peak = float(magnitude.max())
    clipped = float(np.count_nonzero(magnitude >= clip_level)) / samples.size
    return AudioStats(peak, clipped, _flatness(samples), _low_energy_ratio(samples, sample_rate))


def _low_energy_ratio(samples: np.ndarray, sample_rate: int) -> float | None:
    hop = max(1, sample_rate // 20)
    frames = samples.size // hop
    if frames < 20:  # under a second: too short to tell a rhythm
        return None
    rms = np.sqrt((samples[: frames * hop].astype(np.float64).reshape(frames, hop) ** 2).mean(axis=1))
    if rms.mean() <= 0:
        return None
    return float(np.mean(rms < 0.5 * rms.mean()))


def _flatness(samples: np.ndarray) -> float:
    frames = samples.size // _FLATNESS_FRAME
    if frames == 0:
        return 0.0
    blocks = samples[: frames * _FLATNESS_FRAME].reshape(frames, _FLATNESS_FRAME) * np.hanning(_FLATNESS_FRAME)
    power = np.abs(np.fft.rfft(blocks, axis=1)) ** 2 + 1e-12
    energy = power.mean(axis=1)
    # Only frames within 30 dB of the loudest count: pauses between words are near-silent and flat.
    loud = energy >= energy.max() * 1e-3
    flat = np.exp(np.log(power[loud]).mean(axis=1)) / power[loud].mean(axis=1)
    return float(flat.mean())


class ClipAudio:
    """Reads clip spans from a project's working copies, caching each source's samples.

    Raises (from every method): ClipAudioError when the source is unknown or its working copy is missing.
    """

    def __init__(self, project: SourceFolder) -> None:
        self.project = project
        self._cache: dict[str, tuple[np.ndarray, int]] = {}
        self._clip_level: dict[str, float] = {}

    def source_samples(self, source_id: str) -> tuple[np.ndarray, int]:
        if source_id not in self._cache:
            try:
                source = self.project.source(source_id)
            except KeyError:
                raise ClipAudioError(f"Source {source_id} is not in the project any more.") from None
            path = self.project.path(source.audio_file)
            if not path.is_file():
                raise ClipAudioError(f"The working audio of '{source.name}' ({path}) is missing; import the file "
                                     "again.")
            from alltalk_gui.core.audio import decode as audio  # PyAV: only when audio is read (fast listing)

            try:
                data, rate = audio.load(path)
            except audio.AudioError as exc:
                raise ClipAudioError(f"Cannot read the working audio of '{source.name}': {exc}") from exc
            self._cache[source_id] = (audio.to_mono(data), int(rate))
        return self._cache[source_id]

    def forget(self, source_id: str) -> None:
        """Drop a source's samples from the cache (the dataset export reads one source at a time)."""
        self._cache.pop(source_id, None)

    def clip(self, source_id: str, start_ms: int, end_ms: int) -> tuple[np.ndarray, int]:
        """The samples of one span (clamped to the file) and the sample rate."""
        samples, rate = self.source_samples(source_id)
        first = max(0, start_ms * rate // 1000)
        last = min(samples.size, end_ms * rate // 1000)
        return samples[first:max(first, last)], rate

    def stats(self, source_id: str, start_ms: int, end_ms: int) -> AudioStats:
        samples, rate = self.clip(source_id, start_ms, end_ms)
        return measure(samples, rate, self._source_clip_level(source_id))

    def _source_clip_level(self, source_id: str) -> float:
        if source_id not in self._clip_level:
            whole, _rate = self.source_samples(source_id)
            peak = float(np.abs(whole).max()) if whole.size else 0.0
            original_clipped = float(self.project.source(source_id).analysis.get("clipped_fraction", 0.0))
            if peak >= CLIP_LEVEL:
                self._clip_level[source_id] = CLIP_LEVEL
            elif original_clipped >= SOURCE_CLIPPED and peak > 0:
                self._clip_level[source_id] = NEAR_PEAK * peak
            else:
                self._clip_level[source_id] = np.inf  # never clipped: nothing can count as a flat top
        return self._clip_level[source_id]

    def duration_ms(self, source_id: str) -> int:
        samples, rate = self.source_samples(source_id)
        return samples.size * 1000 // rate
