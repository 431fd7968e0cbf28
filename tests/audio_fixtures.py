"""Audio files for tests, generated when a test asks for them (no binaries in the repository).

Signals are built with numpy (sines, speech-like bursts, noise at a known SNR) or spoken by espeak-ng
(:func:`alltalk_gui.testing.speech.synthesize`). Files are written with soundfile where libsndfile has the
format, and with PyAV's own FFmpeg encoders otherwise (mp3 is written by PyAV so that the libsndfile-less path
is exercised too, m4a/aac, and a video with an audio track).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import soundfile as sf


def db_to_amp(db: float) -> float:
    return 10.0 ** (db / 20.0)


def sine(freq: float, seconds: float, sr: int, peak_dbfs: float = -6.0, channels: int = 1) -> np.ndarray:
    """A sine of the given peak level, ``(frames, channels)`` float32; channels get slightly different phases."""
    t = np.arange(int(round(seconds * sr))) / sr
    cols = [db_to_amp(peak_dbfs) * np.sin(2 * np.pi * freq * t + 0.3 * c) for c in range(channels)]
    return np.stack(cols, axis=1).astype(np.float32)


def speech_like(seconds: float, sr: int, level_dbfs: float = -20.0, seed: int = 0,
                burst_s: float = 0.35, pause_s: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """Syllable-like bursts separated by pauses: returns ``(signal, mask)``, mono float32 and the burst mask.

    Each burst is a 120-180 Hz harmonic tone with a few overtones (a crude vowel) under a raised-cosine envelope,
    with burst lengths jittered. The signal is scaled so that its RMS *over the bursts* (mask true) is
    ``level_dbfs``: that is the "speech level" a known-SNR test defines its noise against.
    """
    rng = np.random.default_rng(seed)
    n = int(round(seconds * sr))
    x = np.zeros(n, dtype=np.float64)
    mask = np.zeros(n, dtype=bool)
    pos = int(pause_s * sr)
    while pos < n:
        length = int(sr * burst_s * rng.uniform(0.6, 1.4))
        end = min(n, pos + length)
        t = np.arange(end - pos) / sr
        f0 = rng.uniform(120, 180)
        tone = sum(np.sin(2 * np.pi * f0 * k * t + rng.uniform(0, 6.28)) / k for k in range(1, 6))
        ramp = min(int(0.02 * sr), (end - pos) // 2)
        env = np.ones(end - pos)
        if ramp:
            half = 0.5 - 0.5 * np.cos(np.linspace(0, np.pi, ramp))
            env[:ramp] = half
            env[-ramp:] = half[::-1]
        x[pos:end] = tone * env
        mask[pos:end] = True
        pos = end + int(sr * pause_s * rng.uniform(0.7, 1.3))
    rms = np.sqrt(np.mean(x[mask] ** 2))
    x *= db_to_amp(level_dbfs) / rms
    return x.astype(np.float32), mask


def add_noise(x: np.ndarray, mask: np.ndarray, snr_db: float, seed: int = 1) -> np.ndarray:
    """Add white noise so that (signal RMS over ``mask``) / (noise RMS) is exactly ``snr_db``."""
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(x.shape[0])
    noise /= np.sqrt(np.mean(noise ** 2))
    signal_rms = np.sqrt(np.mean(x[mask].astype(np.float64) ** 2))
    noise *= signal_rms / db_to_amp(snr_db)
    return (x + noise).astype(np.float32)


def write_sf(path: Path, x: np.ndarray, sr: int, subtype: str | None = None, fmt: str | None = None) -> Path:
    """Write with soundfile (wav/flac/ogg/opus/aiff/mp3 through libsndfile)."""
    sf.write(str(path), x, sr, subtype=subtype, format=fmt)
    return Path(path)


def write_pyav(path: Path, x: np.ndarray, sr: int, codec: str, container_format: str | None = None,
               video: str | None = None, bit_rate: int | None = None) -> Path:
    """Encode ``x`` ((frames,) or (frames, channels), float) with PyAV's FFmpeg into ``path``.

    With ``video`` set to a video encoder name (``"mpeg4"``, ``"libvpx"`` for webm) a small moving-gradient video
    stream (10 fps, 64x48) of the same length goes in first, so the file is a real video whose audio track is
    not its first stream.
    """
    x2 = x[:, None] if x.ndim == 1 else x
    channels = x2.shape[1]
    layout = "mono" if channels == 1 else "stereo"
    with av.open(str(path), mode="w", format=container_format) as out:
        vstream = None
        if video:
            vstream = out.add_stream(video, rate=10)
            vstream.width, vstream.height, vstream.pix_fmt = 64, 48, "yuv420p"
        astream = out.add_stream(codec, rate=sr)
        astream.layout = layout
        if bit_rate:
            astream.bit_rate = bit_rate
        cc = astream.codec_context
        fmt = cc.format.name if cc.format is not None else "fltp"
        frame_size = cc.frame_size or 1024
        if vstream is not None:
            n_video = max(1, int(np.ceil(x2.shape[0] / sr * 10)))
            for i in range(n_video):
                img = np.zeros((48, 64, 3), dtype=np.uint8)
                img[:, :, 0] = (np.arange(64)[None, :] * 4 + i * 10) % 256
                img[:, :, 1] = (np.arange(48)[:, None] * 5) % 256
                frame = av.VideoFrame.from_ndarray(img, format="rgb24")
                frame.pts = i
                frame.time_base = Fraction(1, 10)
                for packet in vstream.encode(frame):
                    out.mux(packet)
        pts = 0
        for start in range(0, x2.shape[0], frame_size):
            block = x2[start:start + frame_size]
            frame = _audio_frame(block, fmt, layout, sr)
            frame.pts = pts
            pts += block.shape[0]
            for packet in astream.encode(frame):
                out.mux(packet)
        for packet in astream.encode(None):
            out.mux(packet)
        if vstream is not None:
            for packet in vstream.encode(None):
                out.mux(packet)
    return Path(path)


def _audio_frame(block: np.ndarray, fmt: str, layout: str, sr: int) -> av.AudioFrame:
    planar = fmt.endswith("p")
    base = fmt.rstrip("p")
    if base == "flt":
        data = block.astype(np.float32)
    elif base == "s16":
        data = (np.clip(block, -1, 1) * 32767).astype(np.int16)
    elif base == "s32":
        data = (np.clip(block, -1, 1) * 2147483647).astype(np.int32)
    elif base == "dbl":
        data = block.astype(np.float64)
    else:
        raise ValueError(f"sample format {fmt} not handled by the fixture writer")
    arr = np.ascontiguousarray(data.T) if planar else np.ascontiguousarray(data.reshape(1, -1))
    frame = av.AudioFrame.from_ndarray(arr, format=fmt, layout=layout)
    frame.sample_rate = sr
    return frame


def write_video_only(path: Path, seconds: float = 0.5) -> Path:
    """An mp4 with a video stream and no audio at all (a silent screen recording)."""
    with av.open(str(path), mode="w") as out:
        vstream = out.add_stream("mpeg4", rate=10)
        vstream.width, vstream.height, vstream.pix_fmt = 64, 48, "yuv420p"
        for i in range(max(1, int(seconds * 10))):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), i * 20 % 256, dtype=np.uint8), format="rgb24")
            frame.pts = i
            for packet in vstream.encode(frame):
                out.mux(packet)
        for packet in vstream.encode(None):
            out.mux(packet)
    return Path(path)
