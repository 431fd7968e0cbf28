"""Folder renames and removals that survive Windows' file locks, and say so when they cannot.

On Windows an antivirus scanner, the search indexer or a backup tool opens new files for a moment after they
are written; while it holds one, renaming its folder fails with ``PermissionError`` (WinError 5, "Access is
denied") or WinError 32 ("used by another process"). Checkpoints and exports are written into a hidden folder
and renamed into place the moment they are complete, exactly when a scanner looks at them, so the rename is
retried for a few seconds before it counts as a failure. Linux has no such locks: there the first try works
and the retries cost nothing.

A file held for longer (a media player or a spreadsheet that has it open, a sync tool uploading it) still refuses
after the retries: :class:`FileInUseError` then says which file or folder is in use, and that nothing was changed
(``os.replace`` leaves the old file as it was; the new one is still with the caller).

Removing a folder (old checkpoints, leftovers of an interrupted export) can fail the same way. A checkpoint is
gigabytes, so a failure is reported in words (which folder is left, why) instead of being ignored.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from pathlib import Path
from typing import Callable

IN_USE = ("open in another program (a media player, an editor, a spreadsheet, a sync or antivirus tool) "
          "or read-only")


class FileInUseError(PermissionError):
    """A rename or replace still refused after :data:`RETRY_DELAYS_S`: on Windows, something holds ``path`` (or a
    file in the folder ``path``) open. ``str()`` is a sentence for the user that names it; ``errno`` and
    ``strerror`` are the system's."""

    def __init__(self, path: str | os.PathLike[str], what: str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror)
        self.path = Path(path)
        held = " (or a file in it)" if self.path.is_dir() else ""
        self.reason = f"{self.path.name}{held} is {IN_USE}"
        self.message = (f"{self.path}{held} is {IN_USE}, so it could not be {what} ({cause.strerror or cause}); "
                        "nothing was changed. Close it there and try again.")

    def __str__(self) -> str:
        return self.message


# About 4 s in all: long enough for a scanner to finish with a few files, short enough not to look hung.
RETRY_DELAYS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)


def rename(source: str | os.PathLike[str], target: str | os.PathLike[str], *, overwrite: bool = False,
           sleep: Callable[[float], None] = time.sleep) -> None:
    """``os.rename(source, target)`` (``os.replace`` with ``overwrite``: a file over an existing one), retried
    while Windows reports a file as held. On Linux a PermissionError is a real permission problem; it is
    raised after the same few seconds.

    Raises:
        FileInUseError: still refused after :data:`RETRY_DELAYS_S` (a PermissionError naming the held file: the
            target of a replace, the source of a rename).
        OSError: any other failure, at once (e.g. FileExistsError on Windows for an existing target).
    """
    for delay in (*RETRY_DELAYS_S, None):
        try:
            (os.replace if overwrite else os.rename)(source, target)
            return
        except PermissionError as exc:
            if delay is None:
                if overwrite:
                    raise FileInUseError(target, "replaced", exc) from exc
                raise FileInUseError(source, f"renamed to {Path(target).name}", exc) from exc
            sleep(delay)


def remove_file(path: str | os.PathLike[str]) -> None:
    """Delete one file (gone already counts as deleted). Windows refuses to delete a file with the read-only
    attribute, which a copy of a file from a CD or a read-only share keeps (``shutil.copy2``): it is made writable
    first.

    Raises:
        OSError: it still cannot be deleted (held open by another program, no permission).
    """
    path = Path(path)
    try:
        path.unlink(missing_ok=True)
    except PermissionError:
        mode = path.stat().st_mode
        if mode & stat.S_IWRITE:
            raise
        os.chmod(path, mode | stat.S_IWRITE)
        path.unlink(missing_ok=True)


def remove_tree(path: str | os.PathLike[str], *, sleep: Callable[[float], None] = time.sleep) -> str | None:
    """Delete a folder and everything in it; return None when it is gone, else one sentence saying what is
    left and why (for a warning). Read-only files (which Windows refuses to delete) are made writable first;
    locked ones are retried like :func:`rename`. A folder that does not exist counts as removed."""
    path = Path(path)
    error: OSError | None = None
    for delay in (*RETRY_DELAYS_S, None):
        if not path.exists():
            return None
        try:
            _rmtree(path)
            return None
        except FileNotFoundError:
            return None
        except OSError as exc:
            error = exc
            if delay is None or not isinstance(exc, PermissionError):
                break
            sleep(delay)
    return f"Could not delete {path}: {error.strerror or error}. Delete it by hand to free its space."


def _rmtree(path: Path) -> None:
    def clear_read_only(function, name, *_):  # Windows refuses to delete a file with the read-only attribute
        os.chmod(name, stat.S_IWRITE)
        function(name)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=clear_read_only)
    else:
        shutil.rmtree(path, onerror=clear_read_only)
