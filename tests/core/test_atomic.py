"""Atomic writes (core/atomic.py) under Windows' fsync rule: every save flushes through a writable handle.

tests/conftest.py runs this module with ``os.fsync`` refusing read-only files as Windows does
(tests/windows_fsync.py), so a read-only flush fails here as it would for every Windows user.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from alltalk_gui.core import atomic


def test_the_windows_rule_is_in_force_here(tmp_path):
    """The old implementation (fsync of a file opened "rb") fails under the emulation, as on Windows."""
    path = tmp_path / "f.bin"
    path.write_bytes(b"x")
    with open(path, "rb") as f, pytest.raises(OSError, match="Bad file descriptor"):
        os.fsync(f.fileno())
    with open(path, "r+b") as f:
        os.fsync(f.fileno())


def test_write_bytes_text_and_json_replace_the_target(tmp_path):
    target = tmp_path / "project.json"
    atomic.write_bytes(target, b"old")
    atomic.write_json(target, {"name": "José & [Ana]"})
    assert json.loads(target.read_text(encoding="utf-8")) == {"name": "José & [Ana]"}
    atomic.write_text(target, "ünïcode\n")
    assert target.read_text(encoding="utf-8") == "ünïcode\n"
    assert [p.name for p in tmp_path.iterdir()] == ["project.json"]  # no temporary left behind


def test_atomic_path_for_writers_that_want_a_path(tmp_path):
    target = tmp_path / "clip.wav"
    with atomic.atomic_path(target, suffix=".wav") as tmp:
        assert tmp.suffix == ".tmp" and tmp.name.endswith(".wav.tmp") and tmp.parent == tmp_path
        tmp.write_bytes(b"RIFF")
    assert target.read_bytes() == b"RIFF"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "segments.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic.atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["segments.json"]


def test_copy_file_of_a_read_only_original(tmp_path):
    """copy2 keeps a read-only source's mode; flushing the copy still works and the mode is kept."""
    source = tmp_path / "from_cd.wav"
    source.write_bytes(b"audio")
    source.chmod(stat.S_IRUSR | stat.S_IRGRP)
    target = tmp_path / "originals" / "from_cd.wav"
    target.parent.mkdir()
    atomic.copy_file(source, target)
    assert target.read_bytes() == b"audio"
    assert not target.stat().st_mode & stat.S_IWUSR
    assert target.stat().st_mtime == source.stat().st_mtime


@pytest.mark.skipif(os.name == "nt", reason="reads the descriptor's flags with fcntl (POSIX)")
def test_fsync_file_flushes_through_a_writable_handle(tmp_path, monkeypatch):
    import fcntl

    modes = []
    real = os.fsync

    def record(fd):
        modes.append(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE)
        real(fd)

    monkeypatch.setattr(os, "fsync", record)
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"w")
    atomic.fsync_file(path)
    assert modes == [os.O_RDWR]


def test_fsync_tree_flushes_every_file_of_a_folder(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    for name in ("a.bin", "sub/b.bin"):
        (tmp_path / name).write_bytes(b"x")
    flushed = []
    monkeypatch.setattr(atomic, "fsync_file", lambda path: flushed.append(Path(path).relative_to(tmp_path)))
    atomic.fsync_tree(tmp_path)
    assert sorted(str(p) for p in flushed) == ["a.bin", "sub/b.bin"]


def test_a_save_over_a_file_another_program_holds_says_which_and_keeps_the_old(tmp_path, monkeypatch):
    """Windows: a project file open elsewhere refuses os.replace. The save says so; the old file stays whole and
    no temporary is left (the caller still has the new data)."""
    from alltalk_gui.core import folders
    from tests.held_file import holdable

    target = tmp_path / "project.json"
    atomic.write_json(target, {"version": 1})
    hold = holdable(target)
    monkeypatch.setattr(folders, "RETRY_DELAYS_S", (0.0, 0.0))
    try:
        with pytest.raises(folders.FileInUseError, match="project.json is open in another program"):
            with atomic.atomic_path(target) as tmp:
                tmp.write_text('{"version": 2}\n', encoding="utf-8")
                hold.hold()  # after the temporary exists: only the replace is refused, as on Windows
    finally:
        hold.release()
    assert json.loads(target.read_text(encoding="utf-8")) == {"version": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["project.json"]
