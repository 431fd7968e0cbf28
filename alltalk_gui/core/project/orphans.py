"""Files in a project that no recording owns: what a killed import leaves behind, found on the next open.

The import copies each file into ``sources/``, writes its working copy into ``audio/`` (and its script into
``known_text/``) and records it in ``project.json`` every 100 files or 2 seconds (:mod:`.importer`): a kill in
between leaves copies that ``project.json`` does not list. They are harmless (importing the files again works) but
take space for ever. :func:`find_orphans` lists them, and the hidden temporary files of a copy that was cut off;
with the user's consent (the app asks when it opens the project; the command line's ``sources DIR --clean``)
:func:`adopt_orphans` imports the originals as recordings, as if they had just been dropped, and
:func:`remove_orphans` deletes them. Nothing is touched without being asked, and only the project's own folders
are looked at (no links followed out of them).
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from alltalk_gui.core import folders, safe_paths
from alltalk_gui.core.project.folder import VoiceProject

if TYPE_CHECKING:  # the importer loads the audio decoders: only adopt_orphans needs it
    from alltalk_gui.core.project.importer import CancelCallback, ImportReport, ProgressCallback

ADOPTING = ".adopting-"  # a hidden folder the originals wait in while they are imported again (same disk)


@dataclass
class Orphans:
    """The project's files that no recording in project.json owns."""

    originals: list[Path] = field(default_factory=list)   # in sources/ (or waiting in a hidden adopting folder)
    working: list[Path] = field(default_factory=list)     # working copies in audio/
    scripts: list[Path] = field(default_factory=list)     # known texts in known_text/
    partial: list[Path] = field(default_factory=list)     # hidden temporaries of a copy that was cut off

    def __bool__(self) -> bool:
        return bool(self.originals or self.working or self.scripts or self.partial)

    @property
    def files(self) -> list[Path]:
        return [*self.originals, *self.working, *self.scripts, *self.partial]

    @property
    def size_bytes(self) -> int:
        return sum(_size(p) for p in self.files)

    def summary(self) -> str:
        """"3 recordings (take1.wav, take2.wav, take3.wav) and 3 working copies and partial files, 12.4 MB in all,
        are in the project folder but not in the project (an import was interrupted)"."""
        parts = []
        if self.originals:
            names = ", ".join(p.name for p in self.originals[:5]) + (", ..." if len(self.originals) > 5 else "")
            parts.append(f"{len(self.originals)} recording{'s' * (len(self.originals) != 1)} ({names})")
        others = len(self.working) + len(self.scripts) + len(self.partial)
        if others:
            parts.append(f"{others} working cop{'ies' if others != 1 else 'y'} and partial file{'s' * (others != 1)}")
        return (f"{' and '.join(parts)}, {self.size_bytes / 1e6:.1f} MB in all, are in the project folder but not in "
                "the project (an import was interrupted)")


def find_orphans(project: VoiceProject) -> Orphans:
    """The files in ``sources/``, ``audio/`` and ``known_text/`` that no source of ``project`` owns."""
    owned = {project.root / s.file for s in project.sources} | {project.root / s.audio_file for s in project.sources}
    ids = {s.id for s in project.sources}
    found = Orphans()
    for folder, bucket in ((project.sources_dir, found.originals), (project.audio_dir, found.working)):
        for path in _files(folder, project.root):
            if path.name.startswith("."):
                found.partial.append(path)  # atomic writes' temporaries (".name.xxxx.wav.tmp")
            elif path not in owned:
                bucket.append(path)
    for path in _files(project.known_text_dir, project.root):
        if path.name.startswith(".") or path.stem not in ids:
            (found.partial if path.name.startswith(".") else found.scripts).append(path)
    for waiting in sorted(project.root.glob(f"{ADOPTING}*")):  # a kill while they were being imported again
        found.originals += [p for p in _files(waiting, project.root) if not p.name.startswith(".")]
    return found


def remove_orphans(project: VoiceProject, orphans: Orphans) -> list[str]:
    """Delete the orphaned files; returns a sentence for each one that could not be deleted.

    Raises:
        ProjectError: the project is open read-only.
    """
    project.check_writable()
    problems = []
    for path in orphans.files:
        try:
            folders.remove_file(path)  # a read-only copy too (Windows refuses to delete one as it is)
        except OSError as exc:
            problems.append(f"Could not delete {path}: {exc.strerror or exc}.")
    for waiting in project.root.glob(f"{ADOPTING}*"):
        shutil.rmtree(waiting, ignore_errors=True)
    return problems


def adopt_orphans(project: VoiceProject, orphans: Orphans, progress: ProgressCallback | None = None,
                  cancel: CancelCallback | None = None) -> ImportReport:
    """Import the orphaned originals as recordings (checked, analysed and recorded as any import), then delete the
    working copies and scripts that still belong to nothing. An original that cannot be imported goes back to
    ``sources/`` (the report says why); nothing is lost to a kill in between (see :func:`find_orphans`).

    Raises:
        ProjectError: the project is open read-only.
    """
    from alltalk_gui.core.project.importer import import_files

    project.check_writable()
    waiting = project.root / f"{ADOPTING}{uuid.uuid4().hex[:8]}"
    waiting.mkdir()
    moved = []
    for path in orphans.originals:  # out of sources/, so that each keeps its own name there when imported
        target = waiting / path.name
        if target.exists():
            target = waiting / f"{uuid.uuid4().hex[:6]}-{path.name}"
        os.replace(path, target)
        moved.append(target)
    report = import_files(project, moved, progress=progress, cancel=cancel)
    imported = {Path(source.original_path) for source in report.imported}
    for source in report.imported:  # they came from the project itself, not from where the user keeps them
        source.original_path = ""
    if report.imported:
        project.save()
    for path in moved:
        if path.absolute() not in imported:  # refused or cancelled: back where it was
            os.replace(path, _free(project.sources_dir / path.name))
    shutil.rmtree(waiting, ignore_errors=True)
    leftovers = find_orphans(project)  # what no recording owns even now (a refused original's copy stays)
    remove_orphans(project, Orphans(working=leftovers.working, scripts=leftovers.scripts, partial=leftovers.partial))
    return report


def _files(folder: Path, root: Path) -> list[Path]:
    """The plain files directly in ``folder`` that really lie inside the project (a link out is none of them)."""
    if not folder.is_dir() or not safe_paths.is_inside(folder, root):
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink() and safe_paths.is_inside(p, root))


def _free(path: Path) -> Path:
    n = 2
    candidate = path
    while candidate.exists():
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
        n += 1
    return candidate


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0

