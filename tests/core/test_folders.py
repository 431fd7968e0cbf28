"""Folder renames retried while Windows holds a lock (antivirus), and removals that report what is left."""

from __future__ import annotations

import os
import stat

import pytest

from alltalk_gui.core import folders


def locked_for(times: int, real):
    """``os.rename`` / ``os.replace`` failing like WinError 5 the first ``times`` calls (a scanner holding a file)."""
    calls = []

    def rename(source, target):
        calls.append(source)
        if len(calls) <= times:
            raise PermissionError(13, "Access is denied")
        real(source, target)

    return rename


def test_rename_waits_for_a_scanner_to_let_go(tmp_path, monkeypatch):
    (tmp_path / ".tmp-step_0000002").mkdir()
    monkeypatch.setattr(os, "rename", locked_for(2, os.rename))
    slept = []
    folders.rename(tmp_path / ".tmp-step_0000002", tmp_path / "step_0000002", sleep=slept.append)
    assert (tmp_path / "step_0000002").is_dir() and slept == list(folders.RETRY_DELAYS_S[:2])


def test_rename_gives_up_with_the_original_error(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    monkeypatch.setattr(os, "rename", locked_for(99, os.rename))
    slept = []
    with pytest.raises(PermissionError, match="Access is denied"):
        folders.rename(tmp_path / "a", tmp_path / "b", sleep=slept.append)
    assert slept == list(folders.RETRY_DELAYS_S) and (tmp_path / "a").is_dir()


def test_a_file_replaces_another_when_asked(tmp_path, monkeypatch):
    """atomic writes: a file over the existing one (os.replace), retried the same way."""
    (tmp_path / ".project.json.tmp").write_text("new")
    (tmp_path / "project.json").write_text("old")
    monkeypatch.setattr(os, "replace", locked_for(1, os.replace))
    folders.rename(tmp_path / ".project.json.tmp", tmp_path / "project.json", overwrite=True, sleep=lambda s: None)
    assert (tmp_path / "project.json").read_text() == "new"


def test_rename_does_not_retry_other_errors(tmp_path):
    slept = []
    with pytest.raises(FileNotFoundError):
        folders.rename(tmp_path / "missing", tmp_path / "b", sleep=slept.append)
    assert slept == []


def test_remove_tree_deletes_read_only_files_as_windows_needs(tmp_path, monkeypatch):
    """Windows refuses to delete a file with the read-only attribute; remove_tree clears it first."""
    real_unlink = os.unlink

    def windows_unlink(name, *, dir_fd=None):
        if not os.stat(name, dir_fd=dir_fd).st_mode & stat.S_IWUSR:
            raise PermissionError(13, "Access is denied", name)
        real_unlink(name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", windows_unlink)
    folder = tmp_path / "step_0000001"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "optimizer.bin").write_bytes(b"x")
    (folder / "sub" / "optimizer.bin").chmod(stat.S_IRUSR)
    assert folders.remove_tree(folder, sleep=lambda s: None) is None
    assert not folder.exists()


def test_remove_tree_reports_a_folder_it_cannot_delete(tmp_path, monkeypatch):
    folder = tmp_path / "step_0000001"
    folder.mkdir()

    def locked(path):
        raise PermissionError(13, "Access is denied", str(path))

    monkeypatch.setattr(folders, "_rmtree", locked)
    slept = []
    message = folders.remove_tree(folder, sleep=slept.append)
    assert message == f"Could not delete {folder}: Access is denied. Delete it by hand to free its space."
    assert slept == list(folders.RETRY_DELAYS_S)


def test_remove_tree_of_nothing_is_fine(tmp_path):
    assert folders.remove_tree(tmp_path / "gone") is None
