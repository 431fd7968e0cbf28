"""Likeness: how much a voice sounds like the speaker, as the cosine similarity of speaker embeddings.

The measure itself (resemblyzer's GE2E encoder, the speaker as the mean of their clips, the cosine) lives in
:mod:`alltalk_gui.core.audio.speaker`, which the transcript's speaker check shares; the judge names its audio
error after itself, and its readings and thresholds are in :mod:`.thresholds`.
"""

from __future__ import annotations

from alltalk_gui.core.audio.speaker import (  # noqa: F401  (the judge's names for the shared measure)
    MIN_SPEECH_S,
    RATE,
    SpeakerAudioError as JudgeAudioError,
    SpeakerEncoder,
    as_mono,
    likeness,
    prepared,
    unit,
)
