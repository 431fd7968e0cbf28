"""A recording decoded block by block into a mono mix plus its import analysis, never whole and multi-channel.

The import used to decode a file whole (``frames x channels`` float32) before mixing it down, so the memory it
needed grew with the channel count a file's header claimed: a 3 MB FLAC of silence stating 8 channels at
655 kHz for ten minutes asked for 11.7 GiB. Here each decoded block (a few hundred kilobytes) is cleaned
(NaN/inf to 0, clipped to [-1, 1]), measured and averaged into one channel at once, so the peak memory is the
mono mix (``frames x 4`` bytes) plus one block, and the header's claims are checked before any of it is
allocated (:func:`alltalk_gui.core.audio.decode.probe`).

:class:`BlockAnalyser` gives the numbers :func:`alltalk_gui.core.audio.analysis.analyse` gives for the whole
array (the tests hold them equal), except the thumbnail envelope, which it takes from maxima over
:data:`ENVELOPE_TICK` samples: the same curve to the eye, without keeping any multi-channel samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from alltalk_gui.core.audio.analysis import CLIP_LEVEL, DBFS_FLOOR, ENVELOPE_BINS, FRAME_S, _levels, _or, to_dbfs

ENVELOPE_TICK = 64
"""Samples per stored maximum for the streamed envelope (1.5 ms at 44.1 kHz; 2 h at 48 kHz keeps 5.4 M floats)."""


class BlockAnalyser:
    """Accumulates peak, clipped samples, 30 ms frame powers (channels pooled) and envelope maxima per block."""

    def __init__(self, sr: int, channels: int) -> None:
        if sr <= 0:
            raise ValueError(f"sample rate must be positive, got {sr}")
        self.sr, self.channels = sr, channels
        self.hop = max(1, int(round(FRAME_S * sr)))
        self.frames = 0
        self.samples = 0  # frames x channels, for the clipped fraction
        self.peak = 0.0
        self.clipped = 0
        self._powers: list[np.ndarray] = []
        self._carry = np.zeros(0, dtype=np.float64)  # pooled power of the samples of an unfinished 30 ms frame
        self._ticks: list[np.ndarray] = []
        self._tick_carry = np.zeros(0, dtype=np.float32)

    def add(self, block: np.ndarray) -> None:
        """Measure one ``(n, channels)`` float32 block, already cleaned and clipped to [-1, 1]."""
        if block.shape[0] == 0:
            return
        magnitude = np.abs(block).max(axis=1)
        self.peak = max(self.peak, float(magnitude.max()))
        self.clipped += int(np.count_nonzero(np.abs(block) >= CLIP_LEVEL))
        self.frames += block.shape[0]
        self.samples += block.size
        pooled = np.concatenate([self._carry, np.square(block, dtype=np.float64).mean(axis=1)])
        whole = pooled.shape[0] // self.hop * self.hop
        if whole:
            self._powers.append(pooled[:whole].reshape(-1, self.hop).mean(axis=1))
        self._carry = pooled[whole:]
        ticks = np.concatenate([self._tick_carry, magnitude])
        whole = ticks.shape[0] // ENVELOPE_TICK * ENVELOPE_TICK
        if whole:
            self._ticks.append(ticks[:whole].reshape(-1, ENVELOPE_TICK).max(axis=1))
        self._tick_carry = ticks[whole:]

    def frame_levels_dbfs(self) -> np.ndarray:
        """The 30 ms frame levels, with the same rules for the last, partial frame as the whole-array version."""
        powers = list(self._powers)
        tail = self._carry.shape[0]
        if tail and (tail >= self.hop // 2 or not powers):
            powers.append(np.array([self._carry.mean()]))
        if not powers:
            return np.zeros(0)
        with np.errstate(divide="ignore"):
            levels = 10.0 * np.log10(np.concatenate(powers))
        return np.maximum(levels, DBFS_FLOOR)

    def envelope(self, bins: int = ENVELOPE_BINS) -> list[float]:
        """Peak magnitude of each of up to ``bins`` equal stretches, at :data:`ENVELOPE_TICK` resolution."""
        ticks = self._ticks + ([np.array([self._tick_carry.max()])] if self._tick_carry.size else [])
        if not ticks:
            return []
        maxima = np.concatenate(ticks)
        bins = min(bins, maxima.size)
        edges = np.linspace(0, maxima.size, bins + 1).astype(np.int64)
        return [round(min(1.0, float(maxima[a:b].max())), 4) if b > a else 0.0 for a, b in zip(edges[:-1], edges[1:])]

    def result(self) -> dict[str, Any]:
        """The analysis dict (see :func:`alltalk_gui.core.audio.analysis.analyse`)."""
        lv = _levels(self.frame_levels_dbfs())
        silent = lv["silent"]
        return {
            "duration_s": round(self.frames / self.sr, 4),
            "peak_dbfs": round(to_dbfs(self.peak), 2),
            "clipped_fraction": round(self.clipped / self.samples, 6) if self.samples else 0.0,
            "silence_fraction": round(float(silent.mean()), 4) if silent.size else 1.0,
            "speech_level_dbfs": round(_or(lv["speech_level_dbfs"], DBFS_FLOOR), 2),
            "noise_floor_dbfs": round(lv["noise_floor_dbfs"], 2),
            "snr_db": round(_or(lv["snr_db"], 0.0), 2),
            "steady": bool(lv["steady"]),
            "envelope": self.envelope(),
        }


class MonoMix:
    """The channels averaged into one growable float32 array, sized from the header's length up front.

    ``limit_frames`` stops a file whose header understated its length: :class:`TooLong` is raised as soon as
    the mix would pass it, before the memory is taken.
    """

    def __init__(self, expected_frames: int, limit_frames: int) -> None:
        self.limit = limit_frames
        self.buf = np.empty(max(1, min(expected_frames, limit_frames)), dtype=np.float32)
        self.frames = 0

    def add(self, block: np.ndarray) -> None:
        n = block.shape[0]
        if self.frames + n > self.limit:
            raise TooLong(self.frames + n)
        if self.frames + n > self.buf.shape[0]:
            grown = np.empty(min(self.limit, max(self.frames + n, int(self.buf.shape[0] * 1.25))), np.float32)
            grown[:self.frames] = self.buf[:self.frames]
            self.buf = grown
        mono = block[:, 0] if block.shape[1] == 1 else block.mean(axis=1, dtype=np.float32)
        self.buf[self.frames:self.frames + n] = mono
        self.frames += n

    def samples(self) -> np.ndarray:
        # A view keeps an unused tail alive, a copy briefly doubles the memory: copy only if most is unused.
        used = self.buf[:self.frames]
        return used if self.frames > 0.75 * self.buf.shape[0] else used.copy()


class TooLong(Exception):
    """The decoded audio passed the limit its header promised to stay under."""

    def __init__(self, frames: int) -> None:
        super().__init__(frames)
        self.frames = frames


def clean(block: np.ndarray) -> np.ndarray:
    """NaN and infinity to 0 / +-1, then clip to [-1, 1], in place (float files can hold anything)."""
    if not np.isfinite(block).all():
        np.nan_to_num(block, copy=False, nan=0.0, posinf=1.0, neginf=-1.0)
    np.clip(block, -1.0, 1.0, out=block)
    return block
