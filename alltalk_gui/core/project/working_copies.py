"""Working copies made again from the originals, for projects whose copies hold less than their recordings.

Until November 2026 the importer wrote every working copy at 22 050 Hz, XTTS v2's rate, whatever the recording's
own rate; since then it keeps the recording's rate up to 48 kHz (:func:`alltalk_gui.core.audio.decode.working_rate`).
An old project that trains with an engine at a higher rate (F5-TTS, 24 kHz) would get its dataset from a copy
with nothing above 11 kHz, though ``sources/`` holds the recording as it was made. :func:`stale_copies` finds
those copies and :func:`remake` makes each again from its original, once: the new copy replaces the old one
atomically, on the same timeline (clips are spans in milliseconds, so every clip and edit stays where it was).

Only what is inside the project folder is read or written. A copy whose original is missing or cannot be decoded
is kept as it is, and the caller says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alltalk_gui.core import safe_paths
from alltalk_gui.core.audio import decode as audio


@dataclass(frozen=True)
class StaleCopy:
    source: Any              # the project's Source
    rate: int                # the working copy's rate now
    original_rate: int       # the recording's

    @property
    def bytes_needed(self) -> int:
        """About the size of the new copy (16-bit mono at the recording's rate, up to 48 kHz), written beside the old
        one before it replaces it."""
        return int(self.source.duration_s * audio.working_rate(self.original_rate) * 2) + 4096


def copy_rate(project: Any, source: Any) -> int | None:
    """The sample rate of ``source``'s working copy (its wav header), or None when it is missing or unreadable."""
    import soundfile as sf

    try:
        return int(sf.info(str(project.path(source.audio_file))).samplerate)
    except (RuntimeError, OSError, sf.LibsndfileError, safe_paths.UnsafePathError):
        return None


def stale_copies(project: Any, wanted_rate: int) -> list[StaleCopy]:
    """The sources whose working copy is below ``wanted_rate`` while the original recording has more."""
    stale = []
    for source in project.sources:
        rate = copy_rate(project, source)
        if rate is None or rate >= wanted_rate:
            continue
        original = _original_rate(project, source)
        if original is not None and audio.working_rate(original) > rate:
            stale.append(StaleCopy(source, rate, original))
    return stale


def remake(project: Any, stale: StaleCopy) -> str | None:
    """Make ``stale``'s working copy again from its original; None when done, else why it was kept as it was.

    Raises:
        OSError: the new copy cannot be written (a full disk); the old copy is then still in place.
    """
    source = stale.source
    try:
        audio.make_working_copy(project.path(source.file), project.path(source.audio_file))
    except (audio.AudioError, safe_paths.UnsafePathError) as exc:
        return (f"'{source.name}' stays at {stale.rate:,} Hz: its original cannot be read again ({exc}).")
    return None


def _original_rate(project: Any, source: Any) -> int | None:
    try:
        path = project.path(source.file)
        if not path.is_file():
            return None
        return audio.probe(path).sample_rate
    except (audio.AudioError, safe_paths.UnsafePathError, OSError):
        return None
