"""openai-whisper backend: the reference Whisper implementation on PyTorch (fp16 on CUDA, fp32 on CPU).

``whisper.transcribe`` is one long call with no callback, so this backend listens in two places:

* the progress bar: ``whisper.transcribe`` advances a ``tqdm`` bar by the frames of each finished 30-second
  window. The module's ``tqdm`` name is pointed (once, for that module only) at a stand-in whose updates go to
  the progress callback of the calling thread and which raises :class:`Cancelled` when a stop is requested;
* the decoder: each decoding attempt of a window (Whisper retries at higher temperatures) checks for a stop
  first, so Cancel takes effect within one decoding step rather than one whole window.

Audio is passed as a 16 kHz float array: given a path, openai-whisper would run the ``ffmpeg`` program.
"""

from __future__ import annotations

import sys
import threading
import types
from typing import Any, Callable

import numpy as np

from alltalk_gui.core.transcript.segments import Word
from alltalk_gui.core.transcription.types import Cancelled, Recognised, StopCallback, TranscriptionError, english_only_refusal
from alltalk_gui.core.transcription.model_files import OPENAI, ModelNotDownloaded, resolve

_current = threading.local()  # .progress(frames_done, frames_total) and .should_stop for this thread's call
_install_lock = threading.Lock()


class OpenAIWhisperTranscriber:
    """A loaded openai-whisper model.

    Args:
        model: a model name (tiny ... large-v3, turbo) or a local ``.pt`` checkpoint.
        device: ``cpu`` or ``cuda`` (already resolved).
        decode_options: extra ``whisper.transcribe`` options, e.g. ``temperature=0.0`` (no retries at higher
            temperatures) or ``sample_len`` (most tokens per window).

    Raises:
        whisper_models.UnknownModel / ModelNotDownloaded: the model is not on disk (never downloaded here).
        TranscriptionError: the checkpoint cannot be loaded.
    """

    backend = OPENAI

    def __init__(self, model: str, device: str, beam_size: int = 5, download_root: str | None = None,
                 decode_options: dict[str, Any] | None = None) -> None:
        resolved = resolve(OPENAI, model, download_root)
        if resolved.path is None:
            assert resolved.download is not None
            raise ModelNotDownloaded(resolved.download)
        import whisper

        _install_progress_hook()
        self.model = model
        self.device = device
        self.beam_size = beam_size
        self.decode_options = dict(decode_options or {})
        # Always by path: resolve() verified a named model's checksum, and whisper given a name would download
        # by itself (no consent, no progress) whenever its own check disagreed. The official file names get
        # their tuned word-timestamp heads below, as whisper.load_model(name) would give them.
        try:
            self._model = whisper.load_model(str(resolved.path), device=device)
        except Exception as exc:  # a damaged file fails in many ways (unpickling, shapes, I/O): all mean the same
            raise TranscriptionError(f"Cannot load the openai-whisper model {resolved.path}: {exc}") from exc
        _adopt_alignment_heads(self._model, resolved.path)
        self._decode = self._model.decode

    def transcribe(self, samples: np.ndarray, language: str | None, on_progress: Callable[[float], None],
                   should_stop: StopCallback) -> Recognised:
        import whisper

        if not self._model.is_multilingual and english_only_refusal(self.model, language):
            raise TranscriptionError(english_only_refusal(self.model, language))

        def checked_decode(mel: Any, options: Any) -> Any:
            if should_stop():
                raise Cancelled("Transcription stopped.")
            return self._decode(mel, options)

        _current.progress = lambda done, total: on_progress(min(1.0, done / max(total, 1)))
        _current.should_stop = should_stop
        self._model.decode = checked_decode  # instance attribute: shadows Whisper.decode for this model only
        try:
            result = whisper.transcribe(
                self._model, samples.astype(np.float32, copy=False), language=language, word_timestamps=True,
                fp16=self.device == "cuda", verbose=None, condition_on_previous_text=False,
                **{"beam_size": self.beam_size, "best_of": self.beam_size, **self.decode_options})
        except ValueError as exc:  # e.g. an unknown language code
            raise TranscriptionError(f"openai-whisper refused the input: {exc}") from exc
        finally:
            del self._model.decode
            _current.progress = None
            _current.should_stop = None
        words: list[Word] = []
        windows: list[tuple[int, int, float]] = []
        for segment in result["segments"]:
            windows.append((_ms(segment["start"]), _ms(segment["end"]), float(segment["no_speech_prob"])))
            for word in segment.get("words", ()):
                words.append(Word(_ms(word["start"]), max(_ms(word["start"]), _ms(word["end"])), word["word"],
                                  float(word["probability"])))
        return Recognised(words, windows, str(result.get("language") or language or ""))


class _ProgressBar:
    """Stands in for ``tqdm.tqdm`` inside ``whisper.transcribe``: reports to the calling thread's callback."""

    def __init__(self, total: int = 0, **_kwargs: Any) -> None:
        self.total = total
        self.n = 0

    def __enter__(self) -> "_ProgressBar":
        return self

    def __exit__(self, *_exc: Any) -> None:
        return None

    def update(self, frames: int) -> None:
        self.n += frames
        callback = getattr(_current, "progress", None)
        if callback is not None:
            callback(self.n, self.total)
        stop = getattr(_current, "should_stop", None)
        if stop is not None and stop():
            raise Cancelled("Transcription stopped.")


def _adopt_alignment_heads(model: Any, path: Any) -> None:
    """Give a checkpoint loaded from a path the tuned word-timestamp heads of the official model it is a copy of.

    ``whisper.load_model(path)`` falls back to "all heads of the upper half of the decoder", which places word
    boundaries less precisely. A file named like an official download (``tiny.pt``, ``large-v3-turbo.pt``...)
    whose decoder has that model's layer and head counts gets the official heads; anything else keeps the default.
    """
    import whisper

    for name, url in whisper._MODELS.items():
        if url.rsplit("/", 1)[-1] == path.name and name in whisper._ALIGNMENT_HEADS:
            try:
                model.set_alignment_heads(whisper._ALIGNMENT_HEADS[name])
            except RuntimeError:  # another layer/head layout: not a copy of that model
                pass
            return


def _install_progress_hook() -> None:
    import whisper  # noqa: F401  (loads whisper.transcribe; the package re-exports its function under that name)

    module = sys.modules["whisper.transcribe"]
    with _install_lock:
        if not getattr(module.tqdm, "_alltalk_hook", False):
            module.tqdm = types.SimpleNamespace(tqdm=_ProgressBar, _alltalk_hook=True)


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))
