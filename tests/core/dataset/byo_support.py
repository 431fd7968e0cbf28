"""Small helpers for the bring-your-own dataset tests: voice-like audio written in any format at test time."""

from __future__ import annotations

import io
from pathlib import Path

import soundfile as sf

from tests.core.transcript.test_segments_support import RATE, voice_like

TEXT = "The quick brown fox jumps over the lazy dog."


def audio(path: Path, seed: int = 0, seconds: float = 2.0) -> Path:
    """A voice-like clip at ``path``, in the format its extension names (wav, flac, ogg, mp3)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = {".ogg": "OGG", ".mp3": "MP3"}.get(path.suffix.lower())
    subtype = {".ogg": "VORBIS", ".mp3": "MPEG_LAYER_III"}.get(path.suffix.lower())
    sf.write(path, voice_like(seconds, seed=seed), RATE, format=fmt, subtype=subtype)
    return path


def audio_bytes(seed: int = 0, fmt: str = "WAV") -> bytes:
    """A voice-like clip as the bytes of a file (what a Hugging Face parquet's audio column holds)."""
    out = io.BytesIO()
    sf.write(out, voice_like(2.0, seed=seed), RATE, format=fmt)
    return out.getvalue()
