"""Issue 18 item 10: a large import saves project.json every N files or every few seconds, not after each file,
finds duplicates through a hash index, and a failed save still rolls back exactly the unsaved files."""

from __future__ import annotations

import errno
import json

import numpy as np
import pytest
import soundfile as sf

from alltalk_gui.core import atomic
from alltalk_gui.core.project import importer
from alltalk_gui.core.project.folder import VoiceProject
from alltalk_gui.core.project.importer import import_files


def _tones(folder, count):
    folder.mkdir()
    t = np.arange(4410) / 22050
    for i in range(count):
        sf.write(folder / f"{i:03d}.wav", (0.3 * np.sin(2 * np.pi * (150 + 7 * i) * t)).astype(np.float32), 22050)
    return folder


@pytest.fixture
def project(tmp_path):
    return VoiceProject.create(tmp_path / "voice")


def _count_saves(monkeypatch):
    saves = []
    real = VoiceProject.save

    def counting(self):
        saves.append(len(self.sources))
        real(self)

    monkeypatch.setattr(VoiceProject, "save", counting)
    return saves


def test_project_json_is_saved_every_n_files_and_at_the_end(project, tmp_path, monkeypatch):
    folder = _tones(tmp_path / "many", 7)
    saves = _count_saves(monkeypatch)
    report = import_files(project, [folder], save_every_files=3, save_every_s=3600)
    assert len(report.imported) == 7
    assert saves == [3, 6, 7]  # before: one save per file, [1, 2, 3, 4, 5, 6, 7]
    assert len(VoiceProject.open(project.root).sources) == 7


def test_project_json_is_also_saved_every_few_seconds(project, tmp_path, monkeypatch):
    folder = _tones(tmp_path / "many", 4)
    clock = iter(range(0, 1000, 5))  # every file takes "5 s"
    monkeypatch.setattr(importer.time, "monotonic", lambda: next(clock))
    saves = _count_saves(monkeypatch)
    import_files(project, [folder], save_every_files=100, save_every_s=2.0)
    assert saves == [1, 2, 3, 4]


def test_duplicates_within_one_batch_are_found_by_the_hash_index(project, tmp_path):
    folder = _tones(tmp_path / "many", 3)
    (folder / "copy of 001.wav").write_bytes((folder / "001.wav").read_bytes())
    report = import_files(project, [folder], save_every_files=100)
    assert len(report.imported) == 3
    assert [r.reason for r in report.rejected] == ["copy of 001.wav is already in the project (same content as "
                                                   "'001.wav')."]


def test_a_failed_save_rolls_back_every_unsaved_file_and_keeps_the_saved_ones(project, tmp_path, monkeypatch):
    folder = _tones(tmp_path / "many", 5)
    writes = []
    real = atomic.write_json

    def full_after_first_save(target, obj):
        writes.append(target)
        if len(writes) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(target, obj)

    monkeypatch.setattr(atomic, "write_json", full_after_first_save)
    report = import_files(project, [folder], save_every_files=2, save_every_s=3600)
    monkeypatch.undo()
    assert [s.name for s in report.imported] == ["000.wav", "001.wav"]
    assert sorted(r.reason.split(":")[0] for r in report.rejected) == ["002.wav", "003.wav", "004.wav"]
    assert all("disk is full" in r.reason for r in report.rejected)
    saved = json.loads(project.project_file.read_text(encoding="utf-8"))
    assert [s["name"] for s in saved["sources"]] == ["000.wav", "001.wav"]
    assert sorted(p.name for p in project.sources_dir.iterdir()) == ["000.wav", "001.wav"]
    assert len(list(project.audio_dir.iterdir())) == 2
