"""Publishing an exported model folder so that it is never seen half-written, for every engine's export.

An engine's export writes its files inside :func:`staged_export` and this module does the rest.

An export is written into a hidden staging folder beside its target (:func:`staging_folder`), flushed, made
readable by all (:func:`readable_by_all`: AllTalk often runs as another user) and renamed into place at the end
(:func:`publish`): an existing target is moved aside first and removed after, so at every moment the target is
the old folder or the complete new one. A kill between those two renames leaves the old folder only under its
hidden name: :func:`recover_interrupted` puts it back before the next export of that name, and
:func:`remove_stale_temporaries` clears what a killed export left. A write that fails midway (the disk filled up
after :func:`prepare_output`'s check, an I/O error) removes the staging folder and is reported by
:func:`undone`: where, about how much is needed and free, and that the folder there before is as it was.
Renames and removals go through :mod:`alltalk_gui.core.folders`, which retries while Windows reports a file as
held (an antivirus scan).
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from alltalk_gui.core import atomic, folders
from alltalk_gui.core.machine import disk
from alltalk_gui.core.voice.export import ExportError


def prepare_output(out_dir: Path, needed_bytes: int) -> None:
    """Create ``out_dir`` and check it has room for an export of ``needed_bytes``, before anything is written.

    Raises:
        ExportError: the folder cannot be created, or the disk is too full.
    """
    from alltalk_gui.core.voice import export as neutral

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"Cannot create the output folder {out_dir}: {exc.strerror or exc}.") from exc
    free = neutral.disk_free_bytes(out_dir)  # through the module: tests simulate a full disk there
    if free < needed_bytes:
        raise ExportError(f"Not enough free space in {out_dir}: the export needs about {disk.size_text(needed_bytes)} "
                          f"and {disk.size_text(free)} are free. Free some space or export somewhere else.")


def staging_folder(out_dir: Path, name: str) -> Path:
    """A new hidden folder in ``out_dir`` to write the export of ``name`` into (0755: others may read it)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.export-", dir=out_dir))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; the model folder is for AllTalk (often another user) to read
    return tmp


def check_target(target: Path, overwrite: bool) -> None:
    if target.exists() and not target.is_dir():
        raise ExportError(f"{target} is a file; choose another name or output folder.")
    if target.is_dir() and any(target.iterdir()) and not overwrite:
        raise ExportError(f"{target} already exists and is not empty. Choose another name, or allow "
                          "overwriting (--overwrite) to replace it.")


def recover_interrupted(out_dir: Path, name: str) -> None:
    """Put back a previous export that a kill between :func:`publish`'s two renames left only as
    ``.NAME.old-*`` (the target itself gone). Runs before the target is checked, so the recovered folder is
    treated like any existing one: refused without ``overwrite``, replaced with it."""
    target = out_dir / name
    if target.exists() or not out_dir.is_dir():
        return
    set_aside = sorted(out_dir.glob(f".{name}.old-*"), key=lambda p: p.stat().st_mtime)
    if set_aside:
        folders.rename(set_aside[-1], target)


def remove_stale_temporaries(out_dir: Path, name: str) -> list[str]:
    """Remove hidden folders left by an export of the same name that was killed midway (after recovery: the
    target exists, so any ``.old-*`` left is an older copy of it); returns a sentence for each one that could not
    be deleted (a model folder is hundreds of MB: the user should know)."""
    if not (out_dir / name).exists() and any(out_dir.glob(f".{name}.old-*")):
        return []  # never delete the only copy
    stale = [*out_dir.glob(f".{name}.export-*"), *out_dir.glob(f".{name}.old-*")]
    return [problem for problem in map(folders.remove_tree, stale) if problem]


def readable_by_all(folder: Path) -> None:
    """Files 0644, folders 0755: AllTalk often runs as another user (a service), and atomic writes and copies of
    a private base model would otherwise leave README.md, export_info.json, wavs or weights readable by us only.
    (On Windows chmod only sets or clears the read-only flag; these modes leave files writable, as before.)"""
    for path in folder.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    os.chmod(folder, 0o755)


def publish(tmp: Path, target: Path) -> list[str]:
    """Rename the finished folder into place. An existing target is moved aside first and removed after, so at
    every moment either the old folder or the complete new one is at ``target``. Renames are retried while
    Windows reports a file as held (an antivirus scanning the new model); returns a sentence when the old
    folder could not be deleted afterwards."""
    problems = []
    if target.exists():
        aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        os.rmdir(aside)  # only the unique name was wanted
        folders.rename(target, aside)
        try:
            folders.rename(tmp, target)
        except OSError:
            folders.rename(aside, target)
            raise
        problems = [p for p in [folders.remove_tree(aside)] if p]
    else:
        folders.rename(tmp, target)
    atomic.fsync_dir(target.parent)
    return problems


def undone(exc: BaseException, tmp: Path, target: Path, needed: int | None = None) -> str | None:
    """Remove the staging folder ``tmp`` of a failed export; return the sentence to raise for a failed write (an
    OSError, or torch's RuntimeError when the disk is out of room), None for anything else (raised as it is)."""
    if isinstance(exc, RuntimeError) and disk.out_of_room(target.parent):  # torch.save names no errno
        exc = disk.as_os_error(exc, target.parent)
    failed = disk.write_failed(f"The export {target.name}", target.parent, exc, needed) \
        if isinstance(exc, OSError) else ""  # while the partial files still take their room
    left = folders.remove_tree(tmp)
    if not isinstance(exc, OSError):
        return None
    before = "the folder that was there before is as it was" if target.exists() else "nothing was left behind"
    advice = " Free some space or export somewhere else." if disk.is_full(exc) else ""
    return f"{failed} It was undone: {before}.{advice}" + (f" {left}" if left else "")


@dataclass
class StagedExport:
    """An export being written (:func:`staged_export`): write into ``folder``; after the block, ``files`` lists
    what the published ``target`` holds and ``warnings`` what the user should know."""

    folder: Path
    target: Path
    warnings: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


@contextmanager
def staged_export(target: Path, overwrite: bool, needed: int | None = None,
                  error: type[Exception] = ExportError) -> Iterator[StagedExport]:
    """The tail every engine's export shares: a previous export's remains recovered or cleared, the target checked
    (``overwrite``), a staging folder to write into; when the block ends, every file flushed, made readable by all
    and the folder renamed into place. A failure removes the staging folder and leaves the target as it was; an
    OSError (a full disk) is worded by :func:`undone` and raised as ``error`` (an engine's own ExportError).

    Raises:
        ``error``: the target is taken, or the write failed (undone).
    """
    target = Path(target)
    recover_interrupted(target.parent, target.name)
    try:
        check_target(target, overwrite)
    except ExportError as exc:
        raise (exc if error is ExportError else error(str(exc))) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    warnings = remove_stale_temporaries(target.parent, target.name)
    staged = StagedExport(staging_folder(target.parent, target.name), target, warnings)
    try:
        yield staged
        atomic.fsync_tree(staged.folder)
        readable_by_all(staged.folder)
        staged.warnings += publish(staged.folder, target)
    except BaseException as exc:
        message = undone(exc, staged.folder, target, needed)
        if message is not None:
            raise error(message) from exc
        raise
    staged.files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
