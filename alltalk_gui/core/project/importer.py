"""Import recordings into a voice project.

For each file: check it exists and is not empty or too big, hash it (duplicates are refused by content, not
name), probe and decode it, copy the original untouched into ``sources/``, write a normalised mono 22 050 Hz
working copy into ``audio/``, analyse it, and record it in project.json. Each file is its own transaction:
a file that fails at any stage is reported with a plain reason and leaves nothing behind, and project.json is
saved after every accepted file, so a crash or a full disk half-way keeps every file imported before it.
"""

from __future__ import annotations

import errno
import hashlib
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable

from alltalk_gui.core import atomic
from alltalk_gui.core.audio import decode as audio
from alltalk_gui.core.project.folder import Source, VoiceProject

MAX_FILE_BYTES = 4 * 1024**3  # larger files are refused before hashing; 2 h of 24-bit stereo wav is ~2 GB

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
                 progress: ProgressCallback | None = None, cancel: CancelCallback | None = None) -> ImportReport:
    """Import files and folders into ``project``; never raises for a bad file, only reports it.

    Raises:
        ProjectError / OSError only if the project folder itself is unusable before any file is touched.
    """
    files, rejected, skipped = collect_files(paths)
    report = ImportReport(rejected=rejected, skipped_non_audio=skipped)
    project.ensure_folders()
    for index, path in enumerate(files):
        if cancel and cancel():
            report.cancelled = True
            break
        if progress:
            progress(index, len(files), path.name)
        try:
            report.imported.append(_import_one(project, path))
        except _Rejected as exc:
            report.rejected.append(Rejection(str(path), str(exc)))
    if progress:
        progress(len(files), len(files), "")
    return report


class _Rejected(Exception):
    pass


def _import_one(project: VoiceProject, path: Path) -> Source:
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
    existing = project.find_by_hash(sha256)
    if existing is not None:
        raise _Rejected(f"{path.name} is already in the project (same content as '{existing.name}').")
    try:
        audio.probe(path)
    except audio.AudioError as exc:
        raise _Rejected(str(exc)) from exc

    source_id = sha256[:12]
    original = project.sources_dir / _free_name(project.sources_dir, path.name)
    working = project.audio_dir / f"{source_id}.wav"
    try:
        atomic.copy_file(path, original)
        info, analysis = audio.make_working_copy(original, working)
        verdict, reasons = audio.judge(analysis, info)
        source = Source(
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
        )
        project.sources.append(source)
        try:
            project.save()
        except BaseException:
            project.sources.remove(source)
            raise
        return source
    except audio.AudioError as exc:
        _remove(original, working)
        raise _Rejected(str(exc)) from exc
    except OSError as exc:
        _remove(original, working)
        raise _Rejected(f"{path.name}: could not be written into the project ({_os_reason(exc)}). "
                        "Nothing was changed for this file.") from exc


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
    """``name``, or ``stem-2.ext``, ``stem-3.ext``... if a different file of that name was imported before."""
    candidate = name
    stem, suffix = Path(name).stem, Path(name).suffix
    n = 2
    while (folder / candidate).exists():
        candidate = f"{stem}-{n}{suffix}"
        n += 1
    return candidate


def _remove(*paths: Path) -> None:
    for p in paths:
        try:
            p.unlink(missing_ok=True)
        except OSError:
            pass
