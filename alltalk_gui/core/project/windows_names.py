"""Names inside a project folder that Windows cannot hold, said when the project is opened, not when a copy to
Windows loses the file or training fails to read it.

A project made on Linux (or by a version before :mod:`~alltalk_gui.core.portability.portable_names` named the
copies) may hold a recording copied as ``sources/take:1.wav`` or ``sources/aux.wav``, a folder ``notes.`` or two
files that differ only by case (``Anna.wav``, ``anna.wav``). Windows refuses the first (Explorer and zip tools skip
it or stop), opens the console device for the second, drops the dot of the third and keeps one of the last two.
:func:`windows_name_problems` lists every such name with why; :func:`rename_recordings` gives the recordings the
project records (its ``sources/`` copies, named in project.json) names Windows takes; anything else the user
renames (the app names nothing else from what people type).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from alltalk_gui.core.portability.portable_names import portable_name, unique_name, windows_problem
from alltalk_gui.core.project.errors import ProjectError
from alltalk_gui.core.project.folder import VoiceProject

SHOWN = 8  # names a summary lists before "and N more"


@dataclass(frozen=True)
class NameProblem:
    """A name in the project folder Windows cannot hold: ``path`` relative to the folder (``/``-separated)."""

    path: str
    why: str
    recording: bool = False  # a recording's copy that project.json names: rename_recordings renames it
    missing: bool = False    # named by project.json, not in the folder: lost when the project was copied to Windows


def windows_name_problems(project: VoiceProject) -> list[NameProblem]:
    """Every file or folder name below ``project.root`` that Windows refuses, changes or takes for a device, and
    every name that differs from another in its folder only by case; sorted by path, folders' contents not
    repeated when the folder's own name is the problem."""
    recorded = {s.file for s in project.sources}
    problems = []
    for folder, dirs, files in os.walk(project.root):
        here = PurePosixPath(Path(folder).relative_to(project.root).as_posix())
        seen: dict[str, str] = {}
        for name in sorted(dirs + files):
            path = (here / name).as_posix().removeprefix("./")
            why = windows_problem(name)
            if why is None and name.casefold() in seen:
                why = f"Windows keeps one of this and '{seen[name.casefold()]}': they differ only by case"
            seen.setdefault(name.casefold(), name)
            if why is not None:
                problems.append(NameProblem(path, why, recording=path in recorded))
        dirs[:] = [d for d in dirs if windows_problem(d) is None]  # a bad folder is one problem, not one per file
    found = {p.path for p in problems}
    for source in project.sources:  # a copy to Windows skipped them (or Windows cannot even look them up)
        for file in (source.file, source.audio_file):
            why = next(filter(None, map(windows_problem, PurePosixPath(file).parts)), None)
            if why is not None and file not in found:
                problems.append(NameProblem(file, why, recording=True, missing=True))
                found.add(file)
    return sorted(problems, key=lambda p: p.path)


def worth_saying(project: VoiceProject, on_windows: bool = sys.platform == "win32") -> list[NameProblem]:
    """The problems to say when ``project`` is opened: on Windows all of them (there they are files a copy lost or
    will trip over); elsewhere only where the app's own copies of recordings are among them (the app made those
    names and renames them in one click), so a project that only holds a user's own 'notes.' folder or two names
    that differ by case on Linux is not nagged about at every opening. Elsewhere the project folder is walked only
    when a recording's copy may be among them (its own name, or one differing from another's only by case): every
    CLI command and every opening asks."""
    if not on_windows and not _copies_may_clash(project):
        return []
    problems = windows_name_problems(project)
    if on_windows or any(p.recording and not p.missing for p in problems):
        return problems
    return []


def _copies_may_clash(project: VoiceProject) -> bool:
    """Whether a recording's copy may be among :func:`windows_name_problems`' findings: a name project.json gives it
    that Windows cannot hold, or a folder holding copies (``sources/``) with two names that differ only by case.
    One listing of each such folder, not a walk of the project."""
    files = [PurePosixPath(s.file) for s in project.sources]
    if any(windows_problem(part) is not None for file in files for part in file.parts):
        return True
    for folder in {file.parent for file in files}:
        try:
            names = os.listdir(project.root / folder)
        except OSError:  # gone: the walk finds nothing there either
            continue
        if len({name.casefold() for name in names}) < len(names):
            return True
    return False


def summary(problems: list[NameProblem]) -> str:
    """The problems in words, with what to do; "" when there are none."""
    if not problems:
        return ""
    lines = [f"  {p.path}: {p.why}" for p in problems[:SHOWN]]
    if len(problems) > SHOWN:
        lines.append(f"  and {len(problems) - SHOWN} more")
    missing = sum(p.missing for p in problems)
    recordings = sum(p.recording and not p.missing for p in problems)
    others = len(problems) - recordings - missing
    todo = []
    if missing:
        todo.append(f"the {missing} recording(s) named but not in the folder were lost when the project was copied: "
                    "open it on the computer it came from, let the app rename its recordings there, and copy it again")
    if recordings:
        todo.append(f"let the app rename the {recordings} recording copy(ies) (the recordings keep their names in "
                    "the app)")
    if others:
        todo.append(f"rename the other {others} yourself before copying the project to Windows")
    return (f"{len(problems)} name(s) in the project folder cannot be used on Windows; copying the project there "
            "would lose or change those files:\n" + "\n".join(lines) + "\nTo fix it, " + "; ".join(todo) + ".")


def rename_recordings(project: VoiceProject) -> list[str]:
    """Give every recording copy whose name Windows cannot hold (``sources/``, as project.json names it) a name it
    takes, as an import names copies now (``take:1.wav`` -> ``take_1.wav``, ``aux.wav`` -> ``aux_.wav``, a name
    that differs from another only by case -> ``name-2.wav``), and save the project. Returns the renames in words.

    Raises:
        ProjectError: the project is read-only, or a rename or the save failed (every file renamed so far is
            renamed back).
    """
    project.check_writable()
    bad = {p.path for p in windows_name_problems(project) if p.recording and not p.missing}
    done: list[tuple[Path, Path, object, str]] = []
    try:
        for source in project.sources:
            if source.file not in bad:
                continue
            old = project.root / source.file
            taken = [p.name for p in old.parent.iterdir() if p != old]
            new = old.with_name(unique_name(portable_name(old.name, fallback="recording"), taken))
            os.rename(old, new)  # os.rename refuses nothing on POSIX: the name was free (unique_name)
            done.append((old, new, source, source.file))
            source.file = new.relative_to(project.root).as_posix()
        if done:
            project.save()
    except (OSError, ProjectError) as exc:
        for old, new, source, file in reversed(done):
            source.file = file
            try:
                os.rename(new, old)
            except OSError:
                pass
        raise ProjectError(f"The recordings could not be renamed: {exc}") from exc
    return [f"{file} -> {new.name}" for _old, new, _source, file in done]
