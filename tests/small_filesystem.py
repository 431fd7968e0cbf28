"""Real small file systems for the disk-full tests, and a write that fails midway where none can be mounted.

:func:`tmpfs` mounts a tmpfs over a test folder: a real file system whose size (bytes) and number of files
(inodes) can be lowered while a test runs (``remount``), so that the kernel itself answers a write with ENOSPC.
Mounting needs root (or CAP_SYS_ADMIN); :func:`tmpfs_available` says whether this machine allows it, and the
tests fall back to :func:`failing_weights_write` elsewhere: the library call that writes a checkpoint's weights
(safetensors' ``save_file``, as accelerate calls it) writes the first bytes of the real file and then raises the
OSError a full disk gives.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator


class Tmpfs:
    """A tmpfs mounted at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _mount(self, *options: str, remount: bool = False) -> None:
        opts = ",".join((["remount"] if remount else []) + ["mode=0755", *options])
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(self.path)], check=True,
                       capture_output=True, text=True, timeout=30)

    def remount(self, *, size: int | None = None, inodes: int | None = None) -> None:
        """New limits (bytes, files) for what is already there; below the usage, new writes fail with ENOSPC."""
        options = ([f"size={size}"] if size is not None else []) + ([f"nr_inodes={inodes}"] if inodes else [])
        self._mount(*options, remount=True)

    def used(self) -> tuple[int, int]:
        """(bytes, inodes) in use."""
        st = os.statvfs(self.path)
        return (st.f_blocks - st.f_bfree) * st.f_frsize, st.f_files - st.f_ffree

    def unmount(self) -> None:
        subprocess.run(["umount", "-l", str(self.path)], check=False, capture_output=True, timeout=30)


@functools.lru_cache(maxsize=1)
def tmpfs_available() -> bool:
    """Whether this process may mount a tmpfs (Linux, root or CAP_SYS_ADMIN, and ``mount`` present)."""
    if not sys.platform.startswith("linux") or not shutil.which("mount"):
        return False
    with tempfile.TemporaryDirectory() as folder:
        try:
            Tmpfs(Path(folder))._mount("size=1m")
        except (OSError, subprocess.SubprocessError):
            return False
        Tmpfs(Path(folder)).unmount()
    return True


@contextlib.contextmanager
def tmpfs(path: Path, size: int = 256 << 20) -> Iterator[Tmpfs]:
    """A tmpfs of ``size`` bytes mounted at ``path`` (created), unmounted at the end (lazily: never blocks)."""
    path.mkdir(parents=True, exist_ok=True)
    mount = Tmpfs(path)
    mount._mount(f"size={size}")
    try:
        yield mount
    finally:
        mount.unmount()


def failing_weights_write(monkeypatch, fail_call: int, error: int = errno.ENOSPC) -> list[str]:
    """Make the ``fail_call``-th checkpoint weights file written through accelerate stop halfway: its first half is
    written to the real file, then ``OSError(error)`` is raised, as a full disk does to a write. The calls before
    it write normally. Returns the list of files written so far (for the test to see)."""
    import safetensors.torch
    from accelerate.utils import other

    real = other.safe_save_file
    calls: list[str] = []

    def save_file(tensors, filename, metadata=None):
        calls.append(str(filename))
        if len(calls) != fail_call:
            return real(tensors, filename, metadata=metadata)
        data = safetensors.torch.save(tensors, metadata=metadata)
        with open(filename, "wb") as f:
            f.write(data[: len(data) // 2])
        raise OSError(error, os.strerror(error), str(filename))

    monkeypatch.setattr(other, "safe_save_file", save_file)
    return calls
