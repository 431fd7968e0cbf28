"""One factory for speech recognisers (:func:`make_transcriber`), and what it checks first: device, language, model.

torch, whisper and faster_whisper are imported only inside the functions that need them, so importing this
module stays cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.transcription.model_files import BACKENDS, FASTER
from alltalk_gui.core.transcription.types import DEVICES, WHISPER_RATE, Transcriber, TranscribeOptions, TranscriptionError


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a CUDA GPU is usable, else ``cpu``.

    Raises:
        TranscriptionError: unknown device, or ``cuda`` asked for on a machine without one.
    """
    if device not in DEVICES:
        raise TranscriptionError(f"Unknown device '{device}'; use {', '.join(DEVICES)}.")
    if device == "cpu":
        return "cpu"
    try:
        import ctranslate2

        has_cuda = ctranslate2.get_cuda_device_count() > 0
    except Exception:  # ctranslate2 missing or built without CUDA: ask torch, which the backend needs anyway
        import torch

        has_cuda = torch.cuda.is_available()
    if device == "cuda" and not has_cuda:
        # Read in the app (a Device list: CPU, Automatic) and in the CLI (--device): both names are given.
        raise TranscriptionError("No CUDA GPU is available here: transcribe on the CPU (Device: CPU or Automatic; "
                                 "--device cpu or auto on the command line).")
    return "cuda" if has_cuda else "cpu"


def whisper_languages() -> list[str]:
    """The language codes Whisper knows (from faster-whisper's tokenizer table: no torch import)."""
    from faster_whisper.tokenizer import _LANGUAGE_CODES

    return sorted(_LANGUAGE_CODES)


def check_language(language: str) -> None:
    """Raises TranscriptionError unless ``language`` is "auto" or a Whisper language code."""
    if language != "auto" and language not in whisper_languages():
        raise TranscriptionError(f"Unknown language '{language}'; use auto or a Whisper language code such as "
                                 "en, de, fr, es, it, pt, pl, nl, ru, zh, ja, ko.")


def default_model(backend: str, device: str) -> str:
    """turbo on a GPU (best accuracy for its speed); small on a CPU, where turbo takes many minutes."""
    return "turbo" if device == "cuda" else "small"


def make_transcriber(options: TranscribeOptions) -> Transcriber:
    """Load the backend's model (from disk only).

    Raises:
        TranscriptionError: unknown backend or device.
        whisper_models.ModelError: unknown model or missing path; ModelNotDownloaded when a named model is not
            on disk yet (its ``.download`` says what to fetch).
    """
    if options.backend not in BACKENDS:
        raise TranscriptionError(f"Unknown transcription backend '{options.backend}'; use {' or '.join(BACKENDS)}.")
    check_language(options.language)
    device = resolve_device(options.device)
    model = options.model or default_model(options.backend, device)
    if options.backend == FASTER:
        from alltalk_gui.core.transcription.faster_whisper_backend import FasterWhisperTranscriber

        return FasterWhisperTranscriber(model, device, options.beam_size, options.download_root)
    from alltalk_gui.core.transcription.openai_whisper_backend import OpenAIWhisperTranscriber

    return OpenAIWhisperTranscriber(model, device, options.beam_size, options.download_root)


def load_for_whisper(path: Any, name: str) -> np.ndarray:
    """A working copy (``path``; ``name`` is the original file name, for messages) as mono float32 at 16 kHz.

    Raises:
        TranscriptionError: the file is missing or unreadable.
    """
    if not Path(path).is_file():
        raise TranscriptionError(f"The working audio of '{name}' ({path}) is missing; import the file again.")
    try:
        samples, rate = audio.load(path)
    except audio.AudioError as exc:
        raise TranscriptionError(str(exc)) from exc
    return audio.resample(audio.to_mono(samples), rate, WHISPER_RATE)
