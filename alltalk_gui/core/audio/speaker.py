"""Speaker embeddings: who is speaking in a clip, as 256 numbers, and how alike two voices are (cosine similarity).

The embeddings come from resemblyzer's GE2E speaker encoder (``resemblyzer/pretrained.pt`` inside its wheel: a
3-layer LSTM over 40 mel bands at 16 kHz, 256 values per utterance). A speaker is the mean of the embeddings of
their clips (renormalised, as resemblyzer's ``embed_speaker`` does), so one odd clip does not decide. Each clip
goes through resemblyzer's own preparation: 16 kHz, its volume raised to -30 dBFS when quieter, and pauses longer
than about 0.2 s shortened by its voice activity detector (webrtcvad).

Two users, one home: the checkpoint judge's likeness (``voice/judge``: does a checkpoint sound like the speaker?)
and the transcript's speaker check (``transcript/speakers``: does a training clip hold someone else's voice?).
It sits in ``core/audio`` because the transcript is below the voice layer.

The encoder comes with the optional ``judge`` extra (:func:`unavailable_reason` says when it is missing, from the
installed packages alone). It loads once, on first use, in the thread that calls it (never the GUI's): about 2 s
on a CPU. Its weights load with ``torch.load``'s default, which is ``weights_only=True`` from torch 2.6 (we pin 2.9).
"""

from __future__ import annotations

import importlib.util
import threading
import warnings
from typing import Any, Sequence

import numpy as np

RATE = 16_000
MIN_SPEECH_S = 0.3  # less voiced audio than this gives the encoder nothing to go on


# The modules the encoder imports (distribution in brackets): resemblyzer (resemblyzer) needs webrtcvad
# (webrtcvad-wheels). Both come with the ``judge`` extra.
MODULES = (("resemblyzer", "resemblyzer"), ("webrtcvad", "webrtcvad-wheels"))


class SpeakerAudioError(ValueError):
    """Audio whose voice cannot be measured: silent, too short, or not finite; the message says which."""


def missing_packages(modules: tuple[tuple[str, str], ...] = MODULES) -> list[str]:
    """The packages of ``modules`` ((module, distribution) pairs; the encoder's by default) that are not installed."""
    return [package for module, package in modules if importlib.util.find_spec(module) is None]


def not_installed(packages: list[str]) -> str:
    """'a, b, which are not installed' (for the sentences that say why a measure is off)."""
    return f"{', '.join(packages)}, which {'are' if len(packages) > 1 else 'is'} not installed"


def unavailable_reason() -> str | None:
    """One sentence saying why speaker embeddings cannot be made here, or None when they can."""
    missing = missing_packages()
    return None if not missing else (f"The speaker encoder needs {not_installed(missing)} (the optional 'judge' "
                                      "extra): run the install again (bash packaging/run.sh).")


class SpeakerEncoder:
    """resemblyzer's voice encoder, loaded on first use. ``device``: ``auto`` (CUDA when there), ``cpu``, ``cuda``."""

    def __init__(self, device: str = "auto") -> None:
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def _encoder(self) -> Any:
        with self._lock:
            if self._model is None:
                import torch

                with warnings.catch_warnings():  # resemblyzer imports scipy.ndimage.morphology (deprecated name)
                    warnings.simplefilter("ignore", DeprecationWarning)
                    from resemblyzer import VoiceEncoder

                device = self.device
                if device == "auto":
                    device = "cuda" if torch.cuda.is_available() else "cpu"
                self._model = VoiceEncoder(device, verbose=False)
            return self._model

    def embed(self, samples: np.ndarray, rate: int, min_speech_s: float = MIN_SPEECH_S) -> np.ndarray:
        """The 256-value embedding (unit length) of one clip (mono float at ``rate``).

        Raises:
            SpeakerAudioError: the clip is silent, has less than ``min_speech_s`` of voice, or is not finite.
        """
        return self.embed_with_voice(samples, rate, min_speech_s)[0]

    def embed_with_voice(self, samples: np.ndarray, rate: int,
                         min_speech_s: float = MIN_SPEECH_S) -> tuple[np.ndarray, float]:
        """:meth:`embed`, and the seconds of voice it heard (the clip without its pauses): an embedding of little
        voice wanders, so how far it may stray from its speaker depends on it
        (:func:`alltalk_gui.core.transcript.flags.other_speaker_below`).

        Raises:
            SpeakerAudioError: as :meth:`embed`.
        """
        encoder = self._encoder()
        from resemblyzer import audio as rz_audio

        wav = prepared(samples, rate)
        wav = rz_audio.trim_long_silences(rz_audio.normalize_volume(wav, -30, increase_only=True))
        if wav.size < min_speech_s * RATE:
            raise SpeakerAudioError(f"There is less than {min_speech_s:g} s of voice to compare.")
        return np.asarray(encoder.embed_utterance(wav), dtype=np.float32), wav.size / RATE

    def speaker(self, clips: Sequence[tuple[np.ndarray, int]]) -> np.ndarray:
        """The speaker's embedding: the renormalised mean of their clips' embeddings.

        Raises:
            SpeakerAudioError: no clip given, or one cannot be measured (the message names which).
        """
        if not clips:
            raise SpeakerAudioError("No reference clip of the speaker was given.")
        embeddings = []
        for i, (samples, rate) in enumerate(clips, start=1):
            try:
                embeddings.append(self.embed(samples, rate))
            except SpeakerAudioError as exc:
                raise SpeakerAudioError(f"Reference clip {i}: {exc}") from None
        return unit(np.mean(embeddings, axis=0))


def prepared(samples: np.ndarray, rate: int) -> np.ndarray:
    """Mono float32 at 16 kHz, checked to be finite and not silent.

    Raises:
        SpeakerAudioError: empty, silent or not finite.
    """
    from alltalk_gui.core.audio import decode  # PyAV and soxr: only when audio is measured (light to import)

    mono = as_mono(samples)
    if mono.size == 0:
        raise SpeakerAudioError("The audio is empty.")
    if not np.isfinite(mono).all():
        raise SpeakerAudioError("The audio holds invalid (not finite) samples.")
    if float(np.max(np.abs(mono))) < 1e-4:
        raise SpeakerAudioError("The audio is silent.")
    return decode.resample(mono, rate, RATE) if rate != RATE else mono


def as_mono(samples: np.ndarray) -> np.ndarray:
    """Float32 mono: a (frames, channels) array is averaged over its channels."""
    from alltalk_gui.core.audio import decode

    mono = np.asarray(samples, dtype=np.float32)
    return decode.to_mono(mono) if mono.ndim > 1 else mono


def unit(vector: np.ndarray) -> np.ndarray:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def likeness(candidate: np.ndarray, speaker: np.ndarray) -> float:
    """Cosine similarity of two embeddings (both unit length): 1 is the same voice direction."""
    return float(np.dot(unit(candidate), unit(speaker)))
