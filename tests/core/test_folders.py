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


def windows_unlink_rule(monkeypatch):
    """``os.unlink`` refusing a file without write permission, as Windows refuses one with the read-only
    attribute."""
    real_unlink = os.unlink

    def windows_unlink(name, *, dir_fd=None):
        if not os.stat(name, dir_fd=dir_fd).st_mode & stat.S_IWUSR:
            raise PermissionError(13, "Access is denied", name)
        real_unlink(name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", windows_unlink)


def test_remove_tree_deletes_read_only_files_as_windows_needs(tmp_path, monkeypatch):
    """Windows refuses to delete a file with the read-only attribute; remove_tree clears it first."""
    windows_unlink_rule(monkeypatch)
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


# -- a file held open: a real refused replace (tests/held_file.py) -----------------------------------------------

@pytest.fixture()
def held(tmp_path):
    from tests.held_file import holdable

    target = tmp_path / "take.wav"
    target.write_bytes(b"old take")
    hold = holdable(target)
    yield hold
    hold.release()


def test_a_replace_waits_while_a_program_holds_the_file(tmp_path, held):
    """The player lets go during the retries: the new file goes in, nothing else happens."""
    new = tmp_path / ".take.wav.tmp"
    new.write_bytes(b"new take")
    held.hold()
    slept = []

    def sleep(delay):
        slept.append(delay)
        if len(slept) == 2:
            held.release()

    folders.rename(new, held.path, overwrite=True, sleep=sleep)
    assert held.path.read_bytes() == b"new take" and not new.exists() and len(slept) == 2


def test_a_file_held_for_longer_is_named_and_both_versions_are_kept(tmp_path, held):
    new = tmp_path / ".take.wav.tmp"
    new.write_bytes(b"new take")
    held.hold()
    slept = []
    with pytest.raises(folders.FileInUseError) as caught:
        folders.rename(new, held.path, overwrite=True, sleep=slept.append)
    held.release()
    assert isinstance(caught.value, PermissionError) and caught.value.path == held.path
    message = str(caught.value)
    assert message.startswith(f"{held.path} is open in another program") and "nothing was changed" in message
    assert "Close it there and try again." in message
    assert slept == list(folders.RETRY_DELAYS_S)
    assert held.path.read_bytes() == b"old take" and new.read_bytes() == b"new take"


def test_the_disk_words_for_a_held_file_say_in_use_not_read_only(tmp_path, held):
    from alltalk_gui.core.machine import disk

    new = tmp_path / ".take.wav.tmp"
    new.write_bytes(b"new take")
    held.hold()
    with pytest.raises(folders.FileInUseError) as caught:
        folders.rename(new, held.path, overwrite=True, sleep=lambda s: None)
    assert disk.reason(caught.value) == "take.wav is " + folders.IN_USE
    assert disk.reason(PermissionError(13, "Permission denied")).startswith("the folder cannot be written")


def test_a_folder_that_cannot_be_set_aside_is_named_with_its_files(tmp_path):
    """The dataset export sets the old dataset/ aside; a wav or CSV in it held open stops that rename."""
    from tests.held_file import holdable

    dataset = tmp_path / "dataset"
    dataset.mkdir()
    hold = holdable(dataset)
    hold.hold()
    try:
        with pytest.raises(folders.FileInUseError) as caught:
            folders.rename(dataset, tmp_path / ".dataset-old-1", sleep=lambda s: None)
    finally:
        hold.release()
    assert str(caught.value).startswith(f"{dataset} (or a file in it) is open in another program")
    assert "renamed to .dataset-old-1" in str(caught.value) and dataset.is_dir()


def test_remove_file_deletes_a_read_only_copy_as_windows_needs(tmp_path, monkeypatch):
    """A failed import removes its copy of a read-only original (copy2 keeps the mode): Windows refuses to delete a
    file with the read-only attribute until it is cleared."""
    windows_unlink_rule(monkeypatch)
    copy = tmp_path / "from_cd.wav"
    copy.write_bytes(b"x")
    copy.chmod(stat.S_IRUSR)
    folders.remove_file(copy)
    assert not copy.exists()
    folders.remove_file(copy)  # gone already: nothing to do


def test_remove_file_reports_a_file_it_cannot_delete(tmp_path):
    from tests.held_file import holdable

    held = tmp_path / "take.wav"
    held.write_bytes(b"x")
    hold = holdable(held)
    hold.hold()
    try:
        with pytest.raises(PermissionError):
            folders.remove_file(held)
    finally:
        hold.release()
    assert held.exists()
