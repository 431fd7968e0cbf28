"""Length sanity: plain rules, no model, for the failures people hear first in a fine-tuned voice.

* **Spoken length against the text.** The time from the first to the last word (as Whisper heard them; without a
  transcript, from the first to the last loud frame) against what the text predicts at a typical reading pace
  (:data:`~.thresholds.WORDS_PER_S`, or characters for Chinese and Japanese). Under half or over twice is flagged:
  words skipped, or something added (babble, repeats, long pauses).
* **What follows the last word.** The audio after the end of the last heard word. Sound there (noise, mumbling,
  a hallucinated ending: louder than the clip's own quiet parts) for more than :data:`~.thresholds.TAIL_SOUND_S`
  is flagged, and so is silence longer than :data:`~.thresholds.TAIL_SILENCE_S`. Without a transcript only the
  silence after the last loud frame can be measured.
* **A cut last word.** Either the sentence's last word is not among the last words heard, or the sound does not
  fade: the audio ends with the last word and its last 60 ms are within :data:`~.thresholds.END_LEVEL_CUT_DB` of
  the speech level, as when a recording is cut in the middle of a word. Whisper tends to complete a clipped word
  from context, so the level rule catches what the transcript misses; a recording that was cut between words
  right after a loud syllable can trip it too.

Levels are measured over 20 ms frames in dB: the speech level is the 95th percentile of the frames, the clip's
quiet level the 10th percentile of the frames between the first and last word (its pauses and room tone), at
least 30 dB under the speech level.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from alltalk_gui.core.engine_api.languages import is_spaced, word_count
from alltalk_gui.core.transcript.segments import Word
from alltalk_gui.core.transcription.wer import normalise_words
from alltalk_gui.core.voice.judge import thresholds as t

FRAME_S = 0.02
END_S = 0.06            # the part of the end whose level tells a fade from a cut
ACTIVE_BELOW_LEVEL_DB = 30.0  # without a transcript, frames within this of the speech level count as voice
QUIET_BELOW_LEVEL_DB = 30.0   # the quiet level is at least this far below the speech level


@dataclass
class LengthCheck:
    duration_s: float
    spoken_s: float
    tail_s: float                       # after the last heard word (or the last loud frame)
    tail_is_sound: bool                 # the tail is louder than the clip's quiet parts
    end_level_db: float                 # the last 60 ms against the speech level (0 = as loud as speech)
    predicted_s: float | None = None    # what the text predicts (None without text)
    ratio: float | None = None          # spoken / predicted
    last_word_heard: bool | None = None  # None without text or transcript
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("duration_s", "spoken_s", "tail_s", "end_level_db", "predicted_s", "ratio"):
            if data[key] is not None:
                data[key] = round(float(data[key]), 3)
        data["ok"] = self.ok
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "LengthCheck":
        return cls(**{k: v for k, v in data.items() if k != "ok"})


def frame_levels(samples: np.ndarray, rate: int) -> np.ndarray:
    """The level of each 20 ms frame in dBFS (RMS)."""
    n = max(1, int(FRAME_S * rate))
    count = max(1, samples.size // n)
    frames = np.resize(samples.astype(np.float64), count * n).reshape(count, n) if samples.size >= n else \
        samples.astype(np.float64)[None, :]
    return 20.0 * np.log10(np.sqrt(np.mean(frames ** 2, axis=1)) + 1e-9)


def check_length(samples: np.ndarray, rate: int, text: str | None = None, language: str | None = None,
                 words: Sequence[Word] | None = None) -> LengthCheck:
    """Apply the rules to one clip (mono float at ``rate``).

    Args:
        text: what the clip should say (None: the length against the text and the last word are not checked).
        language: the text's language (Chinese and Japanese are counted in characters).
        words: what Whisper heard, with times from the start of the clip (None: no transcript; the spoken part
            is then found from the levels alone).
    """
    samples = np.asarray(samples, dtype=np.float32)
    duration = samples.size / rate
    levels = frame_levels(samples, rate)
    level = float(np.percentile(levels, 95))
    heard = [w for w in (words or []) if w.text.strip()]
    if heard:
        start_s, end_s = heard[0].start_ms / 1000, min(duration, heard[-1].end_ms / 1000)
    else:
        active = np.flatnonzero(levels >= level - ACTIVE_BELOW_LEVEL_DB)
        start_s, end_s = (active[0] * FRAME_S, min(duration, (active[-1] + 1) * FRAME_S)) if active.size else (0, 0)
    spoken = max(0.0, end_s - start_s)
    inside = levels[int(start_s / FRAME_S):max(int(start_s / FRAME_S) + 1, int(end_s / FRAME_S))]
    # The clip's quiet level: its pauses, but never closer to the speech than QUIET_BELOW_LEVEL_DB (a tightly cut
    # clip has no pauses, and its softest syllables are not silence).
    quiet = min(float(np.percentile(inside, 10)) if inside.size else level, level - QUIET_BELOW_LEVEL_DB)
    tail_levels = levels[int(np.ceil(end_s / FRAME_S)):]
    tail = max(0.0, duration - end_s)
    tail_is_sound = bool(tail_levels.size) and float(np.median(tail_levels)) > quiet + t.TAIL_SILENT_ABOVE_FLOOR_DB
    end_level = float(np.max(levels[-max(1, int(END_S / FRAME_S)):])) - level
    check = LengthCheck(duration_s=duration, spoken_s=spoken, tail_s=tail, tail_is_sound=tail_is_sound,
                        end_level_db=end_level)

    if text and " ".join(text.split()):
        code = language or "en"
        spaced = is_spaced(code)
        check.predicted_s = word_count(text, code) / (t.WORDS_PER_S if spaced else t.CHARACTERS_PER_S)
        if check.predicted_s > 0:
            check.ratio = spoken / check.predicted_s
        if words is not None:
            check.last_word_heard = _last_word_heard(text, heard, spaced)
    _problems(check, heard_anything=bool(heard) or words is None)
    return check


def _last_word_heard(text: str, heard: Sequence[Word], spaced: bool) -> bool:
    said = normalise_words(text)
    if not said:
        return True
    if spaced:
        last, candidates = said[-1], [w for word in heard[-2:] for w in normalise_words(word.text)][-2:]
        return any(difflib.SequenceMatcher(None, last, c).ratio() >= t.LAST_WORD_SIMILARITY for c in candidates)
    letters = "".join(said)
    tail = "".join("".join(normalise_words(w.text)) for w in heard)[-2:]
    return letters[-1] in tail


def _problems(check: LengthCheck, heard_anything: bool) -> None:
    problems = check.problems
    if not heard_anything:
        problems.append("no word was heard")
        return
    if check.ratio is not None and check.ratio < t.LENGTH_RATIO_MIN:
        problems.append(f"too short: {check.spoken_s:.1f} s spoken where the text needs about "
                        f"{check.predicted_s:.1f} s (words skipped or rushed)")
    elif check.ratio is not None and check.ratio > t.LENGTH_RATIO_MAX:
        problems.append(f"too long: {check.spoken_s:.1f} s spoken where the text needs about "
                        f"{check.predicted_s:.1f} s (something added: babble, repeats or long pauses)")
    if check.tail_is_sound and check.tail_s > t.TAIL_SOUND_S:
        problems.append(f"{check.tail_s:.1f} s of noise or mumbling after the last word")
    elif not check.tail_is_sound and check.tail_s > t.TAIL_SILENCE_S:
        problems.append(f"{check.tail_s:.1f} s of silence after the last word")
    if check.last_word_heard is False:
        problems.append("the last word was not heard (cut off, or said wrongly)")
    elif check.end_level_db > t.END_LEVEL_CUT_DB and check.tail_s <= t.TAIL_SOUND_S:
        # Only where the audio ends with the last word: a loud end after a long tail is the tail's own sound.
        problems.append("the sound stops abruptly, as if the last word was cut")
