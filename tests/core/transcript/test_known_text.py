"""A recording's known text replaces Whisper's words clip by clip, aligned to the recognised words."""

from __future__ import annotations

from alltalk_gui.cli import main
from alltalk_gui.core.transcript.known_text import align, known_text_file, load_known_text, realign, tokens
from alltalk_gui.core.transcript.segments import Segment, SegmentList, Word
from tests.core.transcript.test_segments_support import add_source, make_project, voice_like


def clip(clip_id: str, start: int, end: int, words: list[tuple[int, str]], source_id: str = "s001") -> Segment:
    timed = tuple(Word(t, t + 300, text, 0.9) for t, text in words)
    return Segment(clip_id, source_id, start, end, "".join(w.text for w in timed).strip(), words=timed)


def test_misheard_words_are_replaced_and_cuts_stay_between_the_same_words():
    clips = [clip("c1", 0, 3000, [(100, " Pity"), (500, " the"), (900, " whirled,"), (1300, " or"), (1700, " elves")]),
             clip("c2", 3000, 6000, [(3100, " this"), (3500, " glutton"), (3900, " bee.")])]
    known = "Pity the world, or else this glutton be, to eat the world's due."
    assert align(clips, known, "en") == ["Pity the world, or else", "this glutton be, to eat the world's due."]


def test_chinese_is_aligned_by_character():
    clips = [clip("c1", 0, 3000, [(100, "今天"), (500, "天汽"), (900, "很好。")]),
             clip("c2", 3000, 6000, [(3100, "我们"), (3500, "去公园。")])]
    assert tokens("很好。我们", "zh-cn") == ["很", "好。", "我", "们"]
    assert align(clips, "今天天气很好。我们去公园散步。", "zh-cn") == ["今天天气很好。", "我们去公园散步。"]


def test_a_clip_without_words_keeps_its_text():
    clips = [clip("c1", 0, 2000, [(100, " hello"), (500, " word")]), Segment("c2", "s001", 2000, 4000, "(music)")]
    assert align(clips, "Hello world!", "en") == ["Hello world!", "(music)"]


def test_known_text_from_a_txt_beside_the_recording_and_from_the_cli(tmp_path, capsys):
    import soundfile as sf

    from alltalk_gui.core.project.importer import import_files

    project = make_project(tmp_path)
    original = tmp_path / "poem.wav"
    sf.write(original, voice_like(7.0), 22050)
    original.with_suffix(".txt").write_text("Pity the world.\n", encoding="utf-8")
    source = import_files(project, [original]).imported[0]  # the script beside it is taken at import
    assert load_known_text(project, source) == "Pity the world."
    SegmentList.create(project, [clip("c00001", 0, 3000, [(100, " Pity"), (500, " the"), (900, " whirled.")],
                                      source_id=source.id),
                                 clip("c00002", 3000, 6000, [(3100, " Or"), (3500, " else.")], source_id=source.id)])
    assert main(["known-text", str(project.root), "poem.wav", "--text", "Pity the world. Or else this glutton."]) == 0
    assert "gave it to its 2 clip(s)" in capsys.readouterr().out
    assert [c.text for c in SegmentList.open(project)] == ["Pity the world.", "Or else this glutton."]
    assert known_text_file(project, source.id).read_text().strip() == "Pity the world. Or else this glutton."
    assert main(["known-text", str(project.root), "nothing.wav", "--text", "x"]) == 2
    assert "recordings: poem.wav" in capsys.readouterr().err


def test_realign_is_one_undoable_edit_per_changed_clip(tmp_path):
    project = make_project(tmp_path)
    add_source(project, "a.wav", voice_like(7.0))
    clips = SegmentList.create(project, [clip("c00001", 0, 3000, [(100, " colour"), (500, " red.")])])
    changes = realign(clips, "s001", "Color red.", "en")
    assert len(changes) == 1 and clips["c00001"].text == "Color red."
    clips.undo(changes[0])
    assert clips["c00001"].text == "colour red."
    assert realign(clips, "s001", "colour red.", "en") == []


def test_a_recordings_only_clip_without_words_takes_the_whole_text():
    assert align([Segment("c1", "s001", 0, 2000, "old words")], "New  words here.", "en") == ["New words here."]


def test_a_blank_known_text_keeps_every_clips_words(tmp_path, capsys):
    """An empty --text (a shell variable that expanded to nothing, an empty file) forgets the known text; it
    once also gave all the recording's clips the empty text, wiping a long recording's transcript at once."""
    project = make_project(tmp_path)
    source = add_source(project, "a.wav", voice_like(7.0))
    SegmentList.create(project, [clip("c00001", 0, 3000, [(100, " Pity"), (500, " the"), (900, " world.")],
                                      source_id=source.id),
                                 clip("c00002", 3000, 6000, [(3100, " Or"), (3500, " else.")], source_id=source.id)])
    assert main(["known-text", str(project.root), "a.wav", "--text", "Pity the world. Or else."]) == 0
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    assert main(["known-text", str(project.root), "a.wav", "--file", str(empty)]) == 0
    assert "has no known text now; its clips keep their words" in capsys.readouterr().out
    assert [c.text for c in SegmentList.open(project)] == ["Pity the world.", "Or else."]
    assert not known_text_file(project, source.id).exists()
    assert realign(SegmentList.open(project), source.id, "  \n", "en") == []
