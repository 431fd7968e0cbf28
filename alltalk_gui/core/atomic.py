"""Atomic writes for user data.

Everything the app writes into a project goes through here: the bytes land in a temporary file in the same
folder, are flushed to disk, and only then replace the target with ``os.replace``. A crash, a full disk or a
kill at any moment leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from alltalk_gui.core import folders


@contextmanager
def atomic_path(target: str | os.PathLike[str], suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it replaces ``target``, on error it is removed.

    Use it for writers that want a path rather than a file object (soundfile, torch.save, shutil.copy).
    ``suffix`` keeps a file extension that such writers look at (``.wav``).
    """
    target = Path(target)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix + ".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        fsync_file(tmp)
        folders.rename(tmp, target, overwrite=True)  # os.replace, retried while Windows' indexer holds target
        fsync_dir(target.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(target: str | os.PathLike[str], data: bytes) -> None:
    """Atomically replace ``target`` with ``data``."""
    with atomic_path(target) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)


def write_text(target: str | os.PathLike[str], text: str) -> None:
    """Atomically replace ``target`` with UTF-8 ``text``."""
    write_bytes(target, text.encode("utf-8"))


def write_json(target: str | os.PathLike[str], obj: Any) -> None:
    """Atomically replace ``target`` with ``obj`` as indented, UTF-8 JSON (non-ASCII kept readable)."""
    write_text(target, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def copy_file(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copy ``source`` to ``target`` atomically, keeping the file's timestamps."""
    target = Path(target)
    suffix = target.suffix
    with atomic_path(target, suffix=suffix) as tmp:
        shutil.copy2(source, tmp)


def fsync_file(path: str | os.PathLike[str]) -> None:
    """Flush one file's data to disk through a *writable* handle.

    On Windows ``os.fsync`` is ``FlushFileBuffers``, which fails with EBADF ("Bad file descriptor") on a handle
    opened read-only; POSIX accepts either, so a writable handle works everywhere. A file that is itself
    read-only (``shutil.copy2`` keeps a read-only source's mode) is made writable for the flush and put back.
    """
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    except PermissionError:
        mode = os.stat(path).st_mode
        if mode & stat.S_IWUSR:
            raise
        os.chmod(path, mode | stat.S_IWUSR)
        try:
            fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
        finally:
            os.chmod(path, mode)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(folder: str | os.PathLike[str]) -> None:
    """Flush every file under ``folder`` to disk (:func:`fsync_file`), before the folder is renamed into place: a
    power cut after the rename must not leave a complete-looking folder of empty files."""
    for path in Path(folder).rglob("*"):
        if path.is_file():
            fsync_file(path)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename into or out of the folder ``path`` durable (a no-op on Windows, where os.replace already is)."""
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
