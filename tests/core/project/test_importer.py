"""Importing into a project: every accepted file is recorded; every bad one is refused alone, with a reason,
leaving no partial files and a valid project.json."""

import errno
import hashlib
import json

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core import atomic
from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.project import importer
from alltalk_gui.core.project.importer import import_files
from alltalk_gui.core.project.folder import VoiceProject

SR = 44100


def _tone(path, seconds=3.0, amplitude=0.3, sr=SR, channels=2):
    t = np.arange(int(seconds * sr)) / sr
    x = amplitude * np.sin(2 * np.pi * 220 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 1.5 * t))
    data = np.stack([x] * channels, axis=1) if channels > 1 else x
    sf.write(path, data.astype("float32"), sr)
    return path


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def project(tmp_path):
    return VoiceProject.create(tmp_path / "project", name="Test")


def _project_files(project):
    return sorted(p.relative_to(project.root).as_posix() for p in project.root.rglob("*") if p.is_file())


def _assert_consistent(project):
    """project.json on disk lists exactly the files in sources/ and audio/, and nothing else is there."""
    reloaded = VoiceProject.open(project.root)
    listed = sorted([s.file for s in reloaded.sources] + [s.audio_file for s in reloaded.sources])
    on_disk = [f for f in _project_files(project) if f.startswith(("sources/", "audio/"))]
    assert on_disk == listed
    return reloaded


def test_import_copies_original_untouched_and_writes_a_mono_working_copy_at_the_source_rate(project, tmp_path):
    original = _tone(tmp_path / "take one.wav")
    digest = _digest(original)
    report = import_files(project, [original])
    assert report.rejected == [] and len(report.imported) == 1
    src = report.imported[0]
    assert src.name == "take one.wav"
    assert _digest(original) == digest  # the user's file is not touched
    assert _digest(project.path(src.file)) == digest  # the project's copy is byte for byte the same
    info = sf.info(project.path(src.audio_file))
    assert (info.samplerate, info.channels, info.subtype) == (SR, 1, "PCM_16")
    assert src.analysis["sample_rate"] == SR and src.analysis["channels"] == 2
    assert src.duration_s == pytest.approx(3.0, abs=0.01)
    reloaded = _assert_consistent(project)
    assert reloaded.sources[0].sha256 == digest


def test_folders_are_searched_recursively_and_non_audio_is_skipped(project, tmp_path):
    folder = tmp_path / "session"
    (folder / "day 2").mkdir(parents=True)
    _tone(folder / "a.wav")
    _tone(folder / "day 2" / "b.flac", seconds=2.0)
    (folder / "notes.txt").write_text("not audio")
    (folder / ".hidden.wav").write_bytes(b"ignored")
    report = import_files(project, [folder])
    assert sorted(s.name for s in report.imported) == ["a.wav", "b.flac"]
    assert report.skipped_non_audio == 1 and report.rejected == []


def test_non_ascii_path_imports(project, tmp_path):
    folder = tmp_path / "Stimme Grüße 日本語"
    folder.mkdir()
    src = _tone(folder / "Ölçü ß voice.wav")
    report = import_files(project, [src])
    assert [s.name for s in report.imported] == ["Ölçü ß voice.wav"]
    assert project.path(report.imported[0].file).is_file()
    _assert_consistent(project)


def test_bad_files_are_refused_one_by_one_and_the_rest_imported(project, tmp_path):
    good = _tone(tmp_path / "good.wav")
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    text_as_mp3 = tmp_path / "letter.mp3"
    text_as_mp3.write_text("Dear Sir, this is not audio at all. " * 50)
    corrupt = tmp_path / "corrupt.flac"
    _tone(corrupt)
    corrupt.write_bytes(corrupt.read_bytes()[:64])  # header only, the audio cut off
    zero_samples = tmp_path / "zero.wav"
    sf.write(zero_samples, np.zeros((0, 1), dtype="float32"), SR)
    document = tmp_path / "notes.docx"
    document.write_bytes(b"PK\x03\x04")
    missing = tmp_path / "nowhere.wav"
    also_good = _tone(tmp_path / "also good.ogg", seconds=2.0)

    report = import_files(project, [good, empty, text_as_mp3, corrupt, zero_samples, document, missing, also_good])
    assert sorted(s.name for s in report.imported) == ["also good.ogg", "good.wav"]
    reasons = {r.path.rsplit("/", 1)[-1]: r.reason for r in report.rejected}
    assert set(reasons) == {"empty.wav", "letter.mp3", "corrupt.flac", "zero.wav", "notes.docx", "nowhere.wav"}
    assert "empty (0 bytes)" in reasons["empty.wav"]
    assert "letter.mp3" in reasons["letter.mp3"] and "not an audio file" in reasons["letter.mp3"]
    assert "corrupt.flac" in reasons["corrupt.flac"]
    assert "zero.wav" in reasons["zero.wav"] and "no audio" in reasons["zero.wav"]
    assert "not a supported audio or video format" in reasons["notes.docx"]
    assert "no such file" in reasons["nowhere.wav"]
    _assert_consistent(project)


def test_duplicates_are_detected_by_content_not_name(project, tmp_path):
    first = _tone(tmp_path / "first.wav")
    renamed_copy = tmp_path / "renamed copy.wav"
    renamed_copy.write_bytes(first.read_bytes())
    same_name_other_content = tmp_path / "other" / "first.wav"
    same_name_other_content.parent.mkdir()
    _tone(same_name_other_content, amplitude=0.2)

    report = import_files(project, [first, renamed_copy])
    assert [s.name for s in report.imported] == ["first.wav"]
    assert "already in the project" in report.rejected[0].reason and "first.wav" in report.rejected[0].reason
    # Importing again later is refused too; a different file with the same name gets its own copy.
    report = import_files(project, [first, same_name_other_content])
    assert len(report.rejected) == 1 and len(report.imported) == 1
    assert report.imported[0].file == "sources/first-2.wav"
    _assert_consistent(project)


def test_copies_get_names_a_windows_disk_takes(project, tmp_path):
    """A project moves between systems: names Linux allows and Windows refuses, or that differ only by case, would
    be lost or overwritten in the copy. The user's name for the recording stays as it was."""
    (tmp_path / "a").mkdir()
    files = [_tone(tmp_path / "Take.wav", amplitude=0.1), _tone(tmp_path / "a" / "take.wav", amplitude=0.2),
             _tone(tmp_path / "what? 1:2.wav", amplitude=0.25), _tone(tmp_path / "CON.wav", amplitude=0.3)]
    report = import_files(project, files)
    assert report.rejected == []
    assert [s.file for s in report.imported] == ["sources/Take.wav", "sources/take-2.wav", "sources/what_ 1_2.wav",
                                                 "sources/CON_.wav"]
    assert [s.name for s in report.imported] == ["Take.wav", "take.wav", "what? 1:2.wav", "CON.wav"]
    _assert_consistent(project)


def test_over_size_and_over_duration_limits_say_so(project, tmp_path, monkeypatch):
    long_file = _tone(tmp_path / "long.wav", seconds=4.0)
    monkeypatch.setattr(audio, "MAX_DURATION_S", 3.0)
    report = import_files(project, [long_file])
    assert report.imported == [] and "limit" in report.rejected[0].reason and "long.wav" in report.rejected[0].reason
    monkeypatch.undo()

    monkeypatch.setattr(importer, "MAX_FILE_BYTES", 1000)
    report = import_files(project, [long_file])
    assert report.imported == [] and "the limit is" in report.rejected[0].reason
    assert _project_files(project) == ["project.json"]


@pytest.mark.parametrize("error, words", [(errno.ENOSPC, "disk is full"), (errno.EACCES, "read-only")])
def test_a_full_or_read_only_project_folder_refuses_the_file_and_keeps_earlier_ones(project, tmp_path, monkeypatch,
                                                                                   error, words):
    # As root, chmod cannot make a folder read-only and this machine has no small filesystem to fill, so
    # the OS error is raised where the working copy is written: after the original was already copied.
    first = _tone(tmp_path / "first.wav")
    second = _tone(tmp_path / "second.wav", amplitude=0.2)
    real = audio.write_wav
    calls = []

    def failing_write(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(error, "simulated")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(audio, "write_wav", failing_write)
    report = import_files(project, [first, second])
    assert [s.name for s in report.imported] == ["first.wav"]
    assert words in report.rejected[0].reason and "second.wav" in report.rejected[0].reason
    reloaded = _assert_consistent(project)  # the half-imported second file left nothing behind
    assert [s.name for s in reloaded.sources] == ["first.wav"]


def test_a_failure_to_save_project_json_rolls_the_file_back(project, tmp_path, monkeypatch):
    first = _tone(tmp_path / "first.wav")
    before = project.project_file.read_bytes()

    def full_disk(target, obj):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "write_json", full_disk)
    report = import_files(project, [first])
    monkeypatch.undo()
    assert report.imported == [] and "disk is full" in report.rejected[0].reason
    assert project.sources == []
    assert project.project_file.read_bytes() == before
    assert json.loads(before)["sources"] == []
    _assert_consistent(project)


def test_cancel_stops_before_the_next_file(project, tmp_path):
    files = [_tone(tmp_path / f"{i}.wav", amplitude=0.1 + i / 10) for i in range(3)]
    seen = []
    report = import_files(project, files, progress=lambda d, t, n: seen.append(n), cancel=lambda: len(seen) >= 1)
    assert report.cancelled and len(report.imported) == 1
    _assert_consistent(project)
