"""faster-whisper backend: Whisper on CTranslate2 (int8 on CPU, float16 on CUDA; about half openai-whisper's memory).

Its ``transcribe`` returns a lazy generator: each item is decoded only when asked for. Pulling the segments
one at a time is what makes it cancellable (between 30-second windows) and lets progress follow the audio.
The Silero voice-activity filter that ships inside the faster-whisper package skips long non-speech before
decoding (fewer hallucinated words over music or silence); timestamps stay in the original timeline.
"""

from __future__ import annotations

import os
from typing import Callable

import numpy as np

from alltalk_gui.core.transcript.segments import Word
from alltalk_gui.core.transcription.types import (WHISPER_RATE, Cancelled, Recognised, StopCallback, TranscriptionError,
                                         english_only_refusal)
from alltalk_gui.core.transcription.model_files import FASTER, ModelNotDownloaded, resolve


class FasterWhisperTranscriber:
    """A loaded faster-whisper model.

    Args:
        model: a faster-whisper model name (tiny.en ... large-v3, turbo) or a CTranslate2 model folder.
        device: ``cpu`` or ``cuda`` (already resolved).

    Raises:
        whisper_models.UnknownModel / ModelNotDownloaded: the model is not on disk (never downloaded here).
        TranscriptionError: the model files cannot be loaded.
    """

    backend = FASTER

    def __init__(self, model: str, device: str, beam_size: int = 5, download_root: str | None = None,
                 cpu_threads: int = 0, compute_type: str | None = None) -> None:
        resolved = resolve(FASTER, model, download_root)
        if resolved.path is None:
            assert resolved.download is not None
            raise ModelNotDownloaded(resolved.download)
        from faster_whisper import WhisperModel

        self.model = model
        self.device = device
        self.beam_size = beam_size
        # float16 on CUDA; int8 on the CPU (about as accurate, several times faster). int8_float16 (int8 weights,
        # float16 activations) halves the model's GPU memory again, for cards that are full with training.
        self.compute_type = compute_type or ("float16" if device == "cuda" else "int8")
        try:
            self._model = WhisperModel(str(resolved.path), device=device, compute_type=self.compute_type,
                                       cpu_threads=cpu_threads or min(4, os.cpu_count() or 1),
                                       local_files_only=True)
        except Exception as exc:  # a damaged file fails in many ways (unpickling, shapes, I/O): all mean the same
            raise TranscriptionError(f"Cannot load the faster-whisper model at {resolved.path}: {exc}") from exc

    def transcribe(self, samples: np.ndarray, language: str | None, on_progress: Callable[[float], None],
                   should_stop: StopCallback) -> Recognised:
        duration_s = max(samples.size / WHISPER_RATE, 1e-3)
        if not self._model.model.is_multilingual and english_only_refusal(self.model, language):
            raise TranscriptionError(english_only_refusal(self.model, language))
        try:
            segments, info = self._model.transcribe(
                samples.astype(np.float32, copy=False), language=language, beam_size=self.beam_size,
                word_timestamps=True, vad_filter=True, condition_on_previous_text=False)
        except ValueError as exc:  # e.g. an unknown language code
            raise TranscriptionError(f"faster-whisper refused the input: {exc}") from exc
        words: list[Word] = []
        windows: list[tuple[int, int, float]] = []
        for segment in segments:  # each step decodes one more window
            if should_stop():
                raise Cancelled("Transcription stopped.")
            windows.append((_ms(segment.start), _ms(segment.end), float(segment.no_speech_prob)))
            for word in segment.words or ():
                words.append(Word(_ms(word.start), max(_ms(word.start), _ms(word.end)), word.word,
                                  float(word.probability)))
            on_progress(min(1.0, segment.end / duration_s))
        return Recognised(words, windows, info.language)


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))
