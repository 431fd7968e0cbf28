"""F5-TTS's metadata.csv (a header, then path|text) beside LJSpeech's (no header): told apart by the first line,
read with Windows habits (BOM, CRLF, backslashes), and every bad row refused on its own with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from alltalk_gui.core.dataset.byo_csv import has_header
from alltalk_gui.core.dataset.byo_import import DatasetImportError, find_dataset, import_dataset, survey
from alltalk_gui.core.dataset.metadata import TRAIN_CSV
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.dataset.byo_support import TEXT, audio


def write(path: Path, lines: list[str], newline: str = "\n", bom: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + (newline.join(lines) + newline).encode("utf-8"))
    return path


@pytest.mark.parametrize("first, header", [
    ("audio_file|text", True), ("\ufeffaudio_file|text", True), ("path|transcription", True),
    ("Audio_File | Text | speaker_name", True), ("file_name|normalized_text", True),
    ("LJ001-0001|Printing, in the only sense|Printing, in the only sense", False),
    ("wavs/a.wav|Hello there.", False), ("a1|text", False)])
def test_the_first_line_tells_f5_from_ljspeech(tmp_path, first, header):
    audio(tmp_path / "wavs" / "a1.wav")  # an LJSpeech clip whose words are "text" is still a clip
    csv = tmp_path / "metadata.csv"
    csv.write_text(first + "\nx|y\n", encoding="utf-8")
    assert has_header(csv) is header


def test_f5_metadata_with_windows_habits_and_every_bad_row(tmp_path):
    data = tmp_path / "my_voice"
    for i in range(3):
        audio(data / "wavs" / "take1" / f"a{i}.wav", seed=i)
    audio(data / "wavs" / "abs.wav", seed=5)
    audio(data / "wavs" / "win.wav", seed=6)
    audio(data / "wavs" / "quoted.wav", seed=7)
    audio(tmp_path / "elsewhere.wav", seed=8)
    (data / "wavs" / "broken.wav").write_text("this is no audio", encoding="utf-8")
    lines = ["audio_file|text",
             f"wavs/take1/a0.wav|{TEXT}",                    # 2 a path with folders
             f"{data / 'wavs' / 'abs.wav'}|Absolute paths inside the folder are fine.",  # 3
             "wavs\\win.wav|Written on Windows.",             # 4 backslashes
             'wavs/quoted.wav|"She said ""hello"" to me."',  # 5 a quoted cell (csv module style)
             "wavs/missing.wav|This file is missing.",         # 6
             "wavs/take1/a1.wav|",                             # 7 empty text
             f"wavs/take1/a0.wav|{TEXT}",                      # 8 the same file again
             f"{tmp_path / 'elsewhere.wav'}|Outside.",         # 9 absolute, outside the folder
             "../elsewhere.wav|Outside too.",                  # 10
             "wavs/broken.wav|Not audio at all.",              # 11 undecodable
             "only one cell",                                  # 12
             "",                                               # 13 blank: ignored
             f"wavs/take1/a2.wav|{TEXT} Again."]               # 14
    write(data / "metadata.csv", lines, newline="\r\n", bom=True)
    raw = (data / "metadata.csv").read_bytes().replace(b"Outside too.", b"Au\xdfen.")  # cp1252, not UTF-8
    (data / "metadata.csv").write_bytes(raw)
    project = VoiceProject.create(tmp_path / "p", language="en")

    assert find_dataset(data) == ("f5", data)
    report = import_dataset(project, data)

    assert report.layout == "f5" and "F5-TTS" in report.layout_name
    problems = "\n".join(report.problems)
    for line, expected in ((6, "missing.wav does not exist"), (7, "the text is empty"), (8, "listed twice"),
                           (9, "outside the dataset folder"), (10, "not UTF-8 text (byte 0xdf)"),
                           (11, "broken.wav"), (12, "expected 'audio_file|text'")):
        assert any(p.startswith(f"metadata.csv line {line}: ") and expected in p for p in report.problems), \
            (line, problems)
    assert len(report.problems) == 7, problems
    assert "line 1:" not in problems  # the header is no row
    assert [int(p.split("line ")[1].split(":")[0]) for p in report.problems] == [6, 7, 8, 9, 10, 11, 12]
    clips = SegmentList.open(project)
    assert [c.text for c in clips] == [TEXT, "Absolute paths inside the folder are fine.", "Written on Windows.",
                                       'She said "hello" to me.', f"{TEXT} Again."]
    assert sorted(s.name for s in project.sources) == ["a0.wav", "a2.wav", "abs.wav", "quoted.wav", "win.wav"]
    assert not list(project.root.glob(".dataset-import-*"))


def test_ljspeech_rows_written_as_paths_and_ids_both_import(tmp_path):
    data = tmp_path / "lj"
    audio(data / "wavs" / "one.wav", seed=1)
    audio(data / "wavs" / "two.wav", seed=2)
    write(data / "metadata.csv", [f"wavs/one.wav|{TEXT}", "two|Raw text 2.|Raw text two."])
    project = VoiceProject.create(tmp_path / "p", language="en")
    report = import_dataset(project, data)
    assert report.layout == "ljspeech" and report.problems == []
    assert [c.text for c in SegmentList.open(project)] == [TEXT, "Raw text two."]


def test_a_ljspeech_csv_is_not_taken_for_f5_and_keeps_its_first_row(tmp_path):
    data = tmp_path / "lj"
    audio(data / "wavs" / "LJ001-0001.wav")
    write(data / "metadata.csv", [f"LJ001-0001|{TEXT}|{TEXT}"])
    assert find_dataset(data) == ("ljspeech", data)
    assert survey(data).clips == 1


def test_coqui_with_several_speakers_imports_the_chosen_one(tmp_path):
    data = tmp_path / "coqui"
    rows = ["audio_file|text|speaker_name"]
    for i, who in enumerate(["anna", "anna", "ben"]):
        audio(data / "wavs" / f"{who}{i}.wav", seed=i)
        rows.append(f"wavs/{who}{i}.wav|{TEXT} {i}|{who}")
    write(data / TRAIN_CSV, rows)
    project = VoiceProject.create(tmp_path / "p", language="en")
    assert survey(data).speakers == {"anna": 2, "ben": 1}
    with pytest.raises(DatasetImportError, match=r"2 speakers.*anna \(2 clips\), ben \(1 clip\)"):
        import_dataset(project, data)
    assert VoiceProject.open(project.root).sources == [] and not project.segments_file.exists()
    with pytest.raises(DatasetImportError, match="no speaker 'carl'"):
        import_dataset(project, data, speaker="carl")
    report = import_dataset(project, data, speaker="ben")
    assert report.speaker == "ben" and [s.name for s in project.sources] == ["ben2.wav"]
    assert SegmentList.open(project).meta["imported_datasets"][0]["speaker"] == "ben"


def test_utf16_csv_from_a_windows_editor_is_read(tmp_path):
    data = tmp_path / "f5"
    audio(data / "wavs" / "a.wav")
    (data / "metadata.csv").write_bytes("audio_file|text\r\nwavs/a.wav|Grüße aus Köln.\r\n".encode("utf-16"))
    project = VoiceProject.create(tmp_path / "p", language="de")
    report = import_dataset(project, data)
    assert report.layout == "f5" and report.problems == []
    assert [c.text for c in SegmentList.open(project)] == ["Grüße aus Köln."]
