"""Intelligibility check: Whisper writes down what a preview says, and the word error rate against the sentence
that was asked for is shown beside it.

A number, not a verdict: 0.0 means every word came back, 0.25 one word in four was wrong, missing or added;
above 1.0 is possible when words were added. A voice that mumbles, or a model that stops before the last word,
shows up at once. The comparison ignores case and punctuation, so "Hello, world!" and "hello world" match.

The WER is the word-level Levenshtein distance (substitutions + deletions + insertions) divided by the number of
words in the sentence, the standard definition (the tests check it against ``jiwer``). For Chinese and Japanese,
written without spaces, the character error rate (CER: the same distance over letters) is the fitting measure; the
checker gives both there. Transcription goes through
:mod:`alltalk_gui.core.transcription.transcribe`'s backends; models are never downloaded here.
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.transcript.segments import Word


def normalise_words(text: str) -> list[str]:
    """Lower-case words with punctuation removed (apostrophes inside words kept: "it's" stays one word)."""
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    chars = [ch if not unicodedata.category(ch).startswith(("P", "S")) or ch == "'" else " " for ch in text]
    words = "".join(chars).split()
    return [w.strip("'") for w in words if w.strip("'")]


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / words in ``reference``, after :func:`normalise_words`.

    Raises:
        ValueError: ``reference`` has no words.
    """
    ref, hyp = normalise_words(reference), normalise_words(hypothesis)
    if not ref:
        raise ValueError("The sentence has no words to compare with.")
    return _edit_distance(ref, hyp) / len(ref)


def character_error_rate(reference: str, hypothesis: str) -> float:
    """The same distance over characters (letters and digits, spaces and punctuation left out): the measure for
    languages written without spaces (Chinese, Japanese), where a "word" is not marked in the text.

    Raises:
        ValueError: ``reference`` has no letters.
    """
    ref, hyp = list("".join(normalise_words(reference))), list("".join(normalise_words(hypothesis)))
    if not ref:
        raise ValueError("The sentence has no letters to compare with.")
    return _edit_distance(ref, hyp) / len(ref)


def uses_characters(language: str) -> bool:
    """Whether ``language``'s error rate counts characters (CER: zh, ja) rather than words (WER)."""
    return language.lower().split("-")[0] in ("zh", "ja")


def _edit_distance(ref: list[str], hyp: list[str]) -> int:
    """Levenshtein distance between two token lists."""
    # One row of the edit-distance table at a time: previous[j] = distance(ref[:i-1], hyp[:j]).
    previous = list(range(len(hyp) + 1))
    for i, word in enumerate(ref, start=1):
        current = [i] + [0] * len(hyp)
        for j, heard in enumerate(hyp, start=1):
            current[j] = min(previous[j] + 1,                        # the word was dropped
                             current[j - 1] + 1,                     # an extra word was heard
                             previous[j - 1] + (word != heard))      # heard right, or as another word
        previous = current
    return previous[-1]


@dataclass(frozen=True)
class Intelligibility:
    wer: float
    transcript: str
    words: tuple[Word, ...] = ()   # what Whisper heard, with times (ms from the start of the audio)
    cer: float | None = None       # the character error rate, for languages without spaces (zh, ja)
    language: str = ""             # the language Whisper listened for (or detected)

    @property
    def error_rate(self) -> float:
        """The measure that fits the language: CER for zh and ja, WER for the others."""
        return self.cer if self.cer is not None else self.wer


class IntelligibilityChecker:
    """A loaded Whisper model that scores previews. Load once (seconds), then :meth:`check` each preview.

    Args:
        model: a Whisper model name that is already downloaded, or a local model path.
        backend: ``faster-whisper`` (default: fast on a CPU) or ``openai-whisper``.

    Raises:
        whisper_models.ModelError (ModelNotDownloaded, UnknownModel) or transcribe.TranscriptionError: the model
            is not on this computer or cannot be loaded.
    """

    def __init__(self, model: str = "small", backend: str = "faster-whisper", device: str = "auto",
                 transcriber: Any = None) -> None:
        from alltalk_gui.core.transcription.transcribe import TranscribeOptions, make_transcriber

        self.transcriber = transcriber or make_transcriber(
            TranscribeOptions(backend=backend, model=model, device=device, beam_size=1))

    def check(self, samples: np.ndarray, sample_rate: int, sentence: str, language: str | None) -> Intelligibility:
        """Transcribe ``samples`` (mono float) and compare with ``sentence``. ``language`` None (or empty) lets
        Whisper detect it; the CER is given for zh and ja (as given or detected)."""
        from alltalk_gui.core.transcription.transcribe import WHISPER_RATE

        mono = audio.resample(np.asarray(samples, dtype=np.float32), sample_rate, WHISPER_RATE)
        result = self.transcriber.transcribe(mono, (language or "").split("-")[0] or None, lambda _fraction: None,
                                             lambda: False)
        joiner = "" if uses_characters(language or result.language) else " "
        transcript = re.sub(r"\s+", " ", joiner.join(w.text.strip() for w in result.words)).strip()
        heard_in = language or result.language
        cer = character_error_rate(sentence, transcript) if uses_characters(heard_in) else None
        return Intelligibility(word_error_rate(sentence, transcript), transcript, tuple(result.words), cer,
                               heard_in)


def transcribed_with(project_dir: str | os.PathLike[str] | None) -> str | None:
    """The Whisper model that transcribed the project (a name, or a folder that is still there), from its
    segments.json; None when it was not transcribed, or by a folder that has gone since.

    The judge listens with it when nobody chose one: a user who transcribed with a model has that model, while the
    Transcribe step's default may never have been downloaded (then the judge would be off for no reason)."""
    from alltalk_gui.core.transcript.segments import SegmentsError, read_file

    path = Path(project_dir) / "segments.json" if project_dir else None  # VoiceProject.segments_file
    if path is None or not path.is_file():
        return None
    try:
        model = read_file(path).get("transcription", {}).get("model")
    except (SegmentsError, OSError, AttributeError):
        return None
    if not isinstance(model, str) or not model.strip():
        return None
    a_path = os.sep in model or "/" in model  # else a model name, which the backends find in their caches
    return model if not a_path or Path(model).expanduser().is_dir() else None


def find_checker(model: str | None = None, device: str = "auto") -> tuple[IntelligibilityChecker | None, str]:
    """A checker with ``model`` (a name or path), or the transcription step's default model, from whichever
    Whisper backend already has it on disk. Never downloads.

    Returns:
        ``(checker, "")``, or ``(None, why not)`` when no such model is on this computer.
    """
    from alltalk_gui.core.transcription.transcribe import TranscriptionError, default_model, resolve_device
    from alltalk_gui.core.transcription.model_files import BACKENDS, ModelError

    try:
        resolved = resolve_device(device)
    except TranscriptionError as exc:
        return None, str(exc)
    name = model or default_model("faster-whisper", resolved)
    reasons = []
    for backend in sorted(BACKENDS, key=lambda b: b != "faster-whisper"):  # faster-whisper first: quicker on CPU
        try:
            return IntelligibilityChecker(model=name, backend=backend, device=resolved), ""
        except (ModelError, TranscriptionError) as exc:
            reasons.append(str(exc).split(". ")[0])
    return None, (f"no Whisper model '{name}' on this computer (download one on the Transcribe step)"
                  if reasons else "no Whisper backend")
