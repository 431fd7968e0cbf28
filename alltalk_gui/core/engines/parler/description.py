"""The words that describe the speaker to Parler-TTS, made the Data-Speech way from the app's own measurements.

Parler-TTS was trained on descriptions that Data-Speech (huggingface/dataspeech) wrote from measured features of
each recording: pitch and its spread, speaking rate, noise, reverberation, each cut into named bins ("slightly
low-pitched", "quite clear") and put into a sentence. Parler Mini v1 also learnt 34 speakers by name ("Jon's
voice is..."), so a fine-tune on one speaker describes them by their name. This module measures the same
features on the project's clips with the app's own tools and writes such a sentence, e.g.::

    Jenny speaks at a moderate speed with a slightly low-pitched voice, slightly expressive. The recording is
    very clear and very close-sounding.

The user edits it freely (the Train page, through ``Engine.voice_prompt`` / ``save_voice_prompt``); the project
keeps it (:func:`saved_description`). Training uses the
same sentence for every clip, preview and export offer it as the voice's description.

How each feature is measured (numpy and librosa, which the app has; no model):

* **SNR**: :func:`alltalk_gui.core.audio.analysis.analyse`, the import step's speech-to-noise ratio (its noise
  floor is the quietest tenth of 30 ms frames), averaged over the clips by duration.
* **pitch**: librosa's YIN F0 (65-500 Hz) on the voiced frames (those that repeat one period later), median in
  Hz and spread in semitones (of the middle 80 %). Data-Speech bins pitch against the speaker's gender; here
  the range is read from the F0 itself (below 155 Hz against a centre of 120 Hz, else 210 Hz), so no gender is
  guessed or written.
* **speaking rate**: syllables per second of clip (vowel groups of the English transcript; Data-Speech counts
  phonemes, about 2.8 per syllable).
* **reverberation**: how fast the level can fall. After a sound stops, a dry recording falls 40 dB in a few tens
  of milliseconds; a room keeps it ringing, and no fall is faster than the room's decay. The steepest falls
  (the 95th percentile of 20 ms slopes of 10 ms frames, ending 6 dB or more above the noise floor) give a
  reverberation time (60 dB / rate). A rough measure, as Data-Speech's C50 estimate is: on espeak-ng speech it
  read 0.08 s dry, 0.22 s and 0.29 s with rooms of 0.4 s and 1 s, and 0.16 s for the dry speech in noise.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

SETTING = "parler_description"    # the project's settings key: {"text", "measures", "edited"}
PITCH_RANGE_HZ = (65.0, 500.0)
VOICED_CORRELATION = 0.7        # a frame is voiced when it repeats one period later this closely
LOW_VOICE_HZ = 155.0              # below: read against a centre of 120 Hz (typical of lower voices), else 210 Hz
SLOPE_S = 0.020                   # reverberation: the slope of the level over 20 ms ...
FRAME_S = 0.010                   # ... of 10 ms frames
MAX_SECONDS_MEASURED = 120.0      # pitch and decay are read from at most two minutes of clips

# Bins: (upper limit, words), the last one open. The words are Data-Speech's kind of words.
RATE_BINS = ((2.6, "very slowly"), (3.2, "quite slowly"), (3.8, "slightly slowly"), (4.6, "at a moderate speed"),
             (5.2, "slightly fast"), (5.9, "quite fast"), (math.inf, "very fast"))
PITCH_BINS = ((-4.0, "very low-pitched"), (-2.5, "quite low-pitched"), (-1.0, "slightly low-pitched"),
              (1.0, "moderate-pitched"), (2.5, "slightly high-pitched"), (4.0, "quite high-pitched"),
              (math.inf, "very high-pitched"))
MONOTONY_BINS = ((1.0, "very monotone"), (1.5, "quite monotone"), (2.0, "slightly monotone"),
                 (2.8, "with a moderate intonation"), (3.5, "slightly expressive"), (4.5, "quite expressive"),
                 (math.inf, "very expressive"))
NOISE_BINS = ((10.0, "very noisy"), (18.0, "quite noisy"), (25.0, "slightly noisy"), (35.0, "fairly clear"),
              (45.0, "quite clear"), (math.inf, "very clear"))
REVERB_BINS = ((0.10, "very close-sounding"), (0.18, "slightly close-sounding"), (0.25, "slightly distant-sounding"),
               (0.35, "distant-sounding"), (math.inf, "very distant-sounding"))


@dataclass(frozen=True)
class VoiceMeasures:
    """What the description is made from (all JSON-able)."""

    pitch_hz: float | None          # median F0 of the voiced frames
    pitch_spread_st: float | None   # their standard deviation, in semitones
    syllables_per_s: float | None
    snr_db: float | None
    reverb_s: float | None          # the reverberation time estimate (60 dB / steepest fall)
    seconds: float                  # audio measured

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def bin_words(value: float, bins: tuple[tuple[float, str], ...]) -> str:
    return next(words for limit, words in bins if value < limit)


def syllables(text: str) -> int:
    """English syllables, roughly: vowel groups per word (a silent final e dropped), at least one per word."""
    count = 0
    for word in re.findall(r"[a-z']+", text.lower()):
        groups = len(re.findall(r"[aeiouy]+", word))
        if word.endswith("e") and not word.endswith(("le", "ee", "ye")) and groups > 1:
            groups -= 1
        count += max(1, groups)
    return count


def pitch(samples, rate: int) -> tuple[float | None, float | None]:
    """(median F0 in Hz, spread in semitones) of the voiced frames; (None, None) with too little voice.

    Voiced means periodic: the frame correlates with itself one estimated period later by more than
    :data:`VOICED_CORRELATION` (fricatives, breaths and silence do not, and YIN's guesses there would make a flat
    voice look "expressive")."""
    import librosa
    import numpy as np

    hop, window = 256, 512
    samples = np.asarray(samples, dtype=np.float32)
    if len(samples) < rate // 2:
        return None, None
    f0 = librosa.yin(samples, fmin=PITCH_RANGE_HZ[0], fmax=PITCH_RANGE_HZ[1], sr=rate, frame_length=4 * hop,
                     hop_length=hop, center=False)
    voiced = []
    for i, f in enumerate(f0):
        start, lag = i * hop, int(round(rate / f))
        a, b = samples[start:start + window], samples[start + lag:start + lag + window]
        energy = float(np.dot(a, a) * np.dot(b, b)) if len(b) == window else 0.0
        if energy > 1e-12 and float(np.dot(a, b)) / math.sqrt(energy) > VOICED_CORRELATION:
            voiced.append(f)
    if len(voiced) < 20:
        return None, None
    voiced = np.asarray(voiced)
    # YIN's octave errors (a period of two cycles, or half of one) land an octave away: keep the frames within
    # 10 semitones of the median.
    median = np.median(voiced)
    voiced = voiced[np.abs(12.0 * np.log2(voiced / median)) < 10.0]
    semitones = 12.0 * np.log2(voiced / np.median(voiced))
    # The spread of the middle 80 % (as a standard deviation would be for a normal spread): YIN's octave errors
    # and the odd creak do not make a flat voice "expressive".
    p10, p90 = np.percentile(semitones, [10, 90])
    return float(np.median(voiced)), float((p90 - p10) / 2.563)


def reverberation(samples, rate: int) -> float | None:
    """The reverberation time estimate in seconds (see the module docstring); None with too little audio."""
    import numpy as np

    hop = int(rate * FRAME_S)
    n = len(samples) // hop
    if n < 50:
        return None
    power = np.square(samples[: n * hop].astype(np.float64)).reshape(n, hop).mean(axis=1)
    level = 10.0 * np.log10(np.maximum(power, 1e-12))
    floor = float(np.percentile(level, 10))
    width = int(round(SLOPE_S / FRAME_S))
    start, end = level[:-width], level[width:]
    falls = (start - end)[(end < start) & (end > floor + 6.0)] / SLOPE_S  # falls that end above the noise floor
    if len(falls) < 10:
        return None
    steepest = float(np.percentile(falls, 95))
    return 60.0 / steepest if steepest > 0 else None


def measure(clips: Sequence[tuple[str | os.PathLike[str], str]], snr_db: float | None = None) -> VoiceMeasures:
    """Measure clips (audio path, transcript). ``snr_db``: the sources' SNR from the import analysis when known
    (better than the clips', which have few pauses), else measured on the clips."""
    import numpy as np

    from alltalk_gui.core.audio.analysis import analyse
    from alltalk_gui.core.audio.decode import load, to_mono

    rate = 22_050
    pieces, total_s, total_syllables, snrs = [], 0.0, 0, []
    for path, text in clips:
        from alltalk_gui.core.audio.decode import resample

        samples, sr = load(path)
        mono = resample(to_mono(samples), sr, rate)
        seconds = len(mono) / rate
        total_s += seconds
        total_syllables += syllables(text)
        snrs.append((analyse(mono, rate)["snr_db"], seconds))
        if sum(len(p) for p in pieces) < MAX_SECONDS_MEASURED * rate:
            pieces += [mono, np.zeros(rate // 4, np.float32)]  # a quarter second apart: no false fall across clips
    if not pieces:
        return VoiceMeasures(None, None, None, snr_db, None, 0.0)
    audio = np.concatenate(pieces)
    median, spread = pitch(audio, rate)
    if snr_db is None and snrs:
        snr_db = sum(v * s for v, s in snrs) / max(sum(s for _, s in snrs), 1e-9)
    return VoiceMeasures(
        pitch_hz=_round(median), pitch_spread_st=_round(spread),
        syllables_per_s=_round(total_syllables / total_s) if total_s > 0 else None,
        snr_db=_round(snr_db), reverb_s=_round(reverberation(audio, rate), 3), seconds=round(total_s, 2))


def describe(name: str, m: VoiceMeasures) -> str:
    """The description sentence for a speaker called ``name`` (empty: "The speaker")."""
    name = " ".join(name.split()) or "The speaker"
    voice = []
    if m.pitch_hz is not None:
        centre = 120.0 if m.pitch_hz < LOW_VOICE_HZ else 210.0
        voice.append(f"a {bin_words(12.0 * math.log2(m.pitch_hz / centre), PITCH_BINS)} voice")
    manner = bin_words(m.syllables_per_s, RATE_BINS) if m.syllables_per_s is not None else ""
    first = f"{name} speaks" + (f" {manner}" if manner else "") + (f" with {voice[0]}" if voice else "")
    if m.pitch_spread_st is not None:
        first += f", {bin_words(m.pitch_spread_st, MONOTONY_BINS)}"
    recording = [bin_words(m.snr_db, NOISE_BINS)] if m.snr_db is not None else []
    if m.reverb_s is not None:
        recording.append(bin_words(m.reverb_s, REVERB_BINS))
    second = f" The recording is {' and '.join(recording)}." if recording else ""
    return first + "." + second


def saved_description(settings: dict[str, Any]) -> str:
    """The description a project keeps (its ``settings``), or "" when it has none yet."""
    saved = settings.get(SETTING)
    return str(saved.get("text", "")).strip() if isinstance(saved, dict) else ""


def save_description(settings: dict[str, Any], text: str, measures: VoiceMeasures | None = None,
                     edited: bool = False) -> None:
    """Put the description into a project's ``settings`` (the caller saves the project)."""
    text = " ".join(text.split())
    if not text:
        raise ValueError("The description is empty; Parler-TTS speaks in the voice the description gives.")
    entry: dict[str, Any] = {"text": text, "edited": edited}
    old = settings.get(SETTING) if isinstance(settings.get(SETTING), dict) else {}
    entry["measures"] = measures.to_dict() if measures is not None else old.get("measures")
    settings[SETTING] = entry


def suggested_description(project, dataset_dir: str | os.PathLike[str] | None = None) -> str:
    """The description ``project`` keeps, or one measured now from its dataset (not saved: the caller decides)."""
    text = saved_description(project.settings)
    if text:
        return text
    return describe(project.name, measure_project(project, dataset_dir))


def measure_project(project, dataset_dir: str | os.PathLike[str] | None = None) -> VoiceMeasures:
    """The measures of a project's dataset clips, with its recordings' SNR from the import analysis."""
    from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV, read_metadata

    dataset = Path(dataset_dir) if dataset_dir else project.dataset_dir
    clips = [(dataset / row.audio_file, row.text) for csv in (TRAIN_CSV, EVAL_CSV) if (dataset / csv).is_file()
             for row in read_metadata(dataset / csv)]
    return measure(clips, snr_db=sources_snr(project))


def sources_snr(project) -> float | None:
    """The duration-weighted SNR of the project's imported recordings (their import analysis), if any."""
    values = [(s.analysis.get("snr_db"), s.duration_s) for s in project.sources
              if isinstance(getattr(s, "analysis", None), dict) and not s.analysis.get("steady")]
    values = [(v, d) for v, d in values if isinstance(v, (int, float)) and d > 0]
    if not values:
        return None
    return sum(v * d for v, d in values) / sum(d for _, d in values)


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(float(value), digits)
