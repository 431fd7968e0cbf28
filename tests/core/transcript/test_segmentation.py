"""Cutting word timelines into clips: length bounds, no word cut, preferred cut points, padding."""

from __future__ import annotations

import pytest

from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.transcript.flags import NON_SPEECH, TOO_LONG, ClipChecker
from alltalk_gui.core.transcript.segmentation import join_words, plan_clips, segments_from_words
from alltalk_gui.core.transcript.segments import SegmentList, Word

MIN_MS, MAX_MS = 2000, 11000
XTTS = ClipChecker("xtts", "en")  # the range XTTS v2's projects cut to: 2-11 s
F5 = ClipChecker("f5", "en")


def timeline(spec: list[tuple[str, int, int]]) -> list[Word]:
    """(text, word duration ms, pause after ms) -> words with Whisper-style leading spaces."""
    words, t = [], 500
    for text, length, pause in spec:
        words.append(Word(t, t + length, " " + text, 0.9))
        t += length + pause
    return words


def assert_well_formed(plans, words, duration_ms, allow_short=0):
    """Every word in exactly one clip, whole; clips in order, not overlapping, inside the file."""
    assert [w for p in plans for w in p.words] == words
    for plan in plans:
        assert plan.start_ms <= plan.words[0].start_ms and plan.words[-1].end_ms <= plan.end_ms
        assert 0 <= plan.start_ms and plan.end_ms <= duration_ms
    for before, after in zip(plans, plans[1:]):
        assert before.end_ms <= after.start_ms  # padding never reaches into the neighbour
    lengths = [p.duration_ms for p in plans]
    assert max(lengths) <= MAX_MS
    assert sum(1 for x in lengths if x < MIN_MS) <= allow_short


def test_sentences_become_clips_cut_at_their_ends():
    sentence = [("Every", 250, 60), ("sentence", 400, 60), ("here", 250, 60), ("has", 200, 60), ("about", 300, 60),
                ("three", 300, 60), ("seconds", 400, 60), ("of", 100, 60), ("words.", 400, 700)]
    words = timeline(sentence * 6)
    plans = plan_clips(words, words[-1].end_ms + 1000, 2.0, 11.0)
    assert_well_formed(plans, words, words[-1].end_ms + 1000)
    assert [p.text for p in plans] == ["Every sentence here has about three seconds of words."] * 6
    for plan in plans:  # 150 ms padding each side: the pause between sentences is 700 ms
        assert plan.words[0].start_ms - plan.start_ms == 150 and plan.end_ms - plan.words[-1].end_ms == 150


def test_long_run_on_sentence_is_split_at_its_longest_pause():
    spec = [(f"word{i}", 300, 80) for i in range(40)]
    spec[17] = ("word17", 300, 600)  # the one clear breath in a 15 s sentence
    spec[-1] = ("end.", 300, 0)
    words = timeline(spec)
    plans = plan_clips(words, words[-1].end_ms + 500, 2.0, 11.0)
    assert_well_formed(plans, words, words[-1].end_ms + 500)
    assert len(plans) == 2
    assert plans[0].words[-1].text == " word17"
    assert plans[0].text.endswith("word17") and plans[1].text.startswith("word18")


def test_very_long_sentence_needs_several_cuts_and_each_clip_fits():
    words = timeline([(f"w{i}", 280, 90 + (i * 37) % 200) for i in range(120)])  # ~45 s, no punctuation
    plans = plan_clips(words, words[-1].end_ms + 500, 2.0, 11.0)
    assert_well_formed(plans, words, words[-1].end_ms + 500)
    assert len(plans) >= 5


def test_many_short_phrases_are_joined_into_usable_clips():
    words = timeline([("Yes.", 350, 500), ("No.", 300, 500), ("Okay.", 400, 500), ("Right.", 350, 500)] * 8)
    plans = plan_clips(words, words[-1].end_ms + 500, 2.0, 11.0)
    assert_well_formed(plans, words, words[-1].end_ms + 500)
    assert all(len(p.words) >= 2 for p in plans)
    assert all(p.text.endswith(".") for p in plans)  # still cut at sentence ends


def test_a_long_silence_is_never_inside_a_clip():
    words = timeline([("Before", 400, 80), ("the", 150, 80), ("long", 300, 80), ("quiet", 400, 80),
                      ("pause.", 500, 9000), ("After", 400, 80), ("it", 150, 80), ("more", 300, 80),
                      ("words", 400, 80), ("come.", 500, 0)])
    plans = plan_clips(words, words[-1].end_ms + 500, 2.0, 11.0)
    assert_well_formed(plans, words, words[-1].end_ms + 500)
    assert [p.text for p in plans] == ["Before the long quiet pause.", "After it more words come."]
    assert plans[1].start_ms - plans[0].end_ms > 8000


def test_music_with_a_hallucinated_long_word_stays_whole_and_is_flagged():
    """Whisper over music: a few sparse, unsure 'words', one of them 14 s long. Never cut inside it."""
    words = timeline([("Real", 300, 80), ("speech", 400, 80), ("comes", 300, 80), ("first", 400, 80),
                      ("here.", 500, 400)])
    t = words[-1].end_ms + 400
    music = [Word(t, t + 14000, " ♪", 0.1), Word(t + 14500, t + 15000, " la", 0.2),
             Word(t + 17800, t + 18100, " la", 0.2)]
    words += music
    duration = t + 19000
    plans = plan_clips(words, duration, 2.0, 11.0)
    assert [w for p in plans for w in p.words] == words
    long_clip = next(p for p in plans if music[0] in p.words)
    assert long_clip.words == (music[0],)  # a too-long word is a clip of its own, never cut
    assert all(p.duration_ms <= MAX_MS for p in plans if p is not long_clip)

    segments = segments_from_words("s001", words, duration, 1, XTTS)
    clips = SegmentList(segments, checker=XTTS)
    clips._refresh(set(clips.ids()), {})
    flagged = {s.text: s.flag_codes for s in clips}
    assert TOO_LONG in flagged["♪"] and NON_SPEECH in flagged["♪"]
    assert flagged["Real speech comes first here."] == ()


def test_padding_stops_halfway_to_a_close_neighbour_and_at_the_file_edges():
    words = [Word(40, 900, " Start", 0.9), Word(960, 1900, " close.", 0.9), Word(4000, 6100, " Next", 0.9),
             Word(6120, 7980, " sentence.", 0.9)]
    plans = plan_clips(words, 8000, 1.0, 11.0)
    assert [(p.start_ms, p.end_ms) for p in plans] == [(0, 2050), (3850, 8000)]


def test_the_length_range_is_the_project_engines():
    """The same 24 s of speech without a clear pause: XTTS v2 cuts it under its 11.6 s limit even when 30 s are
    asked for, F5-TTS keeps it whole (its clips may be 30 s); the clips of each fit their engine."""
    words = timeline([(f"w{i}", 300, 100) for i in range(59)] + [("end.", 300, 0)])
    duration = words[-1].end_ms + 500
    for checker, longest in ((ClipChecker("xtts", "en", max_s=30), get_engine("xtts").max_clip_ms), (F5, 30_000)):
        segments = segments_from_words("s001", words, duration, 1, checker)
        assert max(s.duration_ms for s in segments) <= longest
        clips = SegmentList(segments, checker=checker)
        clips._refresh(set(clips.ids()), {})
        assert not any(TOO_LONG in s.flag_codes for s in clips)
    assert len(segments_from_words("s001", words, duration, 1, XTTS)) >= 3
    assert len(segments_from_words("s001", words, duration, 1, F5)) == 1


def test_segments_get_numbered_ids_and_window_confidence():
    words = timeline([("Hello", 400, 80), ("there", 400, 80), ("my", 200, 80), ("friend.", 500, 600),
                      ("How", 300, 80), ("are", 200, 80), ("you", 300, 80), ("today?", 500, 0)])
    windows = [(0, 3000, 0.02), (3000, 9000, 0.3)]
    segments = segments_from_words("s007", words, 8000, 41, ClipChecker("xtts", "en", min_s=1.0), windows)
    assert [s.id for s in segments] == ["c00041", "c00042"]
    assert [s.text for s in segments] == ["Hello there my friend.", "How are you today?"]
    assert segments[0].no_speech_prob == 0.02 and segments[1].no_speech_prob == 0.02  # overlaps both windows
    assert all(s.source_id == "s007" for s in segments)


def test_languages_without_spaces_join_words_as_given():
    assert join_words([Word(0, 1, "你好", 1.0), Word(1, 2, "世界。", 1.0)]) == "你好世界。"
    assert join_words([Word(0, 1, " Hello", 1.0), Word(1, 2, " world.", 1.0)]) == "Hello world."


def test_bad_arguments_and_empty_input():
    assert plan_clips([], 5000, 2.0, 11.0) == []
    with pytest.raises(ValueError, match="minimum must be above 0"):
        plan_clips(timeline([("a", 100, 0)]), 1000, 5, 4)


def test_edges_snap_to_the_sound_when_word_times_are_off():
    """Whisper put the first word 400 ms early and the last one 300 ms short; the audio says otherwise."""
    import numpy as np

    from alltalk_gui.core.transcript.segmentation import refine_edges

    rate = 22050
    t = np.arange(int(8.0 * rate)) / rate
    audio = np.where(((t >= 1.0) & (t < 3.0)) | ((t >= 4.0) & (t < 6.5)), 0.3 * np.sin(2 * np.pi * 220 * t), 0.0)
    audio = (audio + 0.001 * np.random.default_rng(0).standard_normal(t.size)).astype(np.float32)
    words = [Word(600, 1500, " First", 0.9), Word(1500, 2700, " sentence.", 0.9),
             Word(4000, 5000, " Second", 0.9), Word(5000, 6500, " one.", 0.9)]
    plans = plan_clips(words, 8000, 1.0, 11.0)
    refined = refine_edges(plans, audio, rate, 11_000)
    expected = [(850, 3150), (3850, 6650)]  # sound edges +- 150 ms padding, to within one 10 ms frame
    for plan, (start, end) in zip(refined, expected):
        assert abs(plan.start_ms - start) <= 10 and abs(plan.end_ms - end) <= 10
    assert [p.words for p in refined] == [p.words for p in plans]
    # silence everywhere: nothing to snap to, the plan is kept
    assert refine_edges(plans, np.zeros_like(audio), rate, 11_000) == plans
