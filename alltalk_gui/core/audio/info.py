"""What a file's headers say about its audio (:class:`AudioInfo`).

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
