"""Bring your own transcript: LJSpeech, coqui and AllTalk dataset folders become clips with their text; bad rows
are refused one by one and the rest imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from alltalk_gui.core.dataset.byo_import import DatasetImportError, find_dataset, import_dataset
from alltalk_gui.core.dataset.metadata import EVAL_CSV, TRAIN_CSV
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentList
from alltalk_gui.testing.speech import espeak_available, synthesize

pytestmark = pytest.mark.skipif(not espeak_available(), reason="needs espeak-ng")

GERMAN = ["Heute ist das Wetter schön.", "Wir sind zum alten Hafen gegangen.", "Danke, bis morgen, Grüße!"]


def speak(folder: Path, names: list[str], texts: list[str]) -> None:
    (folder / "wavs").mkdir(parents=True, exist_ok=True)
    for name, text in zip(names, texts):
        synthesize(text, folder / "wavs" / f"{name}.wav", voice="de")


def test_ljspeech_folder_with_bad_rows(tmp_path):
    data = tmp_path / "lj"
    speak(data, ["a1", "a2", "a3", "a4"], GERMAN + ["Noch ein Satz."])
    (data / "metadata.csv").write_text(
        "a1|Heute ist das Wetter schön.|Heute ist das Wetter schön.\n"
        "a2|Wir sind zum alten Hafen gegangen.\n"           # two columns: the text is used
        "missing|Diese Datei fehlt.|Diese Datei fehlt.\n"    # no wav
        "a3||\n"                                             # empty text
        "a4|Ein λόγος hier.|Ein λόγος hier.\n"               # Greek letters in a German project
        "just one cell\n", encoding="utf-8")
    project = VoiceProject.create(tmp_path / "p", language="de")
    report = import_dataset(project, data)
    assert report.layout == "ljspeech" and len(report.imported) == 2
    assert len(report.problems) == 4, report.problems
    joined = "\n".join(report.problems)
    for expected in ("line 3: the audio file missing.wav does not exist", "line 4: the text is empty",
                     "line 5: XTTS cannot encode", "line 6: expected 'id|text'"):
        assert expected in joined
    clips = SegmentList.open(project)
    assert [c.text for c in clips] == GERMAN[:2]
    source = project.source(clips.segments[0].source_id)
    assert clips.segments[0].start_ms == 0 and abs(clips.segments[0].end_ms - source.duration_s * 1000) <= 1
    assert not any(c.blocking_flags for c in clips)


def test_coqui_folder_and_a_second_import_adds_clips(tmp_path):
    data = tmp_path / "coqui"
    speak(data, ["c1", "c2", "c3"], GERMAN)
    (data / TRAIN_CSV).write_text("audio_file|text|speaker_name\nwavs/c1.wav|Heute ist das Wetter schön.|x\n"
                                  "wavs/c2.wav|Wir sind zum alten Hafen gegangen.|x\n", encoding="utf-8")
    (data / EVAL_CSV).write_text("audio_file|text|speaker_name\nwavs/c3.wav|Danke, bis morgen, Grüße!|x\n",
                                 encoding="utf-8")
    project = VoiceProject.create(tmp_path / "p", language="de")
    first = import_dataset(project, data)
    assert first.layout == "coqui" and first.problems == [] and len(first.imported) == 3
    again = import_dataset(project, data)  # the same files again: refused as duplicates, one by one
    assert again.imported == [] and len(again.problems) == 3
    assert len(SegmentList.open(project)) == 3 and len(VoiceProject.open(project.root).sources) == 3


def test_alltalk_finetune_output_is_found_below_the_folder(tmp_path):
    out = tmp_path / "alltalk" / "finetune" / "myvoice"
    speak(out, ["x1"], GERMAN[:1])
    (out / TRAIN_CSV).write_text("audio_file|text|speaker_name\nwavs/x1.wav|Heute ist das Wetter schön.|me\n",
                                 encoding="utf-8")
    (out / "lang.txt").write_text("de\n")
    assert find_dataset(tmp_path / "alltalk") == ("coqui", out)
    project = VoiceProject.create(tmp_path / "p", language="de")
    report = import_dataset(project, tmp_path / "alltalk")
    assert report.language == "de" and len(report.imported) == 1


def test_a_folder_without_a_dataset_says_what_it_looked_for(tmp_path):
    with pytest.raises(DatasetImportError, match="metadata_train.csv .* metadata.csv"):
        find_dataset(tmp_path)


def test_an_existing_transcript_keeps_its_clips_and_length_range(tmp_path):
    from alltalk_gui.core.transcript.flags import ClipChecker
    from alltalk_gui.core.transcript.segments import Segment

    project = VoiceProject.create(tmp_path / "p", language="de")
    SegmentList.create(project, [Segment("c00001", "s000", 0, 3000, "Schon da.")],
                       checker=ClipChecker("xtts", "de", min_s=1.0, max_s=9.0))
    data = tmp_path / "lj"
    speak(data, ["a1"], GERMAN[:1])
    (data / "metadata.csv").write_text(f"a1|{GERMAN[0]}\n", encoding="utf-8")
    report = import_dataset(project, data)
    clips = SegmentList.open(project)
    assert report.imported == ["c00002"] and sorted(c.text for c in clips) == sorted([GERMAN[0], "Schon da."])
    assert (clips.checker.min_ms, clips.checker.max_ms) == (1000, 9000)
    assert (project.root / "segments.json.bak").is_file()
