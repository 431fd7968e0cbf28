"""Word error rate: the standard definition (checked against jiwer), case and punctuation ignored, and Whisper
hearing real speech back with a low WER."""

from __future__ import annotations

import jiwer
import pytest

from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.transcription.wer import IntelligibilityChecker, normalise_words, word_error_rate
from tests.trained_voice import whisper_tiny_en

PAIRS = [
    ("the quick brown fox", "the quick brown fox"),
    ("the quick brown fox", "the quick brown"),              # the last word dropped
    ("the quick brown fox", "a quick brown fox jumps"),      # one substitution, one insertion
    ("one two three four five", "five four three two one"),
    ("hello", "hello hello hello"),
    ("it's a test", "its a test"),
]


@pytest.mark.parametrize("reference, hypothesis", PAIRS)
def test_wer_matches_jiwer(reference, hypothesis):
    assert word_error_rate(reference, hypothesis) == pytest.approx(jiwer.wer(reference, hypothesis))


def test_case_and_punctuation_are_ignored():
    assert word_error_rate("Hello, world!", "hello world") == 0.0
    assert word_error_rate("Is it ready? Yes: it's training now.", "is it ready yes it’s training now") == 0.0
    assert normalise_words("  Über-Straße, «quoted» 42!") == ["über", "straße", "quoted", "42"]
    assert word_error_rate("the last word", "the last") == pytest.approx(1 / 3)


def test_empty_sentence_is_an_error():
    with pytest.raises(ValueError, match="no words"):
        word_error_rate(" ... ", "anything")


def test_whisper_hears_real_speech_back(tmp_path):
    from alltalk_gui.testing.speech import synthesize

    sentence = "the quick brown fox jumps over the lazy dog"
    synthesize(sentence, tmp_path / "fox.wav", words_per_minute=150)
    samples, rate = audio.load(tmp_path / "fox.wav")
    checker = IntelligibilityChecker(model=whisper_tiny_en(), device="cpu")
    heard = checker.check(audio.to_mono(samples), rate, sentence.capitalize() + ".", "en")
    # tiny.en with greedy decoding on espeak-ng speech: most words back (the noise of the tiny XTTS gets >= 0.5).
    assert heard.wer <= 0.45, heard.transcript
    assert "lazy dog" in heard.transcript.lower()


def test_missing_whisper_model_is_reported_not_downloaded(tmp_path):
    from alltalk_gui.core.transcription.model_files import ModelError

    with pytest.raises(ModelError):
        IntelligibilityChecker(model=str(tmp_path / "no_such_model"), device="cpu")
