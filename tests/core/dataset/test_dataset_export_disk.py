"""Issue 29 item 2 for the dataset export: a disk without room refuses before writing, and a write that fails
midway is undone; either way the message says where, about how much is needed and how much is free, and the
previous dataset is as it was.

On a real small file system (a tmpfs holding the project) where this machine allows one: its bytes lowered (the
check before writing refuses) or its number of files (a wav of the new dataset fails midway). Elsewhere the wav
writer (soundfile, as the app's audio module calls it) stops halfway with ENOSPC.
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pytest

from alltalk_gui.core.dataset.export import DatasetError, export_dataset
from alltalk_gui.core.transcript.segments import SegmentList
from tests.core.transcript.test_segments_support import add_source, make_project, segment, voice_like
from tests.small_filesystem import tmpfs, tmpfs_available

needs_tmpfs = pytest.mark.skipif(not tmpfs_available(), reason="mounting a tmpfs needs root (CAP_SYS_ADMIN)")


def _project(root: Path):
    project = make_project(root)
    add_source(project, "take.wav", voice_like(20.0))
    SegmentList.create(project, [segment(f"c0000{i}", "s001", i * 3500, i * 3500 + 3000, f"Clip number {i} here.")
                                 for i in range(1, 6)])
    return project


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _assert_previous_kept(project, before: dict[str, str]) -> None:
    assert _digests(project.dataset_dir) == before
    assert [p.name for p in project.root.iterdir() if p.name.startswith(".dataset")] == []  # no staging left


@needs_tmpfs
def test_no_room_for_the_new_dataset_is_refused_before_writing(tmp_path):
    with tmpfs(tmp_path / "disk", size=64 << 20) as fs:
        project = _project(tmp_path / "disk")
        export_dataset(project)
        before = _digests(project.dataset_dir)
        used, _ = fs.used()
        fs.remount(size=used + (64 << 10))  # the new dataset (~700 kB) does not fit beside the old one
        with pytest.raises(DatasetError) as caught:
            export_dataset(project, seed=1)
        message = str(caught.value)
        assert message.startswith(f"Not enough free disk space for the dataset in {project.root}: about ")
        assert " needed, " in message and " kB free" in message and "the previous dataset is kept" in message
        _assert_previous_kept(project, before)


@needs_tmpfs
def test_a_real_disk_that_fills_midway_undoes_the_export(tmp_path):
    with tmpfs(tmp_path / "disk", size=64 << 20) as fs:
        project = _project(tmp_path / "disk")
        export_dataset(project)
        before = _digests(project.dataset_dir)
        _, inodes = fs.used()
        fs.remount(inodes=inodes + 3)  # the staging folder, wavs/ and one wav; the second wav finds no room
        with pytest.raises(DatasetError) as caught:
            export_dataset(project, seed=1)
        message = str(caught.value)
        assert f"The dataset could not be written to {project.root}: the disk is full (about " in message
        assert "but no room for more files" in message
        assert "The export was undone: the previous dataset is as it was. Free some space" in message
        _assert_previous_kept(project, before)
        fs.remount(inodes=100_000)
        assert export_dataset(project, seed=1).train == 4  # with room again, it exports


@pytest.mark.skipif(tmpfs_available(), reason="the tests on a real small file system run instead")
def test_a_wav_write_that_fails_midway_undoes_the_export(tmp_path, monkeypatch):
    import soundfile

    project = _project(tmp_path)
    export_dataset(project)
    before = _digests(project.dataset_dir)
    real, calls = soundfile.write, []

    def write(file, data, samplerate, *args, **kwargs):
        calls.append(file)
        if len(calls) == 2:
            real(file, data[: len(data) // 2], samplerate, *args, **kwargs)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), file)
        return real(file, data, samplerate, *args, **kwargs)

    monkeypatch.setattr(soundfile, "write", write)
    with pytest.raises(DatasetError, match="The dataset could not be written to .*the disk is full .*The export was "
                                           "undone: the previous dataset is as it was"):
        export_dataset(project, seed=1)
    _assert_previous_kept(project, before)
