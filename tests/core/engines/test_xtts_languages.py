"""XTTS's 17 languages: one list matching coqui's, Whisper codes both ways, per-language text checks, and one
clear sentence (never a traceback) when a language's text packages are missing."""

from __future__ import annotations

import sys

import pytest

from alltalk_gui.cli import main
from alltalk_gui.core.engine_api import languages
from alltalk_gui.core.engines.xtts.sample_sentences import SAMPLE_SENTENCES
from alltalk_gui.core.engines.xtts.text_check import TextChecker
from alltalk_gui.core.project.folder import ProjectError, VoiceProject
from alltalk_gui.core.transcription.languages import detected_note, from_whisper, to_whisper, whisper_option


def test_the_list_is_coquis_with_its_character_limits():
    from TTS.tts.configs.xtts_config import XttsConfig
    from TTS.tts.layers.xtts.tokenizer import VoiceBpeTokenizer

    assert list(languages.CODES) == XttsConfig().languages
    limits = VoiceBpeTokenizer(None).char_limits
    assert {lang.tokenizer_code: lang.char_limit for lang in languages.LANGUAGES} == limits
    assert set(SAMPLE_SENTENCES) == set(languages.CODES)


def test_codes_are_normalised_and_unknown_ones_list_the_seventeen():
    assert languages.normalise("ZH") == "zh-cn" and languages.normalise("zh_CN") == "zh-cn"
    assert languages.normalise(" De ") == "de"
    with pytest.raises(languages.UnknownLanguage, match="en, es, fr, de.*ja, hi"):
        languages.normalise("klingon")
    assert not languages.is_spaced("zh-cn") and not languages.is_spaced("ja") and languages.is_spaced("ko")
    assert languages.word_count("今天天气很好。", "zh-cn") == 6 and languages.word_count("a b c.", "en") == 3


def test_projects_take_only_xtts_languages(tmp_path, capsys):
    assert VoiceProject.create(tmp_path / "a", language="zh").language == "zh-cn"
    with pytest.raises(ProjectError, match="not one of the app's languages"):
        VoiceProject.create(tmp_path / "b", language="eo")
    assert main(["new", str(tmp_path / "c"), "--language", "sv"]) == 2
    assert "zh-cn" in capsys.readouterr().err and not (tmp_path / "c" / "project.json").exists()
    assert main(["new", str(tmp_path / "d"), "--language", "ja"]) == 0
    assert VoiceProject.open(tmp_path / "d").language == "ja"


def test_whisper_codes_map_both_ways():
    assert to_whisper("zh-cn") == "zh" and to_whisper("auto") is None and to_whisper("de") == "de"
    assert from_whisper("zh") == "zh-cn" and from_whisper("sv") == "sv"
    assert whisper_option("zh-cn") == "zh" and whisper_option("AUTO") == "auto" and whisper_option("sv") == "sv"
    assert detected_note("zh-cn", {"a.wav": "zh", "b.wav": "zh"}) is None
    note = detected_note("de", {"a.wav": "de", "b.wav": "en"})
    assert "b.wav sounds like English (en)" in note and "German (de)" in note and "a.wav" not in note


@pytest.mark.parametrize("code", languages.CODES)
def test_every_sample_passes_the_languages_own_check(code):
    checker = TextChecker(code)
    for sentence in SAMPLE_SENTENCES[code]:
        assert checker.problem(sentence) is None, (code, sentence, checker.cleaned(sentence))


def test_the_tiny_models_written_out_japanese_is_what_xtts_cleaning_gives():
    """The tiny model's vocabulary learns from the Japanese samples' romaji written out (so building it needs no
    MeCab dictionary); it must stay what coqui's cleaning makes of them."""
    from alltalk_gui.core.engines.xtts.tiny_model import CLEANED_JAPANESE_SAMPLES

    checker = TextChecker("ja")
    assert tuple(checker.cleaned(s) for s in SAMPLE_SENTENCES["ja"]) == CLEANED_JAPANESE_SAMPLES


def test_the_tiny_model_builds_without_the_japanese_dictionary(tmp_path, monkeypatch):
    """As on the GPU machine, which carries no unidic-lite: cutlet cannot start, the tiny vocabulary still trains."""
    import cutlet

    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_vocab

    def no_dictionary(*args, **kwargs):
        raise RuntimeError("Failed initializing MeCab")

    monkeypatch.setattr(cutlet, "Cutlet", no_dictionary)
    build_tiny_vocab(tmp_path / "vocab.json")
    assert (tmp_path / "vocab.json").stat().st_size > 1000


def test_text_longer_than_the_character_limit_is_flagged():
    problem = TextChecker("ja").problem("今日はいい天気ですね。" * 8)
    assert "88 characters" in problem and "at most 71" in problem and "Japanese" in problem
    assert TextChecker("en").problem("word " * 40) is None


def test_a_missing_chinese_package_is_one_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "pypinyin", None)  # as if it were not installed
    assert languages.missing_packages("zh-cn") == ["pypinyin"]
    problem = TextChecker("zh-cn").problem("今天天气很好。")
    assert problem == languages.missing_sentence("zh-cn")
    assert problem.startswith("Chinese text needs the Python package pypinyin") and "pip install pypinyin" in problem
    assert languages.missing_sentence("de") is None


def test_training_and_preview_say_which_package_is_missing(monkeypatch, tmp_path):
    from alltalk_gui.core.engines.xtts.files import load_tokenizer
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_vocab
    from alltalk_gui.core.engine_api.engine import EngineError
    from alltalk_gui.core.engines.xtts.data import load_clips
    from alltalk_gui.core.engines.xtts.engine import _check_text
    from alltalk_gui.core.training.data import DatasetError
    from alltalk_gui.testing.speech import espeak_available, synthesize

    build_tiny_vocab(tmp_path / "vocab.json")
    tokenizer = load_tokenizer(tmp_path)
    monkeypatch.setitem(sys.modules, "cutlet", None)
    with pytest.raises(EngineError, match="^Japanese text needs the Python package cutlet"):
        _check_text(tokenizer, "今日はいい天気ですね。", "ja")
    if not espeak_available():
        return
    (tmp_path / "wavs").mkdir()
    synthesize("konnichiwa", tmp_path / "wavs" / "a.wav", voice="ja")
    (tmp_path / "metadata_train.csv").write_text("audio_file|text|speaker_name\nwavs/a.wav|今日は。|me\n",
                                                 encoding="utf-8")
    with pytest.raises(DatasetError, match="^Japanese text needs the Python package cutlet"):
        load_clips(tmp_path, "metadata_train.csv", tokenizer, "ja", max_audio_seconds=11.6, min_audio_seconds=0.1,
                   max_text_tokens=400)


@pytest.mark.parametrize("code", languages.CODES)
def test_every_language_ships_preview_sentences_xtts_can_read(code):
    from alltalk_gui.core.voice.preview import default_sentences

    sentences = default_sentences(code)
    checker = TextChecker(code)
    assert len(sentences) >= 4 and all(checker.problem(s) is None for s in sentences)


def test_long_text_is_split_at_sentence_ends_within_the_limit():
    from alltalk_gui.core.engine_api.languages import split_text

    japanese = "今日はいい天気ですね。公園に行きましょう。" * 6  # 126 characters, the ja limit is 71
    pieces = split_text(japanese, "ja")
    assert "".join(pieces) == japanese and all(len(p) <= 71 and p.endswith("。") for p in pieces)
    english = "This is a long sentence without any end at all " * 8
    pieces = split_text(english, "en", 60)
    assert " ".join(pieces) == " ".join(english.split()) and all(len(p) <= 60 for p in pieces)
    assert split_text("字" * 100, "zh-cn") == ["字" * 82, "字" * 18]
    assert split_text("Short.", "en") == ["Short."]
