"""Clip flags: each flag is raised by the situation it names (and not by clean clips), with a useful reason."""

from __future__ import annotations

import json

import numpy as np
import pytest

from alltalk_gui.core.audio.clips import measure
from alltalk_gui.core.transcript.flags import (BLOCKING, CLIPPED, LONG, LOW_CONFIDENCE, NON_SPEECH, TOO_LONG,
                                              UNENCODABLE, ClipChecker, ClipFacts)
from alltalk_gui.core.engines.xtts.text_check import TextChecker
from alltalk_gui.core.transcript.segments import SegmentList, Word
from tests.core.transcript.test_segments_support import RATE, add_source, make_project, make_vocab, segment, voice_like


def codes(flags):
    return [f.code for f in flags]


def test_clean_clip_has_no_flags():
    facts = ClipFacts(4000, "A perfectly normal sentence.", (0.9, 0.95, 0.8, 0.9), 0.01, 0.5, 0.0, 0.05)
    assert ClipChecker("xtts", "en").flags(facts) == []


def test_an_f5_project_accepts_a_20_s_clip_that_xtts_flags(tmp_path):
    """The project's engine sets the clip limits: F5-TTS trains on clips up to 30 s, XTTS v2 up to 11.6 s. The same
    20 s clip of a project is flagged (and refused by the export) under XTTS v2 and kept under F5-TTS."""
    twenty = ClipFacts(20_000, "A long breath of a sentence that goes on and on for twenty seconds or so " * 2)
    assert TOO_LONG in codes(ClipChecker("xtts", "en").flags(twenty))
    assert not {TOO_LONG, LONG} & set(codes(ClipChecker("f5", "en").flags(twenty)))
    assert codes(ClipChecker("f5", "en", max_s=11).flags(twenty)) == [LONG]  # cut for 11 s, still trainable

    from alltalk_gui.core.dataset.export import export_dataset, refusals

    project = make_project(tmp_path)
    add_source(project, "long take.wav", voice_like(30.0))
    text = "A long breath of a sentence that goes on and on for twenty seconds or so."
    clips = [segment("c00001", "s001", 0, 20_000, text), segment("c00002", "s001", 21_000, 25_000, "A short one.")]
    project.choose_engine("f5")
    f5 = SegmentList.create(project, clips)
    assert f5["c00001"].flag_codes == () and refusals(f5) == []
    f5.close()
    report = export_dataset(project)
    assert (report.train + report.eval, report.sample_rate) == (2, 24_000)

    project.choose_engine("xtts")
    xtts = SegmentList.open(project)
    assert not xtts.is_checked_with_current_checker()  # the flags on disk were judged for F5-TTS
    xtts.recheck()
    assert xtts["c00001"].flag_codes == (TOO_LONG,) and "XTTS v2 limit of 11.6 s" in xtts["c00001"].flags[0].reason
    assert [r.clip_id for r in refusals(xtts)] == ["c00001"]
    xtts.close()


def test_length_confidence_and_non_speech_flags():
    checker = ClipChecker("xtts", "en")
    long_clip = checker.flags(ClipFacts(12000, "Twelve seconds of words " * 5))
    assert codes(long_clip) == [TOO_LONG] and "XTTS v2 limit of 11.6 s" in long_clip[0].reason
    capped = ClipChecker("xtts", "en", max_s=20).flags(ClipFacts(12000, "Twelve seconds of words " * 5))
    assert codes(capped) == [TOO_LONG]  # 20 s asked for, but XTTS v2 stops at 11.6 s
    # Longer than the maximum chosen for cutting, within the engine's limit: a warning, not a refusal.
    longer = ClipChecker("xtts", "en", max_s=8).flags(ClipFacts(9000, "Nine seconds of words said " * 3))
    assert codes(longer) == [LONG] and "8.0 s maximum chosen" in longer[0].reason
    assert "still trains on it (up to 11.6 s)" in longer[0].reason
    assert LONG not in BLOCKING and TOO_LONG in BLOCKING
    unsure = checker.flags(ClipFacts(4000, "Mumbled words here.", (0.3, 0.2, 0.4)))
    assert codes(unsure) == [LOW_CONFIDENCE] and "Whisper was unsure of these words" in unsure[0].reason
    assert codes(checker.flags(ClipFacts(5000, "♪ ♪"))) == [UNENCODABLE, NON_SPEECH]
    assert codes(checker.flags(ClipFacts(5000, "(Music)"))) == [NON_SPEECH]
    one_word = checker.flags(ClipFacts(8000, "Yeah."))
    assert codes(one_word) == [NON_SPEECH] and "Only 1 word in 8.0 s" in one_word[0].reason
    assert codes(checker.flags(ClipFacts(4000, "Some words said.", no_speech_prob=0.9))) == [NON_SPEECH]


def test_whispers_no_speech_guess_counts_only_with_unsure_words():
    """The walk's 14 of 54 clean clips flagged "probably not speech (p = 0.75)": Whisper's no-speech probability
    alone misfires on clean speech; with its words' confidence (Whisper's own rule) it does not."""
    checker = ClipChecker("xtts", "en")
    confident = ClipFacts(4000, "Taste as you go, and add salt.", (0.9, 0.85, 0.8, 0.95, 0.9, 0.7, 0.88),
                          no_speech_prob=0.75)
    assert checker.flags(confident) == []
    unsure = ClipFacts(4000, "Taste as you go.", (0.3, 0.4, 0.2, 0.45), no_speech_prob=0.75)
    flags = checker.flags(unsure)
    assert codes(flags) == [LOW_CONFIDENCE, NON_SPEECH]
    reason = flags[1].reason
    assert "may not be" not in reason and "p =" not in reason and "Looks fine" in reason  # plain words, a way out


def test_a_corrected_text_clears_the_flags_it_no_longer_explains():
    """Once a person corrected the text, Whisper's confidence and no-speech guess were about other words; the
    text-based and audio-based flags stay."""
    checker = ClipChecker("xtts", "en")
    corrected = ClipFacts(4000, "Taste as you go.", (0.3, 0.4, 0.2, 0.45), no_speech_prob=0.75, clipped_fraction=0.01,
                          text_corrected=True)
    assert codes(checker.flags(corrected)) == [CLIPPED]
    assert codes(checker.flags(ClipFacts(8000, "Yeah.", text_corrected=True))) == [NON_SPEECH]  # still 1 word in 8 s


def test_audio_measures_tell_clipping_and_noise_from_voice():
    rng = np.random.default_rng(0)
    voice = voice_like(3.0)
    noise = (0.3 * rng.standard_normal(3 * RATE)).astype(np.float32)
    clipped = np.clip(voice * 8, -1.0, 1.0)
    assert measure(voice, RATE).flatness < 0.05
    assert measure(noise, RATE).flatness > 0.4
    assert measure(voice, RATE).clipped_fraction == 0.0
    assert measure(clipped, RATE).clipped_fraction > 0.05


def test_audio_flags_come_from_the_project_audio(tmp_path):
    project = make_project(tmp_path)
    rng = np.random.default_rng(1)
    audio = np.concatenate([voice_like(5.0), np.clip(voice_like(5.0) * 8, -1, 1),
                            (0.2 * rng.standard_normal(5 * RATE)).astype(np.float32)])
    add_source(project, "mixed.wav", audio)
    clips = SegmentList.create(project, [
        segment("c00001", "s001", 0, 4000, "Clean voice here, nothing wrong at all."),
        segment("c00002", "s001", 4000, 10000, "The same voice but far too loud."),
        segment("c00003", "s001", 10000, 15000, "This part is only hiss and noise."),
    ])
    assert clips["c00001"].flags == ()
    assert codes(clips["c00002"].flags) == [CLIPPED]
    assert codes(clips["c00003"].flags) == [NON_SPEECH] and "hiss or noise" in clips["c00003"].flags[0].reason
    clips.set_bounds("c00002", end_ms=4990)  # trim the clipped part away: flag recomputed from the audio
    assert CLIPPED not in clips["c00002"].flag_codes


def test_unencodable_characters_without_a_vocab_name_the_characters():
    checker = TextChecker("en")
    assert checker.problem("Dr. Smith paid $5 for 3 apples, didn't he?") is None  # coqui spells these out
    problem = checker.problem("The word is 日本 ☺")
    assert "'☺'" in problem and "'日'" in problem and "without a base model" in problem
    assert TextChecker("ru").problem("Привет, мир") is None
    assert "'h'" in TextChecker("ru").problem("hello")
    assert "does not speak language 'xx'" in TextChecker("xx").problem("hello")


@pytest.fixture
def vocab_file(tmp_path):
    path = make_vocab(tmp_path / "vocab.json")
    assert json.loads(path.read_text())["model"]["type"] == "BPE"
    return path


def test_unencodable_with_a_vocab_is_exact(vocab_file):
    checker = TextChecker("en", vocab_file)
    assert checker.problem("The lazy dog, jumps!") is None
    problem = checker.problem("Café naïve")
    assert "'é'" in problem and "'ï'" in problem and "vocab.json" in problem
    with pytest.raises(FileNotFoundError):
        TextChecker("en", vocab_file.parent / "missing.json")


def test_segment_list_uses_the_vocab_when_given(tmp_path, vocab_file):
    project = make_project(tmp_path)
    add_source(project, "a.wav", voice_like(6.0))
    clips = SegmentList.create(project, [segment("c00001", "s001", 0, 5000, "Fine words here.")])
    clips = SegmentList.open(project, vocab_file=vocab_file)
    clips.set_text("c00001", "Fine wörds here.")
    assert UNENCODABLE in clips["c00001"].flag_codes and "'ö'" in clips["c00001"].flags[0].reason


def test_confidence_counts_only_words_inside_the_clip(tmp_path):
    project = make_project(tmp_path)
    add_source(project, "a.wav", voice_like(8.0))
    words = (Word(100, 500, "Sure", 0.95), Word(600, 900, "words", 0.95), Word(3100, 3500, "mumble", 0.05),
             Word(3600, 3900, "murmur", 0.05))
    clips = SegmentList.create(project, [segment("c00001", "s001", 0, 4000, "Sure words mumble murmur",
                                                 words=words)])
    assert LOW_CONFIDENCE not in clips["c00001"].flag_codes  # mean 0.5
    clips.set_bounds("c00001", start_ms=2900)
    assert LOW_CONFIDENCE in clips["c00001"].flag_codes


def test_clipping_is_located_in_a_turned_down_working_copy(tmp_path):
    """The importer lowers a clipped recording to -1 dBFS; the flat tops are still where the file peaks."""
    project = make_project(tmp_path)
    audio = np.concatenate([voice_like(5.0), np.clip(voice_like(5.0) * 8, -1, 1)]) * 0.891
    source = add_source(project, "loud.wav", audio)
    clips = SegmentList.create(project, [segment("c00001", "s001", 0, 5000, "Clean voice here, nothing wrong."),
                                         segment("c00002", "s001", 5000, 10000, "Far too loud, flat topped.")])
    assert CLIPPED not in clips["c00002"].flag_codes  # analysis says the original was clean: nothing to locate
    source.analysis["clipped_fraction"] = 0.02
    project.save()
    clips = SegmentList.create(project, list(clips))
    assert clips["c00001"].flags == ()
    assert codes(clips["c00002"].flags) == [CLIPPED]


def test_recheck_applies_a_vocabulary_chosen_later(tmp_path, vocab_file):
    project = make_project(tmp_path)
    add_source(project, "a.wav", voice_like(12.0))
    SegmentList.create(project, [segment("c00001", "s001", 0, 4000, "A café in town."),
                                 segment("c00002", "s001", 5000, 9000, "Plain words only.")])
    clips = SegmentList.open(project, vocab_file=vocab_file)
    assert clips["c00001"].flags == ()  # flags as saved, checked without a vocabulary
    heard = []
    clips.subscribe(heard.append)
    change = clips.recheck()
    assert [s.id for s in change.after] == ["c00001"] and UNENCODABLE in clips["c00001"].flag_codes
    assert heard == [change]
    assert UNENCODABLE in SegmentList.open(project)["c00001"].flag_codes  # saved
    assert clips.recheck().is_empty


def test_base_model_vocab_comes_from_the_app_settings(tmp_path, monkeypatch, vocab_file):
    from alltalk_gui.core import app_settings
    from alltalk_gui.core.engines.xtts.text_check import base_model_vocab

    monkeypatch.setenv("ALLTALK_GUI_CONFIG_DIR", str(tmp_path / "config"))
    assert base_model_vocab() is None
    app_settings.set_value("base_model_dir", str(vocab_file.parent))
    assert base_model_vocab() == vocab_file
    vocab_file.unlink()
    assert base_model_vocab() is None
    app_settings.settings_path().write_text("[broken", encoding="utf-8")
    assert base_model_vocab() is None


def test_music_is_told_from_speech_by_its_steadiness(tmp_path):
    """Synthetic chords under words the recogniser 'heard' vs real (espeak) speech: only the music is flagged."""
    from alltalk_gui.testing.speech import espeak_available
    from tests.core.transcript.test_segments_support import SENTENCES, spoken_sentences

    if not espeak_available():
        pytest.skip("espeak-ng is not installed")
    speech, bounds = spoken_sentences(tmp_path / "espeak", SENTENCES[:2])
    t = np.arange(6 * RATE) / RATE
    chords = sum(np.sin(2 * np.pi * f * t) for f in (220, 277, 330)) * (1 + 0.3 * np.sin(2 * np.pi * 0.5 * t))
    music = (0.1 * chords).astype(np.float32)
    project = make_project(tmp_path)
    add_source(project, "speech then music.wav", np.concatenate([speech, music]))
    music_start = int(speech.size / RATE * 1000)
    clips = SegmentList.create(project, [
        segment("c00001", "s001", int(bounds[0][0] * 1000) - 100, int(bounds[0][1] * 1000) + 100, SENTENCES[0]),
        segment("c00002", "s001", int(bounds[1][0] * 1000) - 100, int(bounds[1][1] * 1000) + 100, SENTENCES[1]),
        segment("c00003", "s001", music_start + 500, music_start + 5500, "Oh baby baby, all night long."),
    ])
    assert clips["c00001"].flags == () and clips["c00002"].flags == ()
    assert codes(clips["c00003"].flags) == [NON_SPEECH] and "steady" in clips["c00003"].flags[0].reason
