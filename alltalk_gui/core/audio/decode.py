"""Reading any recording a user is likely to have, and making the working copy that training uses.

People bring phone memos (m4a), podcasts (mp3), exports from editors (wav, flac, aiff) and screen or camera
recordings (mp4, mkv, mov). Two decoders cover them without a system FFmpeg: libsndfile (through ``soundfile``)
for wav/flac/ogg/opus/mp3/aiff, and PyAV, which ships its own FFmpeg, for everything else (m4a/aac, wma, and the
first audio track of a video). The original file is never changed; :func:`make_working_copy` writes a mono,
16-bit copy at one speech level and at the recording's own rate (at most 48 kHz, :func:`working_rate`), which is
what transcription, the transcript editor and the dataset export read.

Every failure a user can cause (an empty file, a text file renamed ``.mp3``, a damaged download, a three-hour
recording) raises :class:`AudioError` with a message that names the file and says what is wrong. Measuring the
audio and judging it live in :mod:`alltalk_gui.core.audio.analysis`; ``analyse`` and ``judge`` are re-exported
here. This module must not import torch: the GUI imports it at start-up.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import av
import numpy as np
import soundfile as sf
import soxr

from alltalk_gui.core.atomic import atomic_path
from alltalk_gui.core.audio.info import AudioInfo, format_duration  # noqa: F401  (AudioInfo re-exported)
from alltalk_gui.core.audio import blocks
from alltalk_gui.core.audio.analysis import (  # noqa: F401  (re-exported: analyse and judge are public API here)
    DBFS_FLOOR,  # levels of digital silence; callers compare against it
    analyse,
    judge,
    speech_level_dbfs,
    to_dbfs,
)

# Besides the usual: phones' voice recorders (.amr, .3gp, .3ga: AMR or AAC), audiobooks (.m4b), Apple's Core Audio
# files (.caf), Matroska audio (.mka) and compressed AIFF (.aifc). FFmpeg reads them all.
AUDIO_EXTENSIONS = frozenset({".wav", ".flac", ".ogg", ".oga", ".opus", ".mp3", ".m4a", ".m4b", ".aac", ".wma",
                              ".aiff", ".aif", ".aifc", ".amr", ".3gp", ".3ga", ".caf", ".mka"})
VIDEO_EXTENSIONS = frozenset({".mp4", ".m4v", ".mkv", ".mov", ".webm", ".avi"})
SUPPORTED_EXTENSIONS = AUDIO_EXTENSIONS | VIDEO_EXTENSIONS
"""Lower-case extensions (with the dot) that the import dialogs offer. Content decides, not the name."""

MAX_WORKING_SAMPLE_RATE = 48_000
"""The highest rate a working copy keeps (see :func:`working_rate`)."""
WHISPER_SAMPLE_RATE = 16000
"""Rate Whisper models expect their input at."""
MAX_DURATION_S = 2 * 3600
"""Longer sources are refused: the whole file is decoded into memory, and 3-10 minutes of voice is plenty."""

MAX_SAMPLE_RATE = 384_000
"""Higher stated rates are refused: no recorder goes above 384 kHz, and a forged header is how a few megabytes of
FLAC ask for gigabytes of memory."""
MAX_CHANNELS = 32
"""More stated channels are refused, for the same reason (a voice memo has one or two)."""
MAX_DECODED_BYTES = 2 * 1024**3
"""Refused above this: rate x channels x length x 4 bytes, the file decoded as float32. 2 GiB is an hour of 48 kHz
stereo; decoding for the import keeps only a mono mix (see :mod:`alltalk_gui.core.audio.blocks`), but
:func:`load` and the analysis of what was recorded need every channel."""

# Decoding stops this far past the limit when a header understated the length.
_DURATION_SLACK_S = 1.0
_BLOCK_FRAMES = 1 << 16  # frames per block read through libsndfile (256 KiB per channel)


class AudioError(Exception):
    """A file cannot be used as audio. The message names the file and says why, in plain language."""


# --------------------------------------------------------------------------------------------------- probing

def probe(path: str | os.PathLike[str]) -> AudioInfo:
    """Read a file's audio format and length from its headers, without decoding it (where the headers allow).

    libsndfile is asked first; anything it cannot open goes to PyAV, which reports the first audio stream. When
    the audio stream states no duration of its own (Matroska/WebM, where the container's figure is the video's
    length), or is a bare stream whose length FFmpeg guesses from the bit rate (ADTS .aac), its packets are
    read, not decoded, to add up their durations; that reads through the file once, which is still far cheaper
    than decoding it.

    Raises:
        AudioError: the file is missing, empty, not audio either decoder can read, has no audio track, has no
            samples, or is longer than :data:`MAX_DURATION_S`.
    """
    path = Path(path)
    _check_file(path)
    try:
        info = _probe_soundfile(path)
    except (sf.LibsndfileError, RuntimeError, TypeError, _NotForLibsndfile) as sf_error:
        info = _probe_pyav(path, None if isinstance(sf_error, _NotForLibsndfile) else sf_error)
    if info.duration_s <= 0:
        raise AudioError(f"{path.name} has no audio (0 samples).")
    _check_duration(path, info.duration_s)
    _check_bounds(path, info)
    return info


def _check_bounds(path: Path, info: AudioInfo) -> None:
    """Refuse headers whose decoded size no voice recording has (see :data:`MAX_DECODED_BYTES`)."""
    if info.sample_rate > MAX_SAMPLE_RATE:
        raise AudioError(f"{path.name} states a sample rate of {info.sample_rate:,} Hz; the limit is "
                         f"{MAX_SAMPLE_RATE:,} Hz. It is damaged or not a recording; export it again at 48 kHz.")
    if info.channels > MAX_CHANNELS:
        raise AudioError(f"{path.name} states {info.channels} channels; the limit is {MAX_CHANNELS}. Export the "
                         "voice as a mono or stereo file.")
    needed = info.sample_rate * info.channels * info.duration_s * 4
    if needed > MAX_DECODED_BYTES:
        raise AudioError(f"{path.name} would need {needed / 1024**3:.1f} GiB of memory to decode "
                         f"({format_duration(info.duration_s)} at {info.sample_rate:,} Hz x {info.channels} "
                         f"channels); the limit is {MAX_DECODED_BYTES / 1024**3:.0f} GiB. Cut it into shorter "
                         "parts or export it as mono.")


def _frame_limit(rate: int, channels: int) -> int:
    """Frames past which decoding stops, whatever the header said: the duration limit or the memory cap."""
    return int(min((MAX_DURATION_S + _DURATION_SLACK_S) * rate,
                   MAX_DECODED_BYTES * 1.01 / (4 * max(1, channels))))


def _check_file(path: Path) -> None:
    if not path.exists():
        raise AudioError(f"{path.name} does not exist ({path}).")
    if not path.is_file():
        raise AudioError(f"{path.name} is not a file.")
    if path.stat().st_size == 0:
        raise AudioError(f"{path.name} is empty (0 bytes).")


def _check_duration(path: Path, duration_s: float) -> None:
    if duration_s > MAX_DURATION_S:
        raise AudioError(f"{path.name} is {format_duration(duration_s)} long; the limit is "
                         f"{format_duration(MAX_DURATION_S)}. Cut it into shorter parts first.")


_SF_BITS = {"PCM_S8": 8, "PCM_U8": 8, "PCM_16": 16, "PCM_24": 24, "PCM_32": 32, "FLOAT": 32, "DOUBLE": 64,
            "ULAW": 8, "ALAW": 8}
_SF_PCM_CODEC = {"PCM_S8": "pcm_s8", "PCM_U8": "pcm_u8", "PCM_16": "pcm_s16", "PCM_24": "pcm_s24",
                 "PCM_32": "pcm_s32", "FLOAT": "pcm_f32", "DOUBLE": "pcm_f64", "ULAW": "pcm_mulaw",
                 "ALAW": "pcm_alaw"}
_SF_LOSSY_CODEC = {"VORBIS": "vorbis", "OPUS": "opus", "MPEG_LAYER_I": "mp1", "MPEG_LAYER_II": "mp2",
                   "MPEG_LAYER_III": "mp3"}


_MPEG_AUDIO = ("mp1", "mp2", "mp3")


class _NotForLibsndfile(Exception):
    """Raised before asking libsndfile about a file it would only complain about."""


def _libsndfile_may_try(path: Path) -> bool:
    # libsndfile hands any *.mp3 to mpg123, which prints "Note: Illegal Audio-MPEG-Header" lines to the
    # process's stderr for files that are not MPEG audio at all (a renamed text file, an MP4 named .mp3).
    # Such files go straight to PyAV, which reports quietly.
    if path.suffix.lower() not in (".mp3", ".mpeg", ".mpga"):
        return True
    with open(path, "rb") as f:
        head = f.read(3)
    return head.startswith(b"ID3") or (len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0)


def _libsndfile_decodes(path: Path, info: AudioInfo) -> bool:
    """Whether libsndfile decodes ``path`` (else FFmpeg, through PyAV, does).

    Not MPEG audio: libsndfile 1.2's MP3 reader corrupts low-bit-rate files where a read ends inside a frame that
    borrows bits from the frames before it (the bit reservoir). A 16 kbit/s, 22 kHz mono MP3 of 64 s read 65,536
    frames at a time, as the import reads, came back with 2,506 samples wrong by up to 0.34 (clicks in the
    training clips), while mpg123 printed "part2_3_length (..) too large for available bit count" on stderr;
    FFmpeg's decode of the same file agrees with libsndfile's whole-file read to 1e-6 and is as fast (0.39 s
    against 0.52 s for 27 minutes). libsndfile still probes MP3s, as before.
    """
    return info.codec not in _MPEG_AUDIO and _libsndfile_may_try(path)


def _probe_soundfile(path: Path) -> AudioInfo:
    if not _libsndfile_may_try(path):
        raise _NotForLibsndfile(path.name)
    i = sf.info(str(path))
    fmt = i.format.lower()
    if i.subtype in _SF_LOSSY_CODEC:
        codec, bits = _SF_LOSSY_CODEC[i.subtype], None
    elif fmt == "flac":
        codec, bits = "flac", _SF_BITS.get(i.subtype)
    else:
        codec, bits = _SF_PCM_CODEC.get(i.subtype, i.subtype.lower()), _SF_BITS.get(i.subtype)
    container = {"mpeg": "mp3"}.get(fmt, fmt)
    duration = i.frames / i.samplerate if i.samplerate else 0.0
    return AudioInfo(duration_s=duration, sample_rate=int(i.samplerate), channels=int(i.channels), codec=codec,
                     bit_depth=bits, container=container)


def _open_pyav(path: Path, sf_error: BaseException | None) -> tuple[Any, Any]:
    """Open ``path`` with PyAV and return (container, first audio stream); AudioError if either fails."""
    try:
        container = av.open(str(path), mode="r")
    except (av.FFmpegError, UnicodeDecodeError, ValueError) as av_error:
        raise AudioError(f"{path.name} is not an audio file PyAV or libsndfile can read "
                         f"({_reasons(av_error, sf_error)}).") from av_error
    streams = [s for s in container.streams if s.type == "audio"]
    if not streams:
        kinds = sorted({s.type for s in container.streams})
        container.close()
        has = f"only {', '.join(kinds)}" if kinds else "no streams"
        raise AudioError(f"{path.name} has no audio track ({has}).")
    return container, streams[0]


def _probe_pyav(path: Path, sf_error: BaseException | None) -> AudioInfo:
    container, stream = _open_pyav(path, sf_error)
    try:
        cc = stream.codec_context
        rate = int(cc.sample_rate or 0)
        channels = int(cc.channels or 0)
        if rate <= 0 or channels <= 0:
            raise AudioError(f"{path.name} is not an audio file PyAV or libsndfile can read "
                             f"(its audio track states no sample rate or channels).")
        raw = bool(_RAW_STREAM_FORMATS & set(container.format.name.split(",")))
        duration = None if raw else _stated_duration(stream)
        if duration is None:
            duration = _packet_duration(path, container, stream, rate)
        codec = cc.codec.canonical_name  # "mp3", not the decoder's name "mp3float"
        match = re.fullmatch(r"pcm_[suf](\d+)[bl]?e?", codec)
        bits = int(match.group(1)) if match else None
        return AudioInfo(duration_s=duration, sample_rate=rate, channels=channels, codec=codec, bit_depth=bits,
                         container=_container_name(path, container))
    finally:
        container.close()


# Bare elementary streams: FFmpeg guesses their length from the bit rate of the first packets (an ADTS .aac of
# speech with quiet stretches read 20 % short), so their packets are always counted.
_RAW_STREAM_FORMATS = frozenset({"aac", "mp3", "ac3", "eac3", "dts", "amr", "loas", "latm", "mp2", "mpc"})


def _stated_duration(stream: Any) -> float | None:
    if stream.duration is not None and stream.time_base is not None and stream.duration > 0:
        return float(stream.duration * stream.time_base)
    return None


def _packet_duration(path: Path, container: Any, stream: Any, rate: int) -> float:
    """Length of the audio stream from its packets' timestamps; decodes to count samples only if they have none.

    Stops as soon as the length is past the limit, so a long file is refused without reading all of it.
    """
    limit_s = MAX_DURATION_S + _DURATION_SLACK_S
    start = end = None
    tb = stream.time_base
    try:
        for packet in container.demux(stream):
            if packet.pts is None or tb is None:
                continue
            packet_end = packet.pts + (packet.duration or 0)
            start = packet.pts if start is None else min(start, packet.pts)
            end = packet_end if end is None else max(end, packet_end)
            if float((end - start) * tb) > limit_s:
                break
    except av.FFmpegError as e:
        if start is None:
            raise AudioError(f"{path.name} is damaged: its audio track cannot be read ({_short(e)}).") from e
    if start is not None and end is not None and end > start:
        return float((end - start) * tb)
    container.seek(0)
    samples = 0
    try:
        for frame in container.decode(stream):
            samples += frame.samples
            if samples > limit_s * rate:
                break
    except av.FFmpegError as e:
        if samples == 0:
            raise AudioError(f"{path.name} is damaged: no audio could be decoded ({_short(e)}).") from e
    return samples / rate


_MP4_FAMILY = ("m4b", "m4v", "3ga")  # MP4 files under names FFmpeg's demuxer does not list


def _container_name(path: Path, container: Any) -> str:
    # FFmpeg names demuxers by family ("mov,mp4,m4a,3gp,3g2,mj2"); the file's own extension reads better if
    # it is one of them.
    names = container.format.name.split(",")
    ext = path.suffix.lower().lstrip(".")
    return ext if ext in names or (ext in _MP4_FAMILY and "mp4" in names) else names[0]


# --------------------------------------------------------------------------------------------------- loading

def load(path: str | os.PathLike[str]) -> tuple[np.ndarray, int]:
    """Decode a whole file into memory.

    Returns:
        ``(samples, sample_rate)``: float32, shape ``(frames, channels)``, values clipped to [-1, 1] (float files
        can hold larger values; NaN and infinity become 0). Channels and rate are the file's own.

    The length is checked from the headers (:func:`probe`) before anything is decoded. libsndfile decodes what
    it can open; PyAV decodes the rest and anything libsndfile opens but fails on midway.

    Raises:
        AudioError: as :func:`probe`, and for data that fails to decode or decodes to nothing.
    """
    x, sr, _info = _load_with_info(Path(path))
    return x, sr


def _load_with_info(path: Path) -> tuple[np.ndarray, int, AudioInfo]:
    info = probe(path)
    x: np.ndarray | None = None
    sr = info.sample_rate
    sf_error: BaseException | None = None
    try:
        if _libsndfile_decodes(path, info):
            x, sr = sf.read(str(path), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as e:
        sf_error = e
    if x is not None and _decoded_short(x.shape[0] / sr, info.duration_s):
        # libsndfile stops quietly at the first bad block of a damaged FLAC or MP3; FFmpeg's decoders skip
        # damaged blocks and carry on, so give it a go and keep whichever got further.
        try:
            y, ysr = _decode_pyav(path, sf_error, info.duration_s)
            if y.shape[0] / ysr > x.shape[0] / sr:
                x, sr = y, ysr
        except AudioError:
            pass
    if x is None:
        x, sr = _decode_pyav(path, sf_error, info.duration_s)
    if x.shape[0] == 0:
        raise AudioError(f"{path.name} has no audio (0 samples).")
    if _decoded_short(x.shape[0] / sr, info.duration_s):
        raise AudioError(f"{path.name} is damaged: only {format_duration(x.shape[0] / sr)} of its "
                         f"{format_duration(info.duration_s)} could be decoded.")
    _check_duration(path, x.shape[0] / sr)
    # Block by block: nan_to_num's masks for a whole two-hour file would cost as much memory as the file.
    step = 1 << 20
    for start in range(0, x.shape[0], step):
        block = x[start:start + step]
        if not np.isfinite(block).all():
            np.nan_to_num(block, copy=False, nan=0.0, posinf=1.0, neginf=-1.0)
        np.clip(block, -1.0, 1.0, out=block)
    return x, int(sr), info


def _decoded_short(decoded_s: float, stated_s: float) -> bool:
    # Generous on purpose: an MP3 without a length header has an estimated length, and codecs pad or trim a
    # little. A file that is cut short by a few per cent still holds good audio and is accepted.
    return decoded_s < 0.9 * stated_s and stated_s - decoded_s > 0.5


def _decode_pyav(path: Path, sf_error: BaseException | None, expected_s: float) -> tuple[np.ndarray, int]:
    source, rate, channels = _pyav_blocks(path, sf_error)
    # Decoded frames go straight into one array sized from the stated length (grown if that was short), so
    # an hour-long video needs its decoded size in memory once, not a list of pieces plus their join.
    buf = np.empty((int(expected_s * rate * 1.02) + rate, channels), dtype=np.float32)
    samples = 0
    limit = _frame_limit(rate, channels)
    for block in source:
        n = block.shape[0]
        if samples + n > buf.shape[0]:
            grown = np.empty((min(limit, max(samples + n, int(buf.shape[0] * 1.25))), channels), dtype=np.float32)
            grown[:samples] = buf[:samples]
            buf = grown
        buf[samples:samples + n] = block[:buf.shape[0] - samples]
        samples = min(samples + n, buf.shape[0])
        if samples >= limit:
            source.close()
            _too_long(path, samples, rate)
    if samples == 0:
        raise AudioError(f"{path.name} has no audio (0 samples).")
    # A view keeps the unused tail alive, a copy briefly doubles the memory: copy only if most of it is unused.
    x = buf[:samples] if samples > 0.75 * buf.shape[0] else buf[:samples].copy()
    return x, rate


def _pyav_blocks(path: Path, sf_error: BaseException | None) -> tuple[Iterator[np.ndarray], int, int]:
    """Open ``path`` with PyAV; return a generator of ``(n, channels)`` float32 blocks, the rate and channels.

    Planar float at the stream's own rate and layout: one array layout whatever the codec decodes to, and
    nothing is resampled here (that is a separate, high-quality step). The generator closes the file when it
    ends or is closed, and raises :class:`AudioError` for a decoding failure.
    """
    container, stream = _open_pyav(path, sf_error)
    cc = stream.codec_context
    rate, channels = int(cc.sample_rate), int(cc.channels)
    if rate > MAX_SAMPLE_RATE or channels > MAX_CHANNELS:  # a stream whose codec disagrees with the header
        container.close()
        _check_bounds(path, AudioInfo(0.0, rate, channels, "", None, ""))

    def generate() -> Iterator[np.ndarray]:
        resampler = av.AudioResampler(format="fltp", layout=cc.layout, rate=rate)
        done = 0
        try:
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    done += out.samples
                    yield np.ascontiguousarray(out.to_ndarray().T[:, :channels], dtype=np.float32)
            for out in resampler.resample(None):
                yield np.ascontiguousarray(out.to_ndarray().T[:, :channels], dtype=np.float32)
        except av.FFmpegError as e:
            where = f"after {format_duration(done / rate)}" if done else "at the start"
            raise AudioError(f"{path.name} is damaged: decoding failed {where} ({_short(e)}).") from e
        finally:
            container.close()

    return generate(), rate, channels


def _sf_blocks(path: Path) -> Iterator[np.ndarray]:
    """``(n, channels)`` float32 blocks through libsndfile; its errors propagate (the caller falls back)."""
    with sf.SoundFile(str(path)) as f:
        while True:
            block = f.read(_BLOCK_FRAMES, dtype="float32", always_2d=True)
            if block.shape[0] == 0:
                return
            yield block


def _decode_mono(path: Path) -> tuple[np.ndarray, int, AudioInfo, dict[str, Any]]:
    """Decode ``path`` block by block into a mono mix and its analysis (see :mod:`alltalk_gui.core.audio.blocks`).

    The same fallbacks as :func:`load`: libsndfile first; FFmpeg for what it cannot open, fails on midway, or
    stops short of the stated length on (the longer of the two is kept).
    """
    info = probe(path)
    result: tuple[blocks.MonoMix, blocks.BlockAnalyser, int] | None = None
    sf_error: BaseException | None = None
    if _libsndfile_decodes(path, info):
        try:
            result = _mix(path, info, _sf_blocks(path), info.sample_rate, info.channels)
        except (sf.LibsndfileError, RuntimeError, TypeError) as e:
            sf_error = e
    if result is not None and _decoded_short(result[0].frames / result[2], info.duration_s):
        try:
            other = _mix(path, info, *_pyav_blocks(path, sf_error))
            if other[0].frames / other[2] > result[0].frames / result[2]:
                result = other
        except AudioError:
            pass
    if result is None:
        result = _mix(path, info, *_pyav_blocks(path, sf_error))
    mix, analyser, sr = result
    if mix.frames == 0:
        raise AudioError(f"{path.name} has no audio (0 samples).")
    if _decoded_short(mix.frames / sr, info.duration_s):
        raise AudioError(f"{path.name} is damaged: only {format_duration(mix.frames / sr)} of its "
                         f"{format_duration(info.duration_s)} could be decoded.")
    return mix.samples(), sr, info, analyser.result()


def _too_long(path: Path, frames: int, rate: int) -> None:
    """Raise for a file that decoded past :func:`_frame_limit` (its header understated its length)."""
    _check_duration(path, frames / rate)
    raise AudioError(f"{path.name} holds more audio than its header states (over {format_duration(frames / rate)}); "
                     f"it would need more than {MAX_DECODED_BYTES / 1024**3:.0f} GiB to decode. Export it again as "
                     "mono.")


def _mix(path: Path, info: AudioInfo, source: Iterator[np.ndarray], rate: int,
         channels: int) -> tuple[blocks.MonoMix, blocks.BlockAnalyser, int]:
    mix = blocks.MonoMix(int(info.duration_s * rate * 1.02) + rate, _frame_limit(rate, channels))
    analyser = blocks.BlockAnalyser(rate, channels)
    try:
        for block in source:
            block = blocks.clean(block)
            mix.add(block)
            analyser.add(block)
    except blocks.TooLong as exc:
        _too_long(path, exc.frames, rate)
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()
    return mix, analyser, rate


def _reasons(av_error: BaseException, sf_error: BaseException | None) -> str:
    parts = [f"FFmpeg: {_short(av_error)}"]
    sf_text = _short(sf_error) if sf_error is not None else ""
    # libsndfile's mpg123 reader answers "File does not exist or is not a regular file" for any file it
    # cannot parse as MP3; that would send the user looking for a missing file.
    if sf_text and "does not exist" not in sf_text:
        parts.append(f"libsndfile: {sf_text}")
    return "; ".join(parts)


def _short(error: BaseException | None) -> str:
    if error is None:
        return "unknown error"
    text = str(error).strip() or type(error).__name__
    # libsndfile and FFmpeg repeat the full path; the message already names the file.
    text = re.sub(r"^Error opening .*?: ", "", text)
    text = re.sub(r"\[Errno -?\d+\] ", "", text)
    text = re.sub(r": '[^']*'$", "", text)
    return text.rstrip(".")


# ------------------------------------------------------------------------------------------- transformations

def to_mono(x: np.ndarray) -> np.ndarray:
    """Average the channels into one, shape ``(frames,)``, float32.

    An average (not a sum) so the level cannot clip. Channels in opposite phase would cancel; real voice
    recordings do not have that, and :func:`alltalk_gui.core.audio.analysis.analyse` pools channels by power,
    so a cancelled file would show up as much quieter in its working copy than in its analysis.
    """
    x = np.asarray(x)
    if x.ndim == 1:
        return x.astype(np.float32, copy=False)
    if x.ndim != 2:
        raise ValueError(f"expected audio of shape (frames,) or (frames, channels), got {x.shape}")
    if x.shape[1] == 1:
        return np.ascontiguousarray(x[:, 0], dtype=np.float32)
    return x.mean(axis=1, dtype=np.float32)


def resample(x: np.ndarray, sr_from: int, sr_to: int) -> np.ndarray:
    """Change the sample rate with soxr's high-quality filter (no torch). ``(frames,)`` or ``(frames, ch)``.

    Returns float32; the input itself (as float32) when the rates are equal.
    """
    if sr_from <= 0 or sr_to <= 0:
        raise ValueError(f"sample rates must be positive, got {sr_from} -> {sr_to}")
    x = np.asarray(x, dtype=np.float32)
    if sr_from == sr_to or x.shape[0] == 0:
        return x
    return soxr.resample(x, sr_from, sr_to, quality="HQ").astype(np.float32, copy=False)


def normalise(mono: np.ndarray, sr: int, target_dbfs: float = -20.0, ceiling_dbfs: float = -1.0, *,
              in_place: bool = False) -> np.ndarray:
    """Bring the speech level (see :mod:`alltalk_gui.core.audio.analysis`) to ``target_dbfs``.

    One gain for the whole file, so the voice's own dynamics are kept. If that gain would push the sample peak
    above ``ceiling_dbfs`` the gain is lowered until the peak sits on the ceiling: a loud, clipped recording
    is turned down, never up, and no new clipping is introduced. Silence (no frame above the silence
    threshold) comes back unchanged. Returns float32; with ``in_place`` (a float32 array the caller owns) the
    samples are changed where they are, so a two-hour recording is not held twice.
    """
    mono = np.asarray(mono, dtype=np.float32)
    level = speech_level_dbfs(mono, sr)
    peak = max(float(mono.max()), -float(mono.min())) if mono.size else 0.0  # no |x| copy of the whole file
    if level is None or peak <= 0.0:
        return mono if in_place else mono.copy()
    gain_db = min(target_dbfs - level, ceiling_dbfs - to_dbfs(peak))
    gain = np.float32(10.0 ** (gain_db / 20.0))
    out = mono if in_place else mono.copy()
    out *= gain
    ceiling = 10.0 ** (ceiling_dbfs / 20.0)
    # float32 rounding can put the peak a hair above the ceiling; the ceiling is a promise, so hold it exactly.
    np.clip(out, -ceiling, ceiling, out=out)
    return out


def write_wav(path: str | os.PathLike[str], x: np.ndarray, sr: int, subtype: str = "PCM_16") -> None:
    """Write ``x`` as a WAV file, atomically (the target is replaced only once the file is complete).

    Values outside [-1, 1] are clipped for integer subtypes, where libsndfile would otherwise wrap them.

    Raises:
        OSError: the file could not be written (ENOSPC when the disk is full); nothing is left of it.
    """
    x = np.asarray(x, dtype=np.float32)
    if (subtype.startswith("PCM") or subtype in ("ULAW", "ALAW")) and x.size and (x.max() > 1.0 or x.min() < -1.0):
        x = np.clip(x, -1.0, 1.0)  # a copy only when needed (a normalised working copy never is)
    with atomic_path(path, suffix=".wav") as tmp:
        # The temporary name ends in .tmp, so the format is given rather than guessed from the name.
        try:
            sf.write(str(tmp), x, int(sr), subtype=subtype, format="WAV")
        except sf.SoundFileRuntimeError as exc:
            # libsndfile reports a failed write as "System error." without an errno; a full disk is the usual
            # cause, and is told apart here while the partial file still takes its space.
            full = shutil.disk_usage(tmp.parent).free < x.size * 4
            code = errno.ENOSPC if full else errno.EIO
            raise OSError(code, f"{os.strerror(code)} ({exc})", str(path)) from exc


def working_rate(source_rate: int) -> int:
    """The sample rate of a working copy made from a recording at ``source_rate``: the source's own rate, at most
    :data:`MAX_WORKING_SAMPLE_RATE`.

    Why the source's rate: the engine is chosen after the import and can be switched later, and each engine trains
    at its own rate (XTTS v2 22 050 Hz, F5-TTS 24 kHz, a DAC-based engine 44.1 kHz); a working copy already cut
    down to one engine's rate would starve the others of the top of the voice. The dataset export resamples once,
    from the working copy to the engine's rate. A lower source rate is kept too: upsampling adds no sound, only
    size. Why at most 48 kHz: that holds everything up to 24 kHz, above what any speech model listens to (the
    highest-rate codec an engine may use, DAC at 44.1 kHz, stops at 22.05 kHz), while a 96 or 192 kHz recording
    kept as it is would make the working copy and every clip read two to four times bigger for inaudible content.
    """
    return min(int(source_rate), MAX_WORKING_SAMPLE_RATE)


def make_working_copy(source_path: str | os.PathLike[str],
                      target_wav_path: str | os.PathLike[str]) -> tuple[AudioInfo, dict[str, Any]]:
    """Decode ``source_path`` and write the working copy to ``target_wav_path``.

    Steps: decode in blocks -> analyse each block (original channels and rate, so clipping and peaks are seen as
    recorded) and mix it down to mono -> resample to :func:`working_rate` (only sources above 48 kHz change) ->
    :func:`normalise` -> 16-bit WAV. The source is only read.

    Memory: the source is decoded block by block and mixed down as it goes (:mod:`alltalk_gui.core.audio.blocks`),
    so the mono mix (frames x 4 bytes: 690 MB for two hours at 48 kHz) plus one block, whatever the channel
    count; headers claiming more than :data:`MAX_DECODED_BYTES` are refused first. Time (measured on a shared
    two-core machine): about 0.9 s per minute of 48 kHz stereo AAC, 0.25 s per minute of WAV.

    Returns:
        ``(info, analysis)`` of the source.

    Raises:
        AudioError: the source cannot be used (see :func:`load`).
    """
    mono, sr, info, analysis = _decode_mono(Path(source_path))
    rate = working_rate(sr)
    mono = normalise(resample(mono, sr, rate), rate, in_place=True)  # the mix (or its resampled copy) is ours
    write_wav(target_wav_path, mono, rate, subtype="PCM_16")
    return info, analysis


__all__ = [
    "AUDIO_EXTENSIONS", "VIDEO_EXTENSIONS", "SUPPORTED_EXTENSIONS", "MAX_WORKING_SAMPLE_RATE", "WHISPER_SAMPLE_RATE",
    "MAX_DURATION_S", "MAX_SAMPLE_RATE", "MAX_CHANNELS", "MAX_DECODED_BYTES", "AudioError", "AudioInfo",
    "format_duration", "probe", "load", "to_mono", "resample",
    "analyse", "judge", "normalise", "write_wav", "working_rate", "make_working_copy",
]
