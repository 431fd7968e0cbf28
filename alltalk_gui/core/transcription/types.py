"""The transcription vocabulary: options, results, progress, errors and the :class:`Transcriber` protocol.

Its own module so that the backends, the factory, the child process and :mod:`.transcribe` all import these
names from one place that imports none of them (no cycles).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from alltalk_gui.core.audio.decode import WHISPER_SAMPLE_RATE
from alltalk_gui.core.transcript.segments import Word
from alltalk_gui.core.transcription.model_files import OPENAI

DEFAULT_BACKEND = OPENAI
WHISPER_RATE = WHISPER_SAMPLE_RATE
DEVICES = ("auto", "cpu", "cuda")


class TranscriptionError(Exception):
    """Transcription cannot start or a file cannot be transcribed; the message says why."""


class Cancelled(Exception):
    """``should_stop()`` became true; nothing was saved and the previous transcript is untouched."""


@dataclass(frozen=True)
class TranscribeOptions:
    backend: str = DEFAULT_BACKEND
    model: str | None = None       # a model name or a local path; None picks default_model(backend, device)
    language: str = "auto"         # "auto" detects it per file; otherwise a Whisper language code
    device: str = "auto"           # auto | cpu | cuda
    beam_size: int = 5
    download_root: str | None = None


@dataclass(frozen=True)
class Recognised:
    """What a backend returns for one recording."""

    words: list[Word]
    windows: list[tuple[int, int, float]]  # the recogniser's own segments: (start_ms, end_ms, no_speech_prob)
    language: str


@dataclass(frozen=True)
class Progress:
    """One progress report. Fractions are 0-1; ``eta_s`` is None until there is enough to estimate from."""

    stage: str              # "loading" (the model) | "transcribing" | "saving" | "done"
    file_index: int         # 0-based index of the current file
    file_count: int
    file_name: str
    file_fraction: float
    overall_fraction: float
    elapsed_s: float
    eta_s: float | None


ProgressCallback = Callable[[Progress], None]
StopCallback = Callable[[], bool]


class Transcriber(Protocol):
    """A loaded speech recogniser. ``transcribe`` takes mono float32 audio at 16 kHz."""

    backend: str
    model: str
    device: str

    def transcribe(self, samples: np.ndarray, language: str | None, on_progress: Callable[[float], None],
                   should_stop: StopCallback) -> Recognised:
        """Recognise ``samples``; call ``on_progress(fraction of the file)`` as windows finish; raise
        :class:`Cancelled` soon after ``should_stop()`` turns true."""
        ...


def english_only_refusal(model: str, language: str | None) -> str | None:
    """The message for asking an English-only model (tiny.en...) for another language, else None."""
    if language in (None, "en"):
        return None
    return (f"The model {model} understands English only, but the language is '{language}'. Choose a multilingual "
            "model (one without .en), or language auto.")
