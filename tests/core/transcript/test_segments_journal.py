"""Saving through the journal: every edit is readable at once, folds into segments.json, and odd files are safe.

The kill test (test_segments_kill.py) shows that a SIGKILL keeps every reported edit; these check the pieces:
what another reader sees before the background save, the fold-in, torn and stale journal lines, and a reader
that meets a journal written across a compaction.
"""

from __future__ import annotations

import json

import pytest

from alltalk_gui.core.transcript import journal
from alltalk_gui.core.transcript.segments import SegmentList, read_file
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like


@pytest.fixture
def project(tmp_path):
    project = make_project(tmp_path)
    add_source(project, "a.wav", voice_like(30.0))
    return project


@pytest.fixture
def clips(project):
    made = SegmentList.create(project, [segment(f"c0000{k + 1}", "s001", k * 4000, k * 4000 + 3000,
                                                f"Clip number {k} says this.") for k in range(5)])
    yield made
    made.close()


def snapshot(project) -> dict:
    return json.loads(project.segments_file.read_text(encoding="utf-8"))


def test_an_edit_is_readable_before_the_background_save(project, clips):
    clips.set_text("c00002", "Edited text here.")
    clips.split("c00004", 13500, len("Clip number"))
    assert snapshot(project)["segments"][1]["text"] == "Clip number 1 says this."  # not folded in yet
    assert journal.journal_path(project.segments_file).is_file()
    again = SegmentList.open(project)
    assert again.to_dict()["segments"] == clips.to_dict()["segments"]
    assert again.next_number == clips.next_number


def test_flush_folds_the_journal_into_segments_json(project, clips):
    clips.set_text("c00002", "Edited text here.")
    clips.delete("c00003")
    assert clips.flush(timeout_s=30)
    assert not journal.journal_path(project.segments_file).exists()
    on_disk = snapshot(project)
    assert on_disk["segments"] == clips.to_dict()["segments"]
    assert on_disk["journal"]["seq"] == 2


def test_the_background_thread_folds_in_after_a_pause(project, clips, monkeypatch):
    monkeypatch.setattr(journal, "COMPACT_AFTER_IDLE_S", 0.05)
    clips.set_text("c00001", "Saved by the background thread.")
    store = clips._store
    for _ in range(200):
        if store._folded == store._seq and store._thread is None:
            break
        import time
        time.sleep(0.05)
    assert snapshot(project)["segments"][0]["text"] == "Saved by the background thread."


def test_a_torn_last_line_is_skipped_and_earlier_edits_kept(project, clips):
    clips.set_text("c00001", "First edit.")
    clips.set_text("c00005", "Second edit.")
    path = journal.journal_path(project.segments_file)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) - 25], encoding="utf-8")  # a power cut in the middle of the last line
    again = SegmentList.open(project)
    assert again["c00001"].text == "First edit."
    assert again["c00005"].text == "Clip number 4 says this."


def test_a_stale_journal_from_an_earlier_transcript_is_ignored(project, clips):
    clips.set_text("c00001", "An edit of the old transcript.")
    stale = journal.journal_path(project.segments_file).read_text(encoding="utf-8")
    fresh = SegmentList.create(project, [segment("c00001", "s001", 0, 3000, "A new transcript.")])
    assert not journal.journal_path(project.segments_file).exists()
    journal.journal_path(project.segments_file).write_text(stale, encoding="utf-8")
    assert SegmentList.open(project)["c00001"].text == "A new transcript."
    fresh.close()


def test_a_reader_across_a_compaction_reads_again(project, clips):
    data = {"segments": [], "journal": {"id": "abc", "seq": 5}}
    line = json.dumps({"id": "abc", "seq": 8, "next_number": 3, "remove": [], "put": []})
    with pytest.raises(journal.Retry):
        journal.replay(data, [line])
    clips.set_text("c00001", "Read after a retry.")
    real = journal.read_lines(project.segments_file)
    calls = iter([[line.replace('"abc"', json.dumps(snapshot(project)["journal"]["id"]))], real])
    original = journal.read_lines
    try:
        journal.read_lines = lambda _path: next(calls)  # first read meets a journal from after a compaction
        assert read_file(project.segments_file)["segments"][0]["text"] == "Read after a retry."
    finally:
        journal.read_lines = original


def test_malformed_journal_lines_never_reach_the_clips(project, clips):
    clips.set_text("c00001", "Good edit.")
    path = journal.journal_path(project.segments_file)
    head = snapshot(project)["journal"]
    bad = json.dumps({"id": head["id"], "seq": 2, "next_number": 9, "remove": "c00001", "put": [{"x": 1}]})
    path.write_text(path.read_text(encoding="utf-8") + bad + "\n", encoding="utf-8")
    again = SegmentList.open(project)
    assert again["c00001"].text == "Good edit." and len(again) == 5


def test_a_file_without_a_journal_gets_one_on_the_first_edit(project, clips):
    clips.close()
    old = snapshot(project)
    del old["journal"]
    project.segments_file.write_text(json.dumps(old), encoding="utf-8")  # as written before journals existed
    legacy = SegmentList.open(project)
    legacy.set_text("c00003", "First edit of an old file.")
    assert "journal" in snapshot(project)
    assert SegmentList.open(project)["c00003"].text == "First edit of an old file."
    legacy.close()


def test_a_closed_list_refuses_edits_and_keeps_memory_and_disk_alike(project, clips):
    clips.set_text("c00001", "Before closing.")
    clips.close()
    with pytest.raises(OSError, match="closed"):
        clips.set_text("c00001", "After closing.")
    assert clips["c00001"].text == "Before closing."
    assert SegmentList.open(project)["c00001"].text == "Before closing."


def test_a_journal_that_cannot_be_written_undoes_the_edit_in_memory(project, clips, monkeypatch):
    clips.set_text("c00001", "Saved.")
    store = clips._store

    def full_disk(_line):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "_write_line_locked", full_disk)
    with pytest.raises(OSError, match="No space"):
        clips.merge_with_next("c00001")
    assert clips.ids() == ["c00001", "c00002", "c00003", "c00004", "c00005"]
    assert clips["c00001"].text == "Saved."


def test_save_writes_what_the_list_holds_now(project, clips):
    clips.set_text("c00001", "Journalled first.")
    clips.segments[1] = clips.segments[1].__class__(**{**clips.segments[1].__dict__, "text": "Set directly."})
    clips.save()
    assert not journal.journal_path(project.segments_file).exists()
    on_disk = snapshot(project)
    assert [c["text"] for c in on_disk["segments"][:2]] == ["Journalled first.", "Set directly."]
    clips.set_text("c00003", "And journalled after the save.")
    assert SegmentList.open(project)["c00003"].text == "And journalled after the save."
    assert SegmentList.open(project)["c00002"].text == "Set directly."
