"""The judge: how intelligible, how like the speaker, how natural and how sane in length one clip of speech is.

Neutral: it takes audio, its text and the speaker's real clips, whatever made the audio (either engine, the base
model, a recording). Its three models load once, lazily, in the thread that first needs them (never the GUI's):

* Whisper, the model the user already has (the Transcribe step's, or the default one when it is on disk; never
  downloaded), on the GPU when there is one, for the word (or character) error rate and the word times;
* resemblyzer's speaker encoder for likeness (:mod:`.likeness`);
* DistillMOS for naturalness (:mod:`.naturalness`).

The length rules need no model (:mod:`.length`). A measure that cannot be taken (no text, no Whisper model, no
reference clips) is left out with a note saying why; the others still count.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from alltalk_gui.core.voice.judge import thresholds as t
from alltalk_gui.core.voice.judge.length import LengthCheck, check_length
from alltalk_gui.core.voice.judge.likeness import JudgeAudioError, SpeakerEncoder, as_mono, likeness, prepared
from alltalk_gui.core.voice.judge.naturalness import MosPredictor


@dataclass
class Verdict:
    """What the judge found in one clip. ``error_rate`` is the WER, or the CER for Chinese and Japanese."""

    likeness: float | None
    mos: float | None
    error_rate: float | None
    measure: str                       # "wer" or "cer"
    transcript: str | None
    length: LengthCheck
    notes: list[str] = field(default_factory=list)  # why a measure is missing

    def readings(self) -> dict[str, str]:
        """Each measure in words."""
        out = {}
        if self.likeness is not None:
            out["likeness"] = t.likeness_reading(self.likeness)
        if self.mos is not None:
            out["mos"] = t.mos_reading(self.mos)
        if self.error_rate is not None:
            out[self.measure] = t.error_reading(self.error_rate, self.measure)
        out["length"] = "; ".join(self.length.problems) or "the length and the ending sound right"
        return out

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "likeness": _round(self.likeness), "mos": _round(self.mos),
        }
        if self.error_rate is not None:
            data[self.measure] = _round(self.error_rate)
            data["transcript"] = self.transcript
        data["length"] = self.length.to_dict()
        data["readings"] = self.readings()
        if self.notes:
            data["notes"] = list(self.notes)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Verdict":
        measure = "cer" if "cer" in data else "wer"
        return cls(likeness=data.get("likeness"), mos=data.get("mos"), error_rate=data.get(measure),
                   measure=measure, transcript=data.get("transcript"),
                   length=LengthCheck.from_dict(data["length"]), notes=list(data.get("notes", [])))


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


class Judge:
    """The loaded judge. One per process (or per GUI session); use it from one worker thread at a time.

    Args:
        device: ``auto`` (CUDA when available), ``cpu`` or ``cuda`` for all three models.
        whisper_model: a Whisper model name or local folder; None: the Transcribe step's default, when it is on
            this computer.
        checker: an already loaded :class:`~alltalk_gui.core.transcription.wer.IntelligibilityChecker` (tests,
            or a front end that has one); replaces ``whisper_model``.
    """

    def __init__(self, device: str = "auto", whisper_model: str | None = None, checker: Any = None) -> None:
        self.device = device
        self.whisper_model = whisper_model
        self.encoder = SpeakerEncoder(device)
        self.predictor = MosPredictor(device)
        self._checker = checker
        self._checker_note = ""
        self._checker_tried = checker is not None
        self._lock = threading.Lock()

    def checker(self) -> tuple[Any, str]:
        """The Whisper checker, loaded on first use: ``(checker, "")`` or ``(None, why not)``."""
        with self._lock:
            if not self._checker_tried:
                from alltalk_gui.core.transcription.wer import find_checker

                self._checker, self._checker_note = find_checker(self.whisper_model, self.device)
                self._checker_tried = True
            return self._checker, self._checker_note

    def speaker(self, clips: Sequence[tuple[np.ndarray, int]]) -> np.ndarray:
        """The speaker's embedding from their real clips (mono float, rate). Raises JudgeAudioError."""
        return self.encoder.speaker(clips)

    def judge(self, samples: np.ndarray, rate: int, *, speaker: np.ndarray | None = None, text: str | None = None,
              language: str | None = None) -> Verdict:
        """Judge one clip (mono float at ``rate``).

        Args:
            speaker: the speaker's embedding (:meth:`speaker`); None leaves likeness out.
            text: what the clip should say; None leaves the error rate and the text's length rules out.
            language: the text's language (None: Whisper detects it).

        Raises:
            JudgeAudioError: the clip is empty, silent or not finite.
        """
        samples = as_mono(samples)
        prepared(samples, rate)  # refuse what cannot be measured before any model loads
        notes = []
        error_rate, measure, transcript, words = None, "wer", None, None
        if text and " ".join(text.split()):
            checker, why = self.checker()
            if checker is None:
                notes.append(f"no intelligibility: {why}")
            else:
                heard = checker.check(samples, rate, text, language)
                error_rate, transcript, words = heard.error_rate, heard.transcript, heard.words
                measure = "cer" if heard.cer is not None else "wer"
                language = language or heard.language
        else:
            notes.append("no intelligibility: no text was given")
        similarity = None
        if speaker is not None:
            try:
                similarity = likeness(self.encoder.embed(samples, rate), speaker)
            except JudgeAudioError as exc:
                notes.append(f"no likeness: {exc}")
        else:
            notes.append("no likeness: no reference clip of the speaker was given")
        length = check_length(samples, rate, text, language, words)
        return Verdict(likeness=similarity, mos=self.predictor.mos(samples, rate), error_rate=error_rate,
                       measure=measure, transcript=transcript, length=length, notes=notes)
