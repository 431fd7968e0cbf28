"""Disk space: how much is free where something will be written, and the words for a write that failed.

A checkpoint of the real XTTS v2 GPT with AdamW state is about 5 GB, an F5-TTS one about 4 GB, an export 1-2 GB,
a dataset tens of MB per minute of audio: a disk can fill in the middle of any of them. Every writer of big
things (training checkpoints, the dataset export, the model export) says the same when that happens: what it
was writing, where, about how much it needs there and how much is free, and that the partial copy was removed.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from alltalk_gui.core.folders import FileInUseError

# Errors that mean "no room": a full disk, a user's quota, a file larger than the file system or a limit allows.
FULL_ERRNOS = frozenset(code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None), errno.EFBIG) if code)


def free_bytes(path: str | os.PathLike[str]) -> int:
    """Free bytes (for this user) on the file system that holds ``path``, or would hold it: the nearest folder
    that exists is measured, so a run or export folder need not exist yet."""
    folder = Path(path).absolute()
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return shutil.disk_usage(folder).free


def out_of_room(folder: str | os.PathLike[str], needed: int = 0) -> bool:
    """Whether the file system holding ``folder`` has less than ``needed`` bytes free, or no file entries
    (inodes) left: a disk is full either way (``df`` and ``df -i``)."""
    try:
        return free_bytes(folder) < needed or _no_inodes(folder)
    except OSError:
        return False


def _no_inodes(folder: str | os.PathLike[str]) -> bool:
    """Whether the file system has no file entries left (POSIX; Windows has no such limit to ask about)."""
    if not hasattr(os, "statvfs"):
        return False
    path = Path(folder).absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_files > 0 and st.f_favail == 0


def as_os_error(exc: BaseException, folder: str | os.PathLike[str], needed: int = 0) -> OSError:
    """``exc`` as an OSError with an errno. torch's file writer reports a failed write as a RuntimeError without
    one ("File ... cannot be opened", "file write failed"): that becomes ENOSPC when the file system is out of room
    (:func:`out_of_room`), else EIO with its text."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc
    if out_of_room(folder, needed):
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder))
    return OSError(errno.EIO, f"{os.strerror(errno.EIO)} ({exc})", str(folder))


def is_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the user's quota) is full."""
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS


def size_text(n: int | float) -> str:
    """``5.31 GB``, ``740 MB``, ``12 kB``: decimal units, as file managers and ``df -H`` show them."""
    for unit, scale, decimals in (("GB", 1e9, 2), ("MB", 1e6, 0), ("kB", 1e3, 0)):
        if n >= scale or unit == "kB":
            return f"{n / scale:.{decimals}f} {unit}"
    return f"{n} B"  # pragma: no cover - the loop returns at kB


def reason(exc: OSError) -> str:
    """The cause of a failed write in words: "the disk is full", "the folder is read-only", or the system's text."""
    if is_full(exc):
        return "the disk is full" if exc.errno != errno.EFBIG else "the file is larger than the disk allows"
    if isinstance(exc, FileInUseError):  # Windows: a file held open, which the system calls "access denied"
        return exc.reason
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "the folder cannot be written (read-only or no permission)"
    return exc.strerror or str(exc)


def write_failed(what: str, folder: str | os.PathLike[str], exc: OSError, needed: int | None = None) -> str:
    """One sentence for a write that failed: ``what`` could not be written to ``folder`` because ..., about
    ``needed`` is needed there and so much is free. The caller adds what was kept and what to do."""
    figures = []
    if is_full(exc) or needed is not None:
        if needed is not None:
            figures.append(f"about {size_text(needed)} needed there")
        try:
            figures.append(f"{size_text(free_bytes(folder))} free")
        except OSError:
            pass
        if _no_inodes(folder):
            figures.append("but no room for more files")
    details = f" ({', '.join(figures)})" if figures else ""
    return f"{what} could not be written to {folder}: {reason(exc)}{details}."
