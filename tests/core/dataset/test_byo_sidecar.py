"""A folder of audio files with their text beside them (clip.txt, MFA's clip.lab, LibriTTS's speaker/chapter/
clip.normalized.txt), any audio format, nested; bad files refused one by one, nothing outside the folder read."""

from __future__ import annotations

import os

import pytest

from alltalk_gui.core.dataset.byo_import import DatasetImportError, find_dataset, import_dataset
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.dataset.byo_support import TEXT, audio


def test_libritts_mfa_and_plain_text_files_in_nested_folders_and_formats(tmp_path):
    data = tmp_path / "LibriTTS" / "train-clean-100"
    chapter = data / "19" / "198"
    audio(chapter / "19_198_000000_000000.wav", seed=1)
    (chapter / "19_198_000000_000000.normalized.txt").write_text("Chapter one, nineteen.", encoding="utf-8")
    (chapter / "19_198_000000_000000.original.txt").write_text("Chapter 1, 19.", encoding="utf-8")
    audio(chapter / "19_198_000001_000000.flac", seed=2)
    (chapter / "19_198_000001_000000.original.txt").write_text("Only the original.\n", encoding="utf-8")
    audio(data / "mfa" / "s1.ogg", seed=3)
    (data / "mfa" / "s1.lab").write_text("an aligner's\nlab file", encoding="utf-8")
    audio(data / "plain" / "p1.mp3", seed=4)
    (data / "plain" / "p1.txt").write_bytes("\ufeffA text file from Windows.\r\n".encode("utf-8"))
    project = VoiceProject.create(tmp_path / "p", language="en")

    assert find_dataset(tmp_path / "LibriTTS") == ("sidecar", tmp_path / "LibriTTS")
    report = import_dataset(project, tmp_path / "LibriTTS")

    assert report.layout == "sidecar" and report.problems == []
    texts = sorted(c.text for c in SegmentList.open(project))
    assert texts == sorted(["Chapter one, nineteen.", "Only the original.", "an aligner's lab file",
                            "A text file from Windows."])
    assert sorted(s.name for s in project.sources) == sorted(
        ["19_198_000000_000000.wav", "19_198_000001_000000.flac", "s1.ogg", "p1.mp3"])


def test_bad_files_are_refused_one_by_one(tmp_path):
    data = tmp_path / "clips"
    audio(data / "good.wav", seed=1)
    (data / "good.txt").write_text(TEXT, encoding="utf-8")
    audio(data / "no_text.wav", seed=2)
    audio(data / "empty.wav", seed=3)
    (data / "empty.txt").write_text("  \n", encoding="utf-8")
    audio(data / "latin1.wav", seed=4)
    (data / "latin1.txt").write_bytes(b"Gr\xfc\xdfe")
    (data / "broken.wav").write_bytes(b"RIFF....not really a wav")
    (data / "broken.txt").write_text("Broken audio.", encoding="utf-8")
    audio(data / "huge.wav", seed=5)
    (data / "huge.txt").write_text("word " * 20_000, encoding="utf-8")
    audio(data / "sub" / "twin.wav", seed=1)  # the same audio as good.wav under another name
    (data / "sub" / "twin.txt").write_text(TEXT, encoding="utf-8")
    project = VoiceProject.create(tmp_path / "p", language="en")

    report = import_dataset(project, data)

    assert [s.name for s in project.sources] == ["good.wav"]
    expected = {"no_text.wav": "no text file beside it", "empty.wav": "the text is empty",
                "latin1.wav": "not UTF-8 text", "broken.wav": "broken.wav", "huge.wav": "too long for one clip",
                "sub/twin.wav": "already in the project"}
    for where, words in expected.items():
        assert any(p.startswith(f"{where}: ") and words in p for p in report.problems), (where, report.problems)
    assert len(report.problems) == len(expected)


@pytest.mark.skipif(os.name == "nt", reason="symlinks need privileges on Windows")
def test_links_out_of_the_folder_are_not_followed(tmp_path):
    outside = tmp_path / "private"
    audio(outside / "secret.wav", seed=9)
    (outside / "secret.txt").write_text("A private text.", encoding="utf-8")
    data = tmp_path / "clips"
    audio(data / "own.wav", seed=1)
    (data / "own.txt").write_text(TEXT, encoding="utf-8")
    (data / "linked_dir").symlink_to(outside, target_is_directory=True)   # not entered
    (data / "secret.wav").symlink_to(outside / "secret.wav")             # a linked audio file
    (data / "secret.txt").write_text("Mine.", encoding="utf-8")
    audio(data / "peek.wav", seed=2)
    (data / "peek.txt").symlink_to(outside / "secret.txt")               # a linked text file
    project = VoiceProject.create(tmp_path / "p", language="en")

    report = import_dataset(project, data)

    assert [s.name for s in project.sources] == ["own.wav"]
    assert len(report.problems) == 2 and all("outside the dataset folder" in p for p in report.problems)
    assert [c.text for c in SegmentList.open(project)] == [TEXT]


def test_a_folder_of_audio_without_any_text_is_no_dataset(tmp_path):
    audio(tmp_path / "clips" / "a.wav")
    (tmp_path / "clips" / "notes.txt").write_text("not beside any clip", encoding="utf-8")
    with pytest.raises(DatasetImportError, match=r"holds no dataset.*\.parquet.*\.lab"):
        find_dataset(tmp_path / "clips")


def test_a_path_that_does_not_exist_is_said_so(tmp_path):
    """A typo in the path: "no folder or file", not "is not a folder, a .parquet file or an .arrow file"."""
    with pytest.raises(DatasetImportError, match=r"There is no folder or file .*Datset: check the path\."):
        find_dataset(tmp_path / "Datset")
    (tmp_path / "notes.txt").write_text("a file", encoding="utf-8")
    with pytest.raises(DatasetImportError, match=r"is not a folder, a \.parquet file or an \.arrow file"):
        find_dataset(tmp_path / "notes.txt")


def test_a_metadata_file_wins_over_texts_beside_the_audio(tmp_path):
    data = tmp_path / "lj"
    audio(data / "wavs" / "a.wav")
    (data / "wavs" / "a.txt").write_text("The text file's words.", encoding="utf-8")
    (data / "metadata.csv").write_text(f"a|{TEXT}\n", encoding="utf-8")
    assert find_dataset(data) == ("ljspeech", data)
