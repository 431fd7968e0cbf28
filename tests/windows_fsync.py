"""``os.fsync`` as Windows does it, for tests on Linux.

On Windows ``os.fsync`` calls ``_commit`` -> ``FlushFileBuffers``, which needs a handle with write access: a file
opened read-only fails with ``OSError: [Errno 9] Bad file descriptor``. Linux flushes either kind, so code that
fsyncs a read-only descriptor passes every test here and fails every save on Windows. :func:`refuse_read_only`
makes ``os.fsync`` behave like Windows for regular files, so such code fails here too.

Directories are let through: the code fsyncs a folder only where ``os.name == "posix"`` (Windows cannot open
one for fsync at all), and that path must keep working under the emulation on Linux.

Used by ``tests/conftest.py``: always for :data:`MODULES` (the atomic-write, project, checkpoint and export
tests), and for every test when ``ALLTALK_TEST_WINDOWS_FSYNC=1`` is set (a whole session under Windows' rule).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Callable

# Test modules (paths from the repository root) that always run under Windows' fsync rule: everything that
# writes through alltalk_gui.core.atomic, saves checkpoints or publishes an export folder.
MODULES = (
    "tests/core/test_atomic.py",
    "tests/core/test_folders.py",
    "tests/core/project/test_project.py",
    "tests/core/project/test_importer.py",
    "tests/core/dataset/test_dataset_export.py",
    "tests/core/training/test_train_loop.py",
    "tests/core/voice/test_export.py",
    "tests/core/voice/test_preview_checkpoints.py",
)
SESSION_ENV = "ALLTALK_TEST_WINDOWS_FSYNC"


def windows_like(real_fsync: Callable[[int], None]) -> Callable[[int], None]:
    """An ``os.fsync`` that raises EBADF for a regular file opened read-only, as Windows does."""

    import fcntl  # POSIX only; on Windows the real os.fsync already behaves this way

    def fsync(fd: int) -> None:
        if hasattr(fd, "fileno"):
            fd = fd.fileno()
        read_only = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
        if read_only and stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EBADF, "Bad file descriptor (Windows refuses to flush a read-only handle)")
        real_fsync(fd)

    return fsync


def refuse_read_only(monkeypatch) -> None:
    """Apply :func:`windows_like` to ``os.fsync`` for the current test (on Windows the real one already does)."""
    if os.name != "nt":
        monkeypatch.setattr(os, "fsync", windows_like(os.fsync))
