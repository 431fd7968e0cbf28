"""SegmentList: every edit, its undo, persistence after each edit, and bad input that must change nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from alltalk_gui.core.transcript.flags import DUPLICATE_TEXT, EMPTY_TEXT, TOO_SHORT, ClipChecker
from alltalk_gui.core.transcript.segments import SegmentEditError, SegmentList, SegmentsError
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like


@pytest.fixture
def project(tmp_path):
    project = make_project(tmp_path)
    add_source(project, "first take.wav", voice_like(30.0))
    add_source(project, "second.flac", voice_like(20.0, seed=1))
    return project


@pytest.fixture
def clips(project):
    segments = [
        segment("c00001", "s001", 0, 4000, "The quick brown fox jumps over it."),
        segment("c00002", "s001", 4000, 8000, "A second sentence follows here."),
        segment("c00003", "s001", 9000, 13000, "Third one is spoken slowly now."),
        segment("c00004", "s002", 1000, 5000, "Another file starts with this."),
    ]
    return SegmentList.create(project, segments, meta={"backend": "test"})


def on_disk(project) -> dict:
    return json.loads(project.segments_file.read_text(encoding="utf-8"))


def reopened(project) -> list[dict]:
    return SegmentList.open(project).to_dict()["segments"]


def test_create_saves_sorted_and_flagged(project, clips):
    assert clips.ids() == ["c00001", "c00002", "c00003", "c00004"]
    assert on_disk(project)["segments"] == clips.to_dict()["segments"]
    assert all(s.audio is not None for s in clips)  # measured from the working copies
    assert clips.source_name("s002") == "second.flac"


def test_split_then_undo_and_redo(project, clips):
    before = clips.to_dict()["segments"]
    change = clips.split("c00001", 1200, len("The quick brown"))
    first, second = clips["c00001"], clips[change.after[1].id]
    assert (first.start_ms, first.end_ms, first.text) == (0, 1200, "The quick brown")
    assert (second.start_ms, second.end_ms, second.text) == (1200, 4000, "fox jumps over it.")
    assert [w.text for w in first.words] == ["The", "quick", "brown"]
    assert [w.text for w in second.words] == ["fox", "jumps", "over", "it."]
    assert TOO_SHORT in first.flag_codes  # flags recomputed after the edit
    assert reopened(project) == clips.to_dict()["segments"]  # saved at once

    clips.undo(change)
    assert clips.to_dict()["segments"] == before
    assert reopened(project) == before
    clips.redo(change)
    assert clips["c00001"].text == "The quick brown" and change.after[1].id in clips.ids()


def test_merge_is_the_inverse_of_split(clips):
    original = clips["c00002"]
    change = clips.split("c00002", 6000, len("A second sentence"))
    clips.merge_with_next("c00002")
    merged = clips["c00002"]
    assert (merged.start_ms, merged.end_ms, merged.text) == (original.start_ms, original.end_ms, original.text)
    assert merged.words == original.words
    assert change.after[1].id not in clips.ids()


def test_merge_with_next_and_undo(project, clips):
    before = clips.to_dict()["segments"]
    change = clips.merge_with_next("c00002")
    merged = clips["c00002"]
    assert (merged.start_ms, merged.end_ms) == (4000, 13000)
    assert merged.text == "A second sentence follows here. Third one is spoken slowly now."
    assert "c00003" not in clips.ids()
    clips.undo(change)
    assert clips.to_dict()["segments"] == before == reopened(project)


def test_merge_refuses_across_sources_and_deleted_neighbours(project, clips):
    saved = project.segments_file.read_bytes()
    with pytest.raises(SegmentEditError, match="last of 'first take.wav'"):
        clips.merge_with_next("c00003")
    clips.delete("c00003")
    saved = project.segments_file.read_bytes()
    with pytest.raises(SegmentEditError, match="deleted"):
        clips.merge_with_next("c00002")
    assert project.segments_file.read_bytes() == saved


def test_trim_move_and_their_limits(project, clips):
    change = clips.set_bounds("c00003", start_ms=9200, end_ms=12500)
    assert (clips["c00003"].start_ms, clips["c00003"].end_ms) == (9200, 12500)
    clips.undo(change)
    assert (clips["c00003"].start_ms, clips["c00003"].end_ms) == (9000, 13000)
    clips.move("c00003", 500)
    assert (clips["c00003"].start_ms, clips["c00003"].end_ms) == (9500, 13500)

    saved = project.segments_file.read_bytes()
    with pytest.raises(SegmentEditError, match="overlap clip c00002"):
        clips.set_bounds("c00003", start_ms=7000)
    with pytest.raises(SegmentEditError, match="only 30.00 s long"):
        clips.set_bounds("c00003", end_ms=31000)
    with pytest.raises(SegmentEditError, match="before the end"):
        clips.set_bounds("c00003", start_ms=14000)
    with pytest.raises(SegmentEditError, match="inside it"):
        clips.split("c00003", 20000, 3)
    with pytest.raises(SegmentEditError, match="no clip c09999"):
        clips.delete("c09999")
    assert project.segments_file.read_bytes() == saved  # refused edits write nothing


def test_delete_restore_and_filters(project, clips):
    change = clips.delete("c00002")
    assert clips["c00002"].deleted
    assert [s.id for s in clips.view("deleted")] == ["c00002"]
    assert "c00002" not in [s.id for s in clips.view("kept")]
    assert len(clips.view("all")) == 4
    assert SegmentList.open(project)["c00002"].deleted  # survives a restart: recoverable
    clips.undo(change)
    assert not clips["c00002"].deleted

    clips.delete("c00002")
    clips.set_bounds("c00001", end_ms=5000)  # now covers part of the deleted clip's audio
    with pytest.raises(SegmentEditError, match="c00001 now covers"):
        clips.restore("c00002")
    clips.set_bounds("c00001", end_ms=4000)
    clips.restore("c00002")
    assert not clips["c00002"].deleted


def test_find_and_replace_across_the_project(project, clips):
    assert clips.find("the") == ["c00001", "c00004"]  # "The", "Another": case-insensitive, inside words
    assert clips.find("the", whole_word=True) == ["c00001"]
    before = clips.to_dict()["segments"]
    change = clips.replace_all("s", "z", case_sensitive=True)
    assert clips["c00002"].text == "A zecond zentence followz here."
    assert len(change.before) == 4
    clips.undo(change)
    assert clips.to_dict()["segments"] == before == reopened(project)
    assert clips.replace_all("no such words", "x").is_empty


def test_text_edit_recomputes_duplicate_and_empty_flags(clips):
    clips.set_text("c00004", "  a second   sentence, follows here! ")
    assert clips["c00004"].text == "a second sentence, follows here!"
    assert DUPLICATE_TEXT in clips["c00004"].flag_codes
    assert "c00002" in clips["c00004"].flags[-1].reason
    clips.set_text("c00004", "Something new.")
    assert DUPLICATE_TEXT not in clips["c00004"].flag_codes
    clips.set_text("c00001", "")
    assert EMPTY_TEXT in clips["c00001"].flag_codes


def test_view_sorting_and_summary(clips):
    clips.set_text("c00003", "")
    assert clips.view("flagged")[0].id == "c00003"
    assert [s.id for s in clips.view(sort_by="duration", descending=True)][0] in {"c00001", "c00002", "c00003",
                                                                                  "c00004"}
    assert [s.text for s in clips.view(sort_by="text")][0] == ""
    summary = clips.summary()
    assert (summary.clips, summary.kept, summary.deleted, summary.flagged) == (4, 4, 0, 1)
    assert summary.blocked == 1
    assert summary.kept_duration_s == pytest.approx(16.0)
    assert summary.guidance.level == "short"
    with pytest.raises(ValueError, match="Unknown filter"):
        clips.view("bogus")


def test_suggest_split_uses_the_longest_pause(project):
    from alltalk_gui.core.transcript.segments import Word

    words = (Word(100, 400, "One", 0.9), Word(450, 800, "two", 0.9), Word(1600, 1900, "three", 0.9),
             Word(1950, 2300, "four.", 0.9))
    clips = SegmentList.create(project, [segment("c00001", "s001", 0, 2500, "One two three four.", words=words)])
    at_ms, char = clips.suggest_split("c00001")
    assert at_ms == 1200 and "One two three four."[:char] == "One two"
    clips.set_text("c00001", "Completely different words now")  # words no longer match: middle fallback
    at_ms, char = clips.suggest_split("c00001")
    assert at_ms == 1250 and char in (10, 20)


def test_subscribers_hear_each_change(clips):
    heard = []
    unsubscribe = clips.subscribe(heard.append)
    clips.delete("c00001")
    clips.set_text("c00002", "Changed.")
    unsubscribe()
    clips.restore("c00001")
    assert [c.description for c in heard] == ["delete c00001", "edit text of c00002"]


def test_reopen_keeps_everything(project, clips):
    clips.split("c00003", 11000, 9)
    clips.delete("c00004")
    again = SegmentList.open(project)
    assert again.to_dict() == clips.to_dict()
    again.split("c00001", 2000, 3)  # new ids never collide with ones made before the restart
    assert len(set(again.ids())) == 6


def test_corrupt_segments_file_is_refused_and_kept(project, clips):
    cases = {
        "{ not json": "not valid JSON",
        '{"segments": 3}': "'segments' list",
        '{"schema_version": 99, "segments": []}': "newer AllTalk GUI",
        '{"segments": [{"id": "c1", "source_id": "s001", "start_ms": 5, "end_ms": 1, "text": "x"}]}':
            "impossible span",
        '{"segments": [{"id": "c1"}]}': "clip number 1 is malformed",
    }
    for text, message in cases.items():
        project.segments_file.write_text(text, encoding="utf-8")
        with pytest.raises(SegmentsError, match=message):
            SegmentList.open(project)
        assert project.segments_file.read_text(encoding="utf-8") == text


def test_vanished_audio_still_allows_text_edits(project, clips):
    project.path(project.source("s001").audio_file).unlink()
    fresh = SegmentList.open(project)
    fresh.split("c00002", 6000, 8)
    assert fresh["c00002"].audio is None  # cannot be measured any more: no audio flags rather than stale ones
    fresh.set_text("c00001", "Still editable.")
    assert SegmentList.open(project)["c00001"].text == "Still editable."


def test_open_without_transcript_is_empty(tmp_path):
    project = make_project(tmp_path)
    clips = SegmentList.open(project)
    assert len(clips) == 0 and not project.segments_file.exists()
    assert clips.summary().guidance.level == "empty"


def test_checker_rejects_an_impossible_length_range():
    with pytest.raises(ValueError, match="minimum must be above 0"):
        ClipChecker("xtts", "en", min_s=5, max_s=3)


def test_max_length_is_capped_at_the_engines_limit_and_the_wish_is_kept():
    xtts = ClipChecker("xtts", "en", max_s=30)
    assert (xtts.max_ms, xtts.max_s) == (11609, 30.0)  # 30 s asked for, 11.6 s allowed by XTTS v2
    assert np.floor(11.609 * 22050) <= 255_995
    assert ClipChecker("f5", "en", max_s=30).max_ms == 30_000
    assert (ClipChecker("xtts", "en").max_s, ClipChecker("f5", "en").max_s) == (11.0, 30.0)  # the engines' ranges
    with pytest.raises(ValueError, match="XTTS v2, which takes clips up to 11.609 s"):
        ClipChecker("xtts", "en", min_s=12, max_s=30)


def test_warm_up_loads_the_text_check_in_another_thread(project, clips):
    import threading

    fresh = SegmentList.open(project)
    thread = threading.Thread(target=fresh.warm_up)
    thread.start()
    thread.join(60)
    assert fresh.checker.text_checker._coqui is not None
    fresh.set_text("c00001", "Quick now.")
    assert fresh["c00001"].text == "Quick now."


def test_importing_the_transcript_modules_stays_light():
    """The GUI imports these at start-up: no torch, whisper, faster_whisper or coqui until they are used."""
    import subprocess
    import sys

    code = ("import sys, alltalk_gui.core.transcript.segments, alltalk_gui.core.transcript.segmentation, alltalk_gui.core.transcription.transcribe, "
            "alltalk_gui.core.transcription.model_files, alltalk_gui.core.dataset.export, alltalk_gui.cli.transcribe_cmds; "
            "print(sorted(m for m in ('torch', 'whisper', 'faster_whisper', 'ctranslate2', 'TTS', 'PySide6') "
            "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert result.stdout.strip() == "[]"


def test_a_re_transcription_is_one_undoable_edit_with_its_words_and_lowest_no_speech(clips):
    from alltalk_gui.core.transcript.segments import Word

    first = clips.segments[0]
    words = [Word(first.start_ms, first.start_ms + 300, " Brand", 0.9),
             Word(first.start_ms + 300, first.end_ms, " new.", 0.8)]
    change = clips.set_recognition(first.id, words, [(0, 500, 0.4), (500, 900, 0.1)])
    now = clips[first.id]
    assert now.text == "Brand new." and now.words == tuple(words) and now.no_speech_prob == 0.1
    assert change.before == (first,) and change.after == (now,)
    clips.undo(change)
    assert clips[first.id].text == first.text and clips[first.id].words == first.words
