"""Flags on training clips: what is wrong with a clip, in words the transcript editor can show and filter on.

A flag is a short code (for filtering) plus a reason (for people). Flags are never stored as the truth: the
:class:`ClipChecker` recomputes them from the clip itself after every edit, so fixing a clip clears its flag.

Three flags make a clip unusable for training and are refused by the dataset export (:data:`BLOCKING`): too
long for the engine (its :attr:`~alltalk_gui.core.engine_api.engine.Engine.max_clip_ms`: 11.6 s for XTTS v2, 30 s
for F5-TTS), empty text, and text the engine cannot encode (its text check,
:meth:`~alltalk_gui.core.engine_api.engine.Engine.text_checker`). The others are warnings: the clip can be
trained on, but it is probably worth a look; a clip outside the wanted length range (what transcription cuts to)
is one of them, shorter or longer. Every limit comes from the project's engine: a checker is made for one engine
by name (:class:`ClipChecker`), so the same clips are judged anew when the project changes engine.

One warning depends on the other clips too: ``other_speaker``, a voice unlike the project's main speaker. The
clip list finds the main voice from all clips' speaker embeddings (:mod:`.speakers`, :mod:`.speaker_check`) and
hands the checker two numbers per clip, :attr:`ClipFacts.speaker_likeness` and the seconds of voice it was measured
on, :attr:`ClipFacts.speaker_voice_s` (a short clip may stray further: :func:`other_speaker_below`).
"""

from __future__ import annotations

import functools
import math
import os
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable

from alltalk_gui.core.engine_api.engine import Engine, TextCheck, get_engine
from alltalk_gui.core.engine_api.languages import word_count

DEFAULT_MIN_S = 2.0  # shorter clips carry too little of the voice (and are joined with a neighbour when cut)

TOO_SHORT = "too_short"
LONG = "long"            # longer than the wanted maximum, within the engine's limit: it trains
TOO_LONG = "too_long"    # longer than the engine's limit: it cannot train
LOW_CONFIDENCE = "low_confidence"
NON_SPEECH = "non_speech"
CLIPPED = "clipped"
UNENCODABLE = "unencodable"
EMPTY_TEXT = "empty_text"
DUPLICATE_TEXT = "duplicate_text"
OTHER_SPEAKER = "other_speaker"  # the voice is not the project's main speaker's (transcript/speakers.py)

ALL_FLAGS = (TOO_SHORT, LONG, TOO_LONG, LOW_CONFIDENCE, NON_SPEECH, CLIPPED, UNENCODABLE, EMPTY_TEXT, DUPLICATE_TEXT,
             OTHER_SPEAKER)
# Flags the dataset export refuses; the rest only warn.
BLOCKING = frozenset({TOO_LONG, EMPTY_TEXT, UNENCODABLE})

LOW_CONFIDENCE_BELOW = 0.5   # mean word probability from Whisper
# Whisper's no-speech probability for the window the clip came from counts only with unsure words, as in Whisper's
# own rule (no_speech_threshold 0.6 with logprob_threshold -1.0): alone it flagged 5 of 63 clean espeak-ng clips
# (mean word probability 0.64-0.95) and the walk's 14 of 54; with it, 0 of 63 synthetic and 0 of 17 human clips
# (benchmarks/flag_false_positives.py, results/flag_false_positives_2026-11-26.json).
NO_SPEECH_ABOVE = 0.6
NO_SPEECH_WORDS_BELOW = LOW_CONFIDENCE_BELOW
MIN_WORDS_PER_S = 0.5        # real speech has 2-4 words a second; music with a hallucinated word has far fewer
CLIPPED_FRACTION_ABOVE = 0.001
NOISE_FLATNESS_ABOVE = 0.3   # spectral flatness: ~0.01-0.1 for voice, ~0.5+ for hiss and broadband noise
STEADY_LOW_ENERGY_BELOW = 0.08  # share of quiet 50 ms frames: 0.2-0.35 in speech, ~0 in music and hum
# Likeness (cosine of GE2E speaker embeddings, core/audio/speaker.py) of a clip to the project's main speaker under
# which the clip is flagged as another voice. Measured 2026-11-27 (benchmarks/other_speaker.py, results/
# other_speaker_2026-11-27.json: interviews built of real and espeak-ng speech, transcribed by tiny.en, cut by the
# app): the main speaker's own clips 0.88-0.97 (the Sonnet reader 0.885-0.950), other voices 0.57-0.72 (the CMU
# ARCTIC speakers 0.57-0.70, espeak-ng against the reader 0.60-0.61, espeak's female variant against its male voice
# 0.64-0.72). The judge measured the same reader 0.86-0.91 against his mean, and espeak-ng variants up to 0.80 apart
# (voice/judge/thresholds.py). 0.80 lies midway between the groups. espeak-ng's en-us, en-gb and de voices are one
# synthetic speaker to the encoder (0.91-0.95): they are not flagged, nor would they be told apart by ear.
OTHER_SPEAKER_BELOW = 0.80
# With little voice the embedding wanders, and the main speaker's own short clips measure lower. Random windows
# (benchmarks/other_speaker.py --short, results/other_speaker_short_2026-11-27.json): the Sonnet reader against his
# mean measured 0.64-0.85 (median 0.77) with 1.2 s of voice, 0.68-0.90 with 1.4 s, 0.80-0.90 with 1.7 s; the ARCTIC
# speakers against him 0.42-0.67 at every length; espeak-ng en-us against its mean 0.76-0.89 with 1.0 s of voice, its
# female variant 0.48-0.67 with 1.0 s and up to 0.71 with 2 s. So the line rises with the seconds of voice, through
# these points (seconds of voice, likeness), and stays at OTHER_SPEAKER_BELOW from 2 s on; under
# speaker_check.MIN_VOICE_S (1 s) a clip is not measured at all. With the fixed 0.80, half the reader's clips with
# 1.2 s of voice were flagged as another voice.
SHORT_VOICE_LINE = ((1.0, 0.58), (1.4, 0.66), (2.0, OTHER_SPEAKER_BELOW))


def other_speaker_below(voice_s: float | None) -> float:
    """The likeness under which a clip measured on ``voice_s`` seconds of voice is another voice's (None: not
    known, the full line)."""
    if voice_s is None or voice_s >= SHORT_VOICE_LINE[-1][0]:
        return OTHER_SPEAKER_BELOW
    if voice_s <= SHORT_VOICE_LINE[0][0]:
        return SHORT_VOICE_LINE[0][1]
    for (s0, l0), (s1, l1) in zip(SHORT_VOICE_LINE, SHORT_VOICE_LINE[1:]):
        if voice_s <= s1:
            return l0 + (l1 - l0) * (voice_s - s0) / (s1 - s0)
    return OTHER_SPEAKER_BELOW  # pragma: no cover - the loop returns


def another_voice(likeness: float | None, voice_s: float | None = None) -> bool:
    """Whether a clip's likeness to the main speaker (None: not known), measured on ``voice_s`` seconds of voice,
    makes it another voice's."""
    return likeness is not None and likeness < other_speaker_below(voice_s)

# What Whisper writes when it hears music or other non-speech instead of words.
_NON_SPEECH_TEXT = re.compile(r"♪|♫|[\[(]\s*(music|applause|laughter|silence|noise|no speech|inaudible)\s*[\])]",
                              re.IGNORECASE)


@dataclass(frozen=True)
class Flag:
    code: str    # one of ALL_FLAGS
    reason: str  # one sentence for the user, with the numbers that triggered it
    value: float | None = None  # the measure behind it, where a list shows it beside the flag (other_speaker)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "reason": self.reason}
        if self.value is not None:
            out["value"] = round(self.value, 4)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Flag":
        value = data.get("value")
        return cls(str(data["code"]), str(data["reason"]), None if value is None else float(value))


@dataclass(frozen=True)
class ClipFacts:
    """What the checker needs to know about one clip (kept free of the Segment class so tests stay small)."""

    duration_ms: int
    text: str
    word_probabilities: tuple[float, ...] = ()
    no_speech_prob: float | None = None
    # From the working audio (see clip_audio.AudioStats); None when the audio was not available.
    peak: float | None = None
    clipped_fraction: float | None = None
    flatness: float | None = None
    low_energy_ratio: float | None = None
    # The text is no longer what the recogniser heard (the user corrected it, or gave the known text): its
    # confidence and no-speech guess were about other words, so the flags drawn from them no longer apply.
    text_corrected: bool = False
    # Likeness of the clip's voice to the project's main speaker (transcript/speakers.py); None: not measured (the
    # speaker check is off, still measuring, the clip is too short or silent, or the project has no main voice).
    speaker_likeness: float | None = None
    speaker_voice_s: float | None = None  # the seconds of voice that likeness was measured on (None: not known)


_NOT_ALNUM = re.compile(r"[\W_]+")


@functools.lru_cache(maxsize=4096)  # called for every clip after every edit
def normalise_for_duplicates(text: str) -> str:
    """Lower case, punctuation and repeated spaces removed: 'Hello, world!' and 'hello world' are duplicates."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_NOT_ALNUM.sub(" ", text).split())  # [\W_] is exactly "not str.isalnum()"


def default_max_s(engine: Engine) -> float:
    """The longest clip wanted when none is asked for: the engine's limit in whole seconds (XTTS v2: 11 of 11.6 s,
    F5-TTS: 30), so that cutting at a pause and padding the ends keeps a clip within the limit."""
    return float(max(1, math.floor(engine.max_clip_ms / 1000)))


class ClipChecker:
    """Computes the flags of clips for one engine, language and length range.

    Args:
        engine: the registry name of the engine the clips are for (the project's): its clip-length limit, its
            text check and its default length range.
        language: the project's language code (en, de, zh-cn...).
        min_s / max_s: the wanted clip length; ``max_s`` None is :func:`default_max_s`, and above the engine's
            limit it is capped there (the wish is kept, :attr:`max_s`, for when the project changes engine).
        text_checker: decides which characters the engine cannot encode; else the engine's, for ``language`` and
            ``vocab_file`` (its base model's vocabulary: exact; without it, approximate).

    Raises:
        ValueError: an impossible length range.
        alltalk_gui.core.engine_api.engine.EngineError: no engine has that name.
    """

    def __init__(self, engine: str, language: str, min_s: float = DEFAULT_MIN_S, max_s: float | None = None,
                 text_checker: TextCheck | None = None,
                 vocab_file: str | os.PathLike[str] | None = None) -> None:
        self.engine = get_engine(engine)
        max_s = default_max_s(self.engine) if max_s is None else float(max_s)
        if min_s <= 0 or max_s <= min_s:
            raise ValueError(f"Clip length range {min_s}-{max_s} s is invalid: the minimum must be above 0 and "
                             "below the maximum.")
        self.language = language
        self.min_ms = int(round(min_s * 1000))
        self.max_s = max_s  # as asked for; max_ms is what this engine allows of it
        self.max_ms = min(int(round(max_s * 1000)), self.engine.max_clip_ms)
        if self.max_ms <= self.min_ms:
            raise ValueError(f"Clip length range {min_s}-{max_s} s is invalid for {self.engine.title}, which takes "
                             f"clips up to {self.engine.max_clip_ms / 1000:g} s: lower the minimum.")
        self.text_checker = text_checker or self.engine.text_checker(language, vocab_file)

    def for_engine(self, engine: str, vocab_file: str | os.PathLike[str] | None = None) -> "ClipChecker":
        """The checker of ``engine`` with this one's language and length range (the range as chosen, which another
        engine may allow more of; a minimum above its limit gives way to its own range)."""
        try:
            return ClipChecker(engine, self.language, self.min_ms / 1000, self.max_s, vocab_file=vocab_file)
        except ValueError:
            return ClipChecker(engine, self.language, vocab_file=vocab_file)

    @property
    def max_chars(self) -> int | None:
        """The longest clip text the engine reads in this language (None: no limit of its own)."""
        return self.text_checker.max_chars

    def flags(self, clip: ClipFacts, duplicate_of: str | None = None, check_text: bool = True) -> list[Flag]:
        """Flags for one clip; ``duplicate_of`` names another kept clip with the same text, if any. Without
        ``check_text`` the engine's text check is left out (it is not ready yet: the caller checks again later)."""
        out: list[Flag] = []
        seconds = clip.duration_ms / 1000
        if clip.duration_ms < self.min_ms:
            out.append(Flag(TOO_SHORT, f"{seconds:.1f} s is shorter than the {self.min_ms / 1000:.1f} s minimum; "
                                       "merge it with a neighbour or delete it."))
        if clip.duration_ms > self.engine.max_clip_ms:
            out.append(Flag(TOO_LONG, f"{seconds:.1f} s is longer than the {self.engine.title} limit of "
                                      f"{self.engine.max_clip_ms / 1000:.1f} s; split it."))
        elif clip.duration_ms > self.max_ms:
            out.append(Flag(LONG, f"{seconds:.1f} s is longer than the {self.max_ms / 1000:.1f} s maximum chosen for "
                                  f"these clips; {self.engine.title} still trains on it (up to "
                                  f"{self.engine.max_clip_ms / 1000:.1f} s)."))
        text = clip.text.strip()
        if not text:
            out.append(Flag(EMPTY_TEXT, "The clip has no text; type what is said or delete the clip."))
        elif check_text:
            problem = self.text_checker.problem(text)
            if problem:
                out.append(Flag(UNENCODABLE, problem))
        if clip.word_probabilities and not clip.text_corrected:
            mean = sum(clip.word_probabilities) / len(clip.word_probabilities)
            if mean < LOW_CONFIDENCE_BELOW:
                out.append(Flag(LOW_CONFIDENCE, "Whisper was unsure of these words; listen, and correct the text "
                                                "where it is wrong."))
        reason = self._non_speech_reason(clip, seconds)
        if reason:
            out.append(Flag(NON_SPEECH, reason))
        if clip.clipped_fraction is not None and clip.clipped_fraction > CLIPPED_FRACTION_ABOVE:
            out.append(Flag(CLIPPED, f"{clip.clipped_fraction:.1%} of the samples are at full scale (clipped "
                                     "recording); the distortion will be learned as part of the voice."))
        if another_voice(clip.speaker_likeness, clip.speaker_voice_s):
            short = (f" in {clip.speaker_voice_s:.1f} s of voice"
                     if clip.speaker_voice_s is not None and clip.speaker_voice_s < SHORT_VOICE_LINE[-1][0] else "")
            out.append(Flag(OTHER_SPEAKER, f"Another voice? Likeness {clip.speaker_likeness:.2f} to the main speaker "
                                           f"(the same voice measures {other_speaker_below(clip.speaker_voice_s):.2f} "
                                           f"or more{short}). Listen: delete it if it is not yours, or press Looks "
                                           "fine.", clip.speaker_likeness))
        if duplicate_of is not None and text:
            out.append(Flag(DUPLICATE_TEXT, f"Same text as clip {duplicate_of}; keep one of them."))
        return out

    def _non_speech_reason(self, clip: ClipFacts, seconds: float) -> str | None:
        """Why the clip may not be speech, in plain words (None: it sounds like speech). Listening decides: the
        editor's "Looks fine" clears the flag."""
        if _NON_SPEECH_TEXT.search(clip.text):
            return "Whisper wrote this down as music or other sounds, not words."
        if self._recogniser_doubts_speech(clip):
            return ("Whisper was not sure this is speech, and unsure of its words. Listen: if it is speech, correct "
                    "the text or press Looks fine.")
        words = word_count(clip.text, self.language)  # characters in zh-cn and ja
        if seconds >= 3 and words / seconds < MIN_WORDS_PER_S:
            return (f"Only {words} {'word' if words == 1 else 'words'} in {seconds:.1f} s: this may be music, "
                    "noise or a long pause around a stray word.")
        if clip.flatness is not None and clip.flatness > NOISE_FLATNESS_ABOVE:
            return "It sounds like hiss or noise rather than a voice."
        if clip.low_energy_ratio is not None and clip.low_energy_ratio < STEADY_LOW_ENERGY_BELOW:
            return ("The sound is steady, without the short pauses between syllables that speech has: music, a hum, "
                    "or speech over music?")
        return None

    @staticmethod
    def _recogniser_doubts_speech(clip: ClipFacts) -> bool:
        """Whisper's no-speech guess, trusted only with unsure words (its own rule) and only for the words it
        wrote: once the text is corrected, a person has listened."""
        if clip.text_corrected or clip.no_speech_prob is None or clip.no_speech_prob <= NO_SPEECH_ABOVE:
            return False
        probabilities = clip.word_probabilities
        return not probabilities or sum(probabilities) / len(probabilities) < NO_SPEECH_WORDS_BELOW


def duplicate_map(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``(clip id, text)`` pairs -> {clip id: id of the first earlier clip with the same normalised text}."""
    first: dict[str, str] = {}
    out: dict[str, str] = {}
    for clip_id, text in items:
        key = normalise_for_duplicates(text)
        if not key:
            continue
        if key in first:
            out[clip_id] = first[key]
        else:
            first[key] = clip_id
    return out
