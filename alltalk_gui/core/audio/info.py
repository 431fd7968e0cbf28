"""What a file's headers say about its audio (:class:`AudioInfo`), and lengths said the way people say them.

Its own module so that :mod:`~alltalk_gui.core.audio.decode` (which probes files) and
:mod:`~alltalk_gui.core.audio.analysis` (which judges them) can both name it without importing each other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class AudioInfo:
    """What a file's headers say about its audio.

    ``codec`` is a short name such as ``pcm_s16``, ``flac``, ``mp3``, ``aac``, ``opus``; ``bit_depth`` is the
    stored sample size for PCM and FLAC (``None`` for lossy codecs, which have none); ``container`` is the file
    format (``wav``, ``flac``, ``ogg``, ``mp4``, ``matroska``...).
    """

    duration_s: float
    sample_rate: int
    channels: int
    codec: str
    bit_depth: int | None
    container: str

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict of the fields."""
        return asdict(self)


def format_duration(seconds: float) -> str:
    """Say a length the way a person would: ``"3.0 s"``, ``"45 s"``, ``"3 min 20 s"``, ``"2 h 14 min"``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min {secs} s" if secs else f"{minutes} min"
