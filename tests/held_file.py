"""A file the kernel really refuses to replace, as Windows refuses one that another program holds open.

On Windows ``os.replace`` onto a file that a media player, a spreadsheet or a sync tool has open fails with
``PermissionError`` (WinError 5 or 32) while the folder itself stays writable. Linux has no such locks; the nearest
real refusal is the immutable attribute (``chattr +i``, root on ext4/xfs/btrfs): the folder stays writable, the
temporary file is written beside the target, and the kernel answers the rename over it with EPERM. Without root, a
folder made read-only after the temporary file exists gives EACCES for the same rename.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest


class Hold:
    """``hold()`` makes replacing ``path`` fail; ``release()`` lets it succeed again (a program closing the file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.held = False
        self._mode: int | None = None

    def hold(self) -> None:
        if os.geteuid() == 0:
            done = subprocess.run(["chattr", "+i", str(self.path)], capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(f"chattr +i is not possible here: {done.stderr.strip()}")
        else:
            self._mode = self.path.parent.stat().st_mode
            self.path.parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
        self.held = True

    def release(self, *_ignored) -> None:
        if not self.held:
            return
        if self._mode is None:
            subprocess.run(["chattr", "-i", str(self.path)], check=True, capture_output=True)
        else:
            self.path.parent.chmod(self._mode)
        self.held = False


def holdable(path: Path) -> Hold:
    """A :class:`Hold` on ``path``; skips the test where neither way exists."""
    if os.geteuid() == 0 and shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    return Hold(path)
