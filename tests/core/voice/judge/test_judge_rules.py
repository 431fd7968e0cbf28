"""The judge's plain parts without its models: the length rules on made signals, the readings, bad audio refused
with a clear message before any model loads, the verdict's JSON form, the CER, and the judge hidden (with the
reason) when its extra is not installed."""

from __future__ import annotations

import importlib.util

import jiwer
import numpy as np
import pytest

from alltalk_gui.core.transcript.segments import Word
from alltalk_gui.core.transcription.wer import character_error_rate, uses_characters
from alltalk_gui.core.voice.judge import available
from alltalk_gui.core.voice.judge import thresholds as t
from alltalk_gui.core.voice.judge.judge import Judge, Verdict
from alltalk_gui.core.voice.judge.length import check_length
from alltalk_gui.core.voice.judge.likeness import JudgeAudioError
from tests.audio_fixtures import speech_like

RATE = 16_000
TEXT = "one two three four five six seven eight"   # 8 words: about 3.1 s at 2.6 words a second


def spoken(seconds: float = 3.0, tail: np.ndarray | None = None) -> tuple[np.ndarray, list[Word]]:
    """Speech-like bursts for ``seconds`` (ending on a fade), eight "words" over them, then ``tail``."""
    x, _mask = speech_like(seconds, RATE, seed=3, pause_s=0.15)
    x[-int(0.3 * RATE):] = 0.0  # the last burst fades into silence, as speech does
    step = (seconds - 0.3) / 8
    words = [Word(int(i * step * 1000), int((i + 1) * step * 1000), w) for i, w in enumerate(TEXT.split())]
    if tail is not None:
        x = np.concatenate([x, tail.astype(np.float32)])
    return x, words


def test_a_clean_clip_passes():
    x, words = spoken()
    check = check_length(x, RATE, TEXT, "en", words)
    assert check.ok, check.problems
    assert check.predicted_s == pytest.approx(8 / t.WORDS_PER_S)
    assert 0.5 < check.ratio < 2.0 and check.last_word_heard is True


def test_noise_and_silence_after_the_last_word():
    noise = np.random.default_rng(0).normal(0, 0.02, 3 * RATE)
    x, words = spoken(tail=noise)
    check = check_length(x, RATE, TEXT, "en", words)
    assert check.tail_is_sound and check.tail_s == pytest.approx(3.3, abs=0.05)
    assert check.problems == ["3.3 s of noise or mumbling after the last word"]

    x, words = spoken(tail=np.zeros(int(2.5 * RATE)))
    check = check_length(x, RATE, TEXT, "en", words)
    assert not check.tail_is_sound and check.problems == ["2.8 s of silence after the last word"]
    x, words = spoken(tail=np.zeros(int(1.0 * RATE)))
    assert check_length(x, RATE, TEXT, "en", words).ok  # a second of silence is no fault


def test_too_short_too_long_and_the_last_word():
    x, words = spoken(seconds=1.2)
    assert "too short" in check_length(x, RATE, TEXT, "en", words).problems[0]
    x, words = spoken(seconds=8.0)
    assert "too long" in check_length(x, RATE, TEXT, "en", words).problems[0]

    x, words = spoken()
    assert check_length(x, RATE, TEXT, "en", words[:-1]).last_word_heard is False
    misspelt = words[:-1] + [Word(words[-1].start_ms, words[-1].end_ms, "Eights.")]
    assert check_length(x, RATE, TEXT, "en", misspelt).last_word_heard is True  # close enough to "eight"


def test_a_sound_that_stops_mid_word_is_a_cut():
    x, words = spoken()
    cut = x[:int(1.5 * RATE)]
    cut[-int(0.1 * RATE):] = 0.3 * np.sin(np.arange(int(0.1 * RATE)) * 2 * np.pi * 150 / RATE)
    check = check_length(cut, RATE, None, "en", None)  # no text, no transcript: the level rule alone
    assert check.end_level_db > t.END_LEVEL_CUT_DB
    assert check.problems == ["the sound stops abruptly, as if the last word was cut"]


def test_chinese_is_counted_in_characters():
    text = "今天天气很好我们去公园"  # 11 characters: 2.2 s at 5 a second
    x, _ = spoken(seconds=2.5)
    words = [Word(0, 2200, text)]
    check = check_length(x, RATE, text, "zh-cn", words)
    assert check.predicted_s == pytest.approx(11 / t.CHARACTERS_PER_S)
    assert check.last_word_heard is True
    assert check_length(x, RATE, text, "zh-cn", [Word(0, 2000, text[:-2])]).last_word_heard is False


def test_nothing_heard():
    x, _ = spoken()
    assert check_length(x, RATE, TEXT, "en", []).problems == ["no word was heard"]


def test_readings_follow_the_thresholds():
    assert t.likeness_reading(0.9) == "sounds like the speaker"
    assert t.likeness_reading(t.LIKENESS_CLOSE) == "close to the speaker, not quite the same voice"
    assert t.likeness_reading(0.5) == "a different voice"
    assert t.mos_reading(4.0).startswith("natural") and t.mos_reading(2.0).startswith("bad")
    assert t.error_reading(0.0, "cer") == "clear: the characters came back as written"
    assert t.error_reading(0.5).startswith("unclear")


@pytest.mark.parametrize("samples, message", [
    (np.zeros(0, np.float32), "empty"),
    (np.zeros(RATE, np.float32), "silent"),
    (np.array([0.1, np.nan] * RATE, np.float32), "not finite"),
])
def test_audio_that_cannot_be_judged_is_refused_before_any_model_loads(samples, message):
    judge = Judge("cpu")
    with pytest.raises(JudgeAudioError, match=message):
        judge.judge(samples, RATE, text="hello")
    assert judge.encoder._model is None and judge.predictor._model is None and not judge._checker_tried


def test_a_verdict_round_trips_through_json():
    x, words = spoken()
    verdict = Verdict(likeness=0.8312, mos=3.4, error_rate=0.125, measure="wer", transcript="one two",
                      length=check_length(x, RATE, TEXT, "en", words), notes=["a note"])
    data = verdict.to_dict()
    assert data["wer"] == 0.125 and data["readings"]["likeness"] == "sounds like the speaker"
    again = Verdict.from_dict(data)
    assert again.to_dict() == data


def test_character_error_rate():
    assert uses_characters("zh-cn") and uses_characters("ja") and not uses_characters("en")
    assert character_error_rate("今天天气很好。", "今天天汽很好") == pytest.approx(jiwer.cer("今天天气很好", "今天天汽很好"))
    with pytest.raises(ValueError):
        character_error_rate("。", "x")


def test_without_the_extra_the_judge_says_why(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("resemblyzer", "webrtcvad") else real(name, *a))
    assert available.missing_packages() == ["resemblyzer", "webrtcvad-wheels"]
    reason = available.unavailable_reason()
    assert "resemblyzer, webrtcvad-wheels, which are not installed" in reason and "packaging/run.sh" in reason
    monkeypatch.undo()
    assert available.unavailable_reason() is None  # this environment has the extra (the install scripts add it)
