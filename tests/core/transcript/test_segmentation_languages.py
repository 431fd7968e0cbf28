"""Clip cutting per language: Chinese and Japanese split at their own sentence ends and respect XTTS's character
limits; a too-short piece of one sentence is joined with its neighbour (automatic merging)."""

from __future__ import annotations

from alltalk_gui.core.engine_api.languages import char_limit
from alltalk_gui.core.transcript.flags import NON_SPEECH, ClipChecker, ClipFacts
from alltalk_gui.core.transcript.segmentation import ClipPlan, merge_short, plan_clips, segments_from_words
from alltalk_gui.core.transcript.segments import Word


def cjk_timeline(sentences: list[str], ms_per_char: int = 220, pause_after_sentence: int = 150) -> list[Word]:
    """Whisper-style Chinese words: two characters a word, no spaces, the sentence mark on the last word."""
    words, t = [], 300
    for sentence in sentences:
        pieces = [sentence[i:i + 2] for i in range(0, len(sentence), 2)]
        for k, piece in enumerate(pieces):
            length = ms_per_char * len(piece)
            words.append(Word(t, t + length, piece, 0.9))
            t += length + (pause_after_sentence if k == len(pieces) - 1 else 20)
    return words


def test_chinese_is_cut_at_its_own_sentence_ends_without_spaces():
    sentences = ["今天天气很好，我们去公园散步吧。", "公园里有很多人在跑步和打太极拳。", "我们走了一个小时，然后回家吃饭。",
                 "晚上我们一起看了一部很好看的电影。"]
    words = cjk_timeline(sentences)
    plans = plan_clips(words, words[-1].end_ms + 500, 2.0, 11.0, max_chars=char_limit("zh-cn"))
    texts = [p.text for p in plans]
    assert "".join(texts) == "".join(sentences)  # no space was added between Chinese words
    assert all(t.endswith("。") for t in texts), texts  # every cut is at a Chinese full stop


def test_clip_text_never_exceeds_the_languages_character_limit():
    # 40 Japanese characters a second of fast speech with no sentence ends: time allows 11 s, XTTS's ja limit 71.
    words = cjk_timeline(["あいうえおかきくけこさしすせそたちつてと" * 12], ms_per_char=60)
    plans = plan_clips(words, words[-1].end_ms + 500, 2.0, 11.0, max_chars=char_limit("ja"))
    assert len(plans) > 1
    assert all(len(p.text) <= 71 for p in plans), [len(p.text) for p in plans]


def test_a_short_piece_of_one_sentence_is_merged_across_a_short_pause():
    # The poem case from issue #12: "pity the world," (1.5 s) | 70 ms | "or else this glutton be," (2.1 s).
    first = (Word(0, 400, " pity", 0.9), Word(450, 800, " the", 0.9), Word(850, 1400, " world,", 0.9))
    second = (Word(1470, 1800, " or", 0.9), Word(1850, 2300, " else", 0.9), Word(2350, 2800, " this", 0.9),
              Word(2850, 3300, " glutton", 0.9), Word(3350, 3570, " be,", 0.9))
    plans = [ClipPlan(0, 1500, first), ClipPlan(1500, 3600, second)]
    merged = merge_short(plans, min_s=2.0, max_s=11.0)
    assert len(merged) == 1
    assert merged[0].text == "pity the world, or else this glutton be,"
    assert (merged[0].start_ms, merged[0].end_ms) == (0, 3600)


def test_no_merge_across_a_sentence_end_a_long_pause_or_past_the_maximum():
    short = (Word(0, 1200, " Stop.", 0.9),)
    nxt = (Word(1250, 4000, " Then we went home", 0.9),)
    assert len(merge_short([ClipPlan(0, 1240, short), ClipPlan(1240, 4100, nxt)], 2.0, 11.0)) == 2  # sentence end
    comma = (Word(0, 1200, " Well,", 0.9),)
    far = (Word(2000, 4000, " then we went home", 0.9),)
    assert len(merge_short([ClipPlan(0, 1300, comma), ClipPlan(1900, 4100, far)], 2.0, 11.0)) == 2  # 800 ms pause
    long = (Word(1250, 11_000, " and then a very long clause", 0.9),)
    assert len(merge_short([ClipPlan(0, 1240, comma), ClipPlan(1240, 11_100, long)], 2.0, 11.0)) == 2  # > 11 s


def test_segments_from_words_merges_and_uses_the_project_language():
    words = cjk_timeline(["我们今天，", "一起去公园散步好不好。"], pause_after_sentence=60)
    segments = segments_from_words("s1", words, words[-1].end_ms + 400, 1, ClipChecker("xtts", "zh-cn"))
    assert [s.text for s in segments] == ["我们今天，一起去公园散步好不好。"]


def test_a_chinese_clip_is_not_taken_for_music_for_lack_of_spaces():
    checker = ClipChecker("xtts", "zh-cn")
    flags = checker.flags(ClipFacts(duration_ms=4000, text="今天天气很好我们去公园散步吧"))
    assert NON_SPEECH not in [f.code for f in flags]


def test_chinese_clips_merge_without_a_space_and_split_after_punctuation(tmp_path):
    from alltalk_gui.core.transcript.segments import Segment, SegmentList
    from tests.core.transcript.test_segments_support import add_source, make_project, voice_like

    project = make_project(tmp_path, language="zh-cn")
    add_source(project, "a.wav", voice_like(8.0))
    clips = SegmentList.create(project, [Segment("c00001", "s001", 0, 3000, "今天天气很好，"),
                                         Segment("c00002", "s001", 3000, 7000, "我们去公园散步吧。")])
    clips.merge_with_next("c00001")
    assert clips["c00001"].text == "今天天气很好，我们去公园散步吧。"
    at_ms, char = clips.suggest_split("c00001")
    assert clips["c00001"].text[:char] == "今天天气很好，" and 0 < at_ms < 7000
