"""Numbers and a plain-language verdict for one recording, before anything is trained on it.

A voice fine-tune learns whatever is in the recordings: clipping, hiss, room hum and long silences end up in the
voice. The import step therefore measures each source (:func:`analyse`), turns the numbers into a verdict with
reasons a non-engineer can act on (:func:`judge`), and the working copies are brought to one speech level
(:func:`speech_level_dbfs`, used by :func:`alltalk_gui.core.audio.decode.normalise`).

How the levels are measured
---------------------------
The signal is cut into non-overlapping 30 ms frames and each frame's RMS is taken over all its channels together
(so two channels in opposite phase do not cancel out). In dBFS, 0 is a full-scale square wave; a full-scale sine
is -3 dBFS RMS and has a 0 dBFS peak.

* **noise floor**: the 10th percentile of the frame levels. Recorded speech has pauses between words and phrases,
  and in those the microphone hears only the room.
* **silence threshold**: halfway between the noise floor and the loud frames (95th percentile), but at most
  6 dB above the floor (frames of steady noise stay within a dB or two of it) and never below -60 dBFS. Frames
  below it count as silence (pauses).
* **speech level**: the RMS over all non-silent frames, i.e. speech plus whatever noise lies under it.
* **SNR**: speech level minus noise floor. From 20 dB up it is within a dB of the true ratio. Towards 10 dB it
  reads high, by about 0.5 dB for evenly loud syllables and 2-3 dB for real speech: the noise under the words
  adds to the speech level, and the quietest sounds sink under the threshold and count as pauses (which also
  raises ``silence_fraction`` for noisy recordings).

Limits, said plainly: if fewer than about a tenth of the frames are pauses (continuous talking, music beds), the
noise floor is taken from quiet speech and the SNR reads too low. Pauses that an editor or noise gate replaced
by digital silence read as perfectly clean (SNR near 100 dB) even if there is noise under the words; that is
deliberate, since what the fine-tune would learn from the pauses is then indeed silence. A steady signal with
no level changes at all (a tone, pure hiss, a constant hum) has no pauses to measure; then ``steady`` is true,
``snr_db`` reads about 0 dB (the signal measured against itself) and :func:`judge` says that the noise could
not be measured. Noise that comes and goes (traffic, a fan switching on) is measured only where it is
quietest. None of this is a perceptual loudness (LUFS) measure; it is a level for speech, which is what
training cares about.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from alltalk_gui.core.audio.info import AudioInfo

FRAME_S = 0.030
"""Length of an analysis frame: short enough to fall into the pauses between words, long enough for a stable RMS."""
DBFS_FLOOR = -120.0
"""Levels of digital silence are reported as this instead of minus infinity (JSON has no infinity)."""
ABSOLUTE_SILENCE_DBFS = -60.0
"""Frames below this are silence whatever the noise floor is; a file whose loud frames stay below it is silent."""
NOISE_PERCENTILE = 10.0
LOUD_PERCENTILE = 95.0
MAX_THRESHOLD_ABOVE_FLOOR_DB = 6.0
STEADY_SPREAD_DB = 6.0
"""If the loud frames are less than this above the quiet ones, the signal has no pauses (tone, hiss, hum)."""
CLIP_LEVEL = 0.999
"""A sample at or above this magnitude (-0.009 dBFS) counts as clipped; 16-bit full scale is 0.99997."""
ENVELOPE_BINS = 120

# Judgement thresholds. Each one becomes a reason the user reads, so each is a point where the advice changes.
CLIPPED_WARN_FRACTION = 0.001   # a handful of clipped samples is inaudible; 0.1 % is a distorted word or more
MOSTLY_SILENCE_FRACTION = 0.60  # more pause than speech: fine to use, but it yields less voice than its length says
VERY_NOISY_SNR_DB = 15.0        # hiss/hum plainly audible under the voice; the fine-tune will reproduce it
NOISY_SNR_DB = 25.0             # audible in pauses; usable, but a cleaner recording will give a cleaner voice
VERY_QUIET_DBFS = -40.0         # normalising it up by 20 dB or more raises the noise and quantisation with it
LOW_SAMPLE_RATE = 22050         # the lowest rate an engine trains at; below it the top of the voice is missing
SHORT_S = 15.0
TOO_SHORT_S = 1.0               # shorter than any usable training clip


def to_dbfs(value: float) -> float:
    """Convert a linear amplitude (1.0 = full scale) to dBFS, with :data:`DBFS_FLOOR` for zero."""
    if value <= 0.0 or not math.isfinite(value):
        return DBFS_FLOOR
    return max(DBFS_FLOOR, 20.0 * math.log10(value))


def frame_levels_dbfs(x: np.ndarray, sr: int) -> np.ndarray:
    """RMS level of each non-overlapping 30 ms frame of ``x`` in dBFS, all channels pooled.

    ``x`` is ``(frames,)`` or ``(frames, channels)``. The last, partial frame is kept if it is at least half a
    frame long. Works block by block, so a two-hour file needs no full-size temporary copy.
    """
    x2 = _as_2d(x)
    hop = max(1, int(round(FRAME_S * sr)))
    n = x2.shape[0]
    full = n // hop
    powers: list[np.ndarray] = []
    block = hop * max(1, (1 << 20) // hop)
    for start in range(0, full * hop, block):
        stop = min(start + block, full * hop)
        chunk = x2[start:stop].astype(np.float64)
        np.square(chunk, out=chunk)  # in place: one float64 block in memory, not two
        per_frame = chunk.reshape(-1, hop * x2.shape[1]).mean(axis=1)
        powers.append(per_frame)
    tail = n - full * hop
    if tail >= hop // 2 and tail > 0:
        powers.append(np.array([np.square(x2[full * hop:].astype(np.float64)).mean()]))
    if not powers:
        # Shorter than half a frame: one level for the whole thing.
        powers.append(np.array([np.square(x2.astype(np.float64)).mean()]) if n else np.zeros(0))
    power = np.concatenate(powers)
    with np.errstate(divide="ignore"):
        levels = 10.0 * np.log10(power)
    return np.maximum(levels, DBFS_FLOOR)


def _levels(frame_db: np.ndarray) -> dict[str, Any]:
    """Noise floor, silence threshold, speech level and SNR from frame levels (see the module docstring)."""
    if frame_db.size == 0:
        return {"noise_floor_dbfs": DBFS_FLOOR, "threshold_dbfs": ABSOLUTE_SILENCE_DBFS, "steady": False,
                "silent": np.zeros(0, dtype=bool), "speech_level_dbfs": None, "snr_db": None}
    floor = float(np.percentile(frame_db, NOISE_PERCENTILE))
    loud = float(np.percentile(frame_db, LOUD_PERCENTILE))
    spread = loud - floor
    steady = spread < STEADY_SPREAD_DB
    if steady:
        # No pauses to tell the signal from the background: only the absolute threshold applies.
        threshold = ABSOLUTE_SILENCE_DBFS
    else:
        threshold = max(ABSOLUTE_SILENCE_DBFS, floor + min(spread / 2.0, MAX_THRESHOLD_ABOVE_FLOOR_DB))
    silent = frame_db < threshold
    speech_level = None
    if not silent.all():
        speech_power = float(np.mean(np.power(10.0, frame_db[~silent] / 10.0)))
        speech_level = max(DBFS_FLOOR, 10.0 * math.log10(speech_power)) if speech_power > 0 else DBFS_FLOOR
    snr = None if speech_level is None else speech_level - floor
    return {"noise_floor_dbfs": floor, "threshold_dbfs": threshold, "steady": steady, "silent": silent,
            "speech_level_dbfs": speech_level, "snr_db": snr}


def speech_level_dbfs(x: np.ndarray, sr: int) -> float | None:
    """RMS level of the non-silent frames of ``x`` in dBFS, or ``None`` if there are none (a silent file)."""
    return _levels(frame_levels_dbfs(x, sr))["speech_level_dbfs"]


def analyse(x: np.ndarray, sr: int) -> dict[str, Any]:
    """Measure a recording for the import verdict and the waveform thumbnail.

    Args:
        x: samples as from :func:`alltalk_gui.core.audio.decode.load`, ``(frames, channels)`` or ``(frames,)``, in
            [-1, 1], at the original sample rate (resampling first would hide clipping and shift the peak).
        sr: sample rate in Hz.

    Returns:
        A JSON-able dict of plain floats (never ``None``, so callers can format every value): ``duration_s``;
        ``peak_dbfs``; ``clipped_fraction`` (share of samples, all channels, at or above :data:`CLIP_LEVEL`,
        0..1); ``silence_fraction`` (share of 30 ms frames below the silence threshold, 0..1);
        ``speech_level_dbfs`` (:data:`DBFS_FLOOR` if no frame is above the threshold); ``noise_floor_dbfs``;
        ``snr_db`` (0 for a silent file); ``steady`` (bool: the level never changes, so there are no pauses
        and ``snr_db`` means nothing); ``envelope`` (up to 120 floats 0..1, the peak of each equal-length
        stretch, for the waveform thumbnail). Levels never go below :data:`DBFS_FLOOR`. The method and its
        limits are in the module docstring.
    """
    if sr <= 0:
        raise ValueError(f"sample rate must be positive, got {sr}")
    x2 = _as_2d(x)
    frames = x2.shape[0]
    peak = 0.0
    clipped = 0
    block = 1 << 20
    for start in range(0, frames, block):
        a = np.abs(x2[start:start + block])
        if a.size:
            peak = max(peak, float(a.max()))
            clipped += int(np.count_nonzero(a >= CLIP_LEVEL))
    frame_db = frame_levels_dbfs(x2, sr)
    lv = _levels(frame_db)
    silent = lv["silent"]
    return {
        "duration_s": round(frames / sr, 4),
        "peak_dbfs": round(to_dbfs(peak), 2),
        "clipped_fraction": round(clipped / x2.size, 6) if x2.size else 0.0,
        "silence_fraction": round(float(silent.mean()), 4) if silent.size else 1.0,
        "speech_level_dbfs": round(_or(lv["speech_level_dbfs"], DBFS_FLOOR), 2),
        "noise_floor_dbfs": round(lv["noise_floor_dbfs"], 2),
        "snr_db": round(_or(lv["snr_db"], 0.0), 2),
        "steady": bool(lv["steady"]),
        "envelope": envelope(x2),
    }


def envelope(x: np.ndarray, bins: int = ENVELOPE_BINS) -> list[float]:
    """Peak magnitude of each of ``bins`` equal stretches of ``x`` (fewer for very short input), 0..1."""
    x2 = _as_2d(x)
    n = x2.shape[0]
    if n == 0:
        return []
    bins = min(bins, n)
    edges = np.linspace(0, n, bins + 1).astype(np.int64)
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        out.append(round(min(1.0, float(np.abs(x2[a:b]).max())), 4) if b > a else 0.0)
    return out


def judge(analysis: dict[str, Any], info: AudioInfo) -> tuple[str, list[str]]:
    """Turn :func:`analyse` numbers and the file's :class:`AudioInfo` into a verdict and plain-language reasons.

    Returns:
        ``("ok", [])``, ``("warning", reasons)`` for problems that make a worse voice but can still be used, or
        ``("unusable", reasons)`` for files with nothing to learn from (silent, under a second). Reasons are
        short phrases such as ``"clipped 2.1 % of samples"`` or ``"very noisy (SNR 8 dB)"``, worst first.
    """
    unusable: list[str] = []
    warnings: list[str] = []
    duration = float(analysis.get("duration_s", 0.0))
    speech = analysis.get("speech_level_dbfs")
    speech = DBFS_FLOOR if speech is None else float(speech)
    peak = float(analysis.get("peak_dbfs", DBFS_FLOOR))
    if speech <= DBFS_FLOOR or peak < ABSOLUTE_SILENCE_DBFS:
        unusable.append("silent: no signal above -60 dBFS" if peak > DBFS_FLOOR else "silent: all samples are zero")
    if duration < TOO_SHORT_S:
        unusable.append(f"too short to use ({duration:.1f} s)")
    if unusable:
        return "unusable", unusable

    clipped = float(analysis.get("clipped_fraction", 0.0))
    if clipped >= CLIPPED_WARN_FRACTION:
        warnings.append(f"clipped {_percent(clipped)} % of samples")
    snr = analysis.get("snr_db")
    if analysis.get("steady") or snr is None:
        warnings.append("no pauses found: the background noise cannot be measured (is this speech?)")
    elif snr < VERY_NOISY_SNR_DB:
        warnings.append(f"very noisy (SNR {snr:.0f} dB)")
    elif snr < NOISY_SNR_DB:
        warnings.append(f"noisy (SNR {snr:.0f} dB)")
    if speech < VERY_QUIET_DBFS:
        warnings.append(f"very quiet (speech at {speech:.0f} dBFS)")
    silence = float(analysis.get("silence_fraction", 0.0))
    if silence > MOSTLY_SILENCE_FRACTION:
        warnings.append(f"mostly silence ({silence * 100:.0f} %)")
    if info.sample_rate < LOW_SAMPLE_RATE:
        warnings.append(f"low sample rate ({_khz(info.sample_rate)} kHz): voice will sound muffled")
    if duration < SHORT_S:
        warnings.append(f"short ({duration:.0f} s)")
    return ("warning", warnings) if warnings else ("ok", [])


def _as_2d(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 1:
        return x[:, None]
    if x.ndim != 2:
        raise ValueError(f"expected audio of shape (frames,) or (frames, channels), got {x.shape}")
    return x


def _or(value: float | None, default: float) -> float:
    return default if value is None else float(value)


def _percent(fraction: float) -> str:
    pct = fraction * 100
    return f"{pct:.1f}" if pct < 10 else f"{pct:.0f}"


def _khz(rate: int) -> str:
    return f"{rate / 1000:g}" if rate % 1000 == 0 else f"{rate / 1000:.2f}".rstrip("0").rstrip(".")
