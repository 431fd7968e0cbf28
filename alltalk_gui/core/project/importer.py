"""Import recordings into a voice project.

For each file: check it exists and is not empty or too big, hash it (duplicates are refused by content, not
name), probe and decode it, copy the original untouched into ``sources/``, write a normalised mono working copy at
the recording's own rate (at most 48 kHz; :func:`alltalk_gui.core.audio.decode.working_rate`) into ``audio/``,
analyse it, and record it in project.json. A ``.txt`` of the same name beside the recording (its script) is copied
into ``known_text/<id>.txt`` at the same time, the one moment that folder is the user's own choice (see
:mod:`alltalk_gui.core.transcript.known_text`). Each file is its own transaction:
a file that fails at any stage (a damaged file, a header claiming gigabytes, memory running out) is reported
with a plain reason, leaves nothing behind, and the batch goes on with the next file.

project.json is saved every :data:`SAVE_EVERY_FILES` files or :data:`SAVE_EVERY_S` seconds, whichever comes
first, and at the end: with 5,000 sources one save writes about 15 MB and takes about a second, so saving after
every file made a large drop take hours. A save that fails (full disk) rolls back the files recorded since the
previous save, each reported with the reason. Duplicates are found through a hash index built once per batch.
"""

from __future__ import annotations

import errno
import hashlib
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

from alltalk_gui.core import atomic, folders
from alltalk_gui.core.portability import portable_names
from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.project.folder import Source, VoiceProject

MAX_FILE_BYTES = 4 * 1024**3  # larger files are refused before hashing; 2 h of 24-bit stereo wav is ~2 GB
MAX_SCRIPT_BYTES = 1 << 20  # a recording's script beside it: 1 MiB is hours of speech; a bigger .txt is no script
SAVE_EVERY_FILES = 100
SAVE_EVERY_S = 2.0  # a kill loses at most this much work; the copies it made stay in sources/ and audio/

# progress(done, total, current file name); cancel() -> True stops before the next file.
ProgressCallback = Callable[[int, int, str], None]
CancelCallback = Callable[[], bool]


@dataclass
class Rejection:
    """A file that was not imported and why, in words a user can act on."""

    path: str
    reason: str


@dataclass
class ImportReport:
    imported: list[Source] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    skipped_non_audio: int = 0  # files inside dropped folders that are not audio (documents, images...)
    cancelled: bool = False


def collect_files(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[Rejection], int]:
    """Expand folders recursively into audio files.

    Returns the files to import (in a stable order), rejections for named paths that cannot be used, and how
    many non-audio files were skipped inside folders. A file named explicitly with an unsupported extension is
    a rejection; the same file found inside a folder is only counted as skipped.
    """
    files: list[Path] = []
    rejected: list[Rejection] = []
    skipped = 0
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                if child.name.startswith("."):
                    continue
                if child.suffix.lower() in audio.SUPPORTED_EXTENSIONS:
                    files.append(child)
                else:
                    skipped += 1
        elif path.is_file():
            if path.suffix.lower() in audio.SUPPORTED_EXTENSIONS:
                files.append(path)
            else:
                rejected.append(Rejection(str(path), f"{path.name}: '{path.suffix or 'no extension'}' is not a "
                                          "supported audio or video format."))
        else:
            rejected.append(Rejection(str(path), f"{path}: no such file or folder."))
    return files, rejected, skipped


def import_files(project: VoiceProject, paths: Iterable[str | os.PathLike[str]],
                 progress: ProgressCallback | None = None, cancel: CancelCallback | None = None, *,
                 save_every_files: int = SAVE_EVERY_FILES, save_every_s: float = SAVE_EVERY_S) -> ImportReport:
    """Import files and folders into ``project``; never raises for a bad file, only reports it.

    Args:
        save_every_files, save_every_s: save project.json after this many accepted files or seconds.

    Raises:
        ProjectError / OSError only if the project itself is unusable (or open read-only) before any file is
        touched.
    """
    project.check_writable()
    files, rejected, skipped = collect_files(paths)
    report = ImportReport(rejected=rejected, skipped_non_audio=skipped)
    project.ensure_folders()
    batch = _Batch(project, report, save_every_files, save_every_s)
    try:
        for index, path in enumerate(files):
            if cancel and cancel():
                report.cancelled = True
                break
            if progress:
                progress(index, len(files), path.name)
            try:
                batch.add(*_import_one(project, path, batch.by_hash))
            except _Rejected as exc:
                report.rejected.append(Rejection(str(path), str(exc)))
    finally:
        batch.save()
    if progress:
        progress(len(files), len(files), "")
    return report


class _Batch:
    """The accepted files not yet in the saved project.json, and the hash index of every source."""

    def __init__(self, project: VoiceProject, report: ImportReport, every_files: int, every_s: float) -> None:
        self.project, self.report = project, report
        self.every_files, self.every_s = max(1, every_files), every_s
        self.by_hash = {s.sha256: s for s in project.sources}
        self.pending: list[tuple[Source, tuple[Path, ...]]] = []
        self.saved_at = time.monotonic()

    def add(self, source: Source, files: tuple[Path, ...]) -> None:
        self.project.sources.append(source)
        self.by_hash[source.sha256] = source
        self.report.imported.append(source)
        self.pending.append((source, files))
        if len(self.pending) >= self.every_files or time.monotonic() - self.saved_at >= self.every_s:
            self.save()

    def save(self) -> None:
        """Save project.json; if that fails, take the pending files out again (an OSError is reported for each
        of them, anything else, such as Ctrl+C, is raised after the roll-back)."""
        if not self.pending:
            return
        try:
            self.project.save()
        except BaseException as exc:
            for source, files in self.pending:
                self.project.sources.remove(source)
                del self.by_hash[source.sha256]
                self.report.imported.remove(source)
                _remove(*files)
                if isinstance(exc, OSError):
                    self.report.rejected.append(Rejection(
                        source.original_path, f"{source.name}: could not be written into the project "
                        f"({_os_reason(exc)}). Nothing was changed for this file."))
            self.pending = []
            if not isinstance(exc, OSError):
                raise
        self.pending = []
        self.saved_at = time.monotonic()


class _Rejected(Exception):
    pass


def _import_one(project: VoiceProject, path: Path, by_hash: dict[str, Source]) -> tuple[Source, tuple[Path, ...]]:
    """Copy, decode and analyse one file; returns its Source (not yet in project.json) and the files written.

    Raises:
        _Rejected: with the reason; whatever the failure, nothing of this file is left in the project.
    """
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise _Rejected(f"{path.name}: cannot be read ({exc.strerror}).") from exc
    if size == 0:
        raise _Rejected(f"{path.name} is empty (0 bytes).")
    if size > MAX_FILE_BYTES:
        raise _Rejected(f"{path.name} is {size / 1024**3:.1f} GB; the limit is {MAX_FILE_BYTES // 1024**3} GB. "
                        "Cut it into shorter recordings.")
    try:
        sha256 = _sha256(path)
    except OSError as exc:
        raise _Rejected(f"{path.name}: cannot be read ({exc.strerror}).") from exc
    existing = by_hash.get(sha256)
    if existing is not None:
        raise _Rejected(f"{path.name} is already in the project (same content as '{existing.name}').")

    source_id = sha256[:12]
    original = project.sources_dir / _free_name(project.sources_dir, path.name)
    working = project.audio_dir / f"{source_id}.wav"
    written: list[Path] = [original, working]
    try:
        audio.probe(path)  # before copying: a file that cannot be used is never copied
        atomic.copy_file(path, original)
        info, analysis = audio.make_working_copy(original, working)
        verdict, reasons = audio.judge(analysis, info)
        written += _copy_script(path.with_suffix(".txt"), project.known_text_dir / f"{source_id}.txt")
        return Source(
            id=source_id,
            name=path.name,
            file=original.relative_to(project.root).as_posix(),
            audio_file=working.relative_to(project.root).as_posix(),
            sha256=sha256,
            size_bytes=size,
            imported_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            original_path=str(path.absolute()),
            analysis={**_info_dict(info), **analysis},
            verdict=verdict,
            reasons=reasons,
        ), tuple(written)
    except BaseException as exc:
        _remove(*written)
        if isinstance(exc, audio.AudioError):
            raise _Rejected(str(exc)) from exc
        if isinstance(exc, OSError):
            raise _Rejected(f"{path.name}: could not be written into the project ({_os_reason(exc)}). "
                            "Nothing was changed for this file.") from exc
        if isinstance(exc, MemoryError):
            raise _Rejected(f"{path.name}: there was not enough free memory to decode it. Nothing was changed "
                            "for this file; close other programs or cut it into shorter parts.") from exc
        if isinstance(exc, Exception):  # a decoder bug on a strange file must not end the whole batch
            raise _Rejected(f"{path.name} could not be imported ({type(exc).__name__}: {exc}). Nothing was "
                            "changed for this file.") from exc
        raise


def _copy_script(script: Path, target: Path) -> list[Path]:
    """Copy a recording's script (UTF-8 text beside it) to ``target``; returns what was written. A missing,
    unreadable, empty, oversized or non-UTF-8 file is no script and is skipped; an existing known text stays."""
    try:
        if target.exists() or not script.is_file() or script.stat().st_size > MAX_SCRIPT_BYTES:
            return []
        text = script.read_bytes().decode("utf-8-sig").strip()
    except (OSError, UnicodeDecodeError):
        return []
    if not text:
        return []
    target.parent.mkdir(exist_ok=True)
    atomic.write_text(target, text + "\n")
    return [target]


def _info_dict(info: audio.AudioInfo) -> dict:
    return {
        "sample_rate": info.sample_rate,
        "channels": info.channels,
        "codec": info.codec,
        "bit_depth": info.bit_depth,
        "container": info.container,
    }


def _os_reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "the disk is full"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "the project folder is read-only"
    return exc.strerror or str(exc)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1024 * 1024), b""):
            digest.update(block)
    return digest.hexdigest()


def _free_name(folder: Path, name: str) -> str:
    """``name`` as a name Windows takes too (a project moves between systems: ``what?.wav`` or ``con.wav`` from a
    Linux disk would be lost in the copy), or ``stem-2.ext``, ``stem-3.ext``... if a different file of that name
    was imported before, in any case (``Take.wav`` and ``take.wav`` are one file on Windows)."""
    taken = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    return portable_names.unique_name(portable_names.portable_name(name, fallback="recording"), taken)


def _remove(*paths: Path) -> None:
    for p in paths:
        try:
            folders.remove_file(p)  # the copy of a read-only original is read-only too (Windows refuses to delete it)
        except OSError:
            pass
