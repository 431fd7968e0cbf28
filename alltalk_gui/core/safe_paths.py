"""Paths read from files the user did not write stay inside their folder: the one home of that rule.

A voice project is a folder people share, and so is a dataset: a project's ``project.json`` and
``segments.json``, a dataset's ``metadata.csv``, a preview's JSON may come from someone else, and anything in
them that becomes part of a path (a clip id, a source's ``audio_file``, a dataset row) could be written as
``../../x``, ``/home/someone/.bashrc``, ``C:\\Users\\x`` or ``\\\\server\\share\\x``. Every such path is
built with :func:`inside`, which refuses anything that would leave its folder, and names that end up as file
names are checked with :func:`plain_name` first.

:func:`inside` is lexical (no file is touched), so it holds for files that do not exist yet (what we are about
to write), and it treats Windows drive letters and backslashes as separators on every system: a folder written
on Windows and opened on Linux is held to the same rule, and ``C:\\x`` is refused there instead of becoming a
file called ``C:\\x``. A file that is about to be *read* is checked again with its links followed
(:func:`resolved_inside`, :func:`check_resolved`): a link inside the folder that points elsewhere (``wavs/x.wav
-> /home/me/private.wav``, or a linked folder) is as far outside as an absolute path. There is no option to
allow either; the user can copy the files in.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath

from alltalk_gui.core.portability.portable_names import is_device_name

_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


class UnsafePathError(ValueError):
    """A path or name taken from a project or dataset would point outside its folder. The message names both."""


def plain_name(name: object, what: str = "name") -> str:
    """``name`` if it can be a file name on every system: letters, digits, ``_``, ``.``, ``-``, starting with a
    letter or digit, at most 128 characters, not a reserved Windows device name (``con``, ``nul``...).

    Raises:
        UnsafePathError: anything else (path separators, ``..``, control characters, an empty string).
    """
    if not isinstance(name, str) or not _PLAIN.fullmatch(name) or is_device_name(name):
        raise UnsafePathError(f"{what} {name!r} is not a plain name (letters, digits, '_', '.', '-' only).")
    return name


def inside(root: str | os.PathLike[str], relative: object, what: str = "path", place: str = "the project") -> Path:
    """``root / relative``, refused unless ``relative`` is a relative path that stays inside ``root``.

    Refused: absolute paths (``/x``, ``C:\\x``, ``\\\\server\\share``), drive-relative ones (``C:x``), any ``..``
    component, empty strings and NUL characters. Links are not followed here (the file may not exist yet): a
    path that is about to be read goes through :func:`resolved_inside` instead.

    Args:
        what: what the value is, for the message (``"audio_file"``, ``"the audio file"``).
        place: what ``root`` is, for the message (``"the project"``, ``"the dataset folder"``).

    Raises:
        UnsafePathError: with ``what``, the offending value and ``place``.
    """
    if not isinstance(relative, str) or not relative or "\0" in relative:
        raise UnsafePathError(f"{what} {relative!r} is not a path inside {place}.")
    posix, windows = PurePosixPath(relative), PureWindowsPath(relative)
    if posix.is_absolute() or windows.drive or windows.root or ".." in windows.parts:
        raise UnsafePathError(f"{what} {relative!r} points outside {place} ({root}); only files inside it are used. "
                              "Copy the file in to use it.")
    return Path(root).joinpath(*windows.parts)


def resolved_inside(root: str | os.PathLike[str], relative: object, what: str = "path",
                    place: str = "the project") -> Path:
    """:func:`inside`, then the same rule with links followed; returns the real path (links resolved), which is
    what the caller should read, so that the file read is the file checked.

    Raises:
        UnsafePathError: ``relative`` leaves ``root`` as written, or through a link (a linked file or folder whose
            target lies outside ``root``'s real folder).
    """
    return check_resolved(inside(root, relative, what, place), root, what, place, written=str(relative))


def check_resolved(path: str | os.PathLike[str], root: str | os.PathLike[str], what: str = "path",
                   place: str = "the project", written: str | None = None) -> Path:
    """``path`` with its links resolved, refused unless that real path lies inside ``root``'s real folder (the
    root itself may be a link: a project or dataset folder kept on another disk is the user's choice).

    Raises:
        UnsafePathError: the real path is outside ``root``.
    """
    shown = written if written is not None else str(path)
    try:
        real_root, real = Path(root).resolve(), Path(path).resolve()
    except (OSError, RuntimeError) as exc:  # a link loop (RuntimeError before Python 3.13)
        raise UnsafePathError(f"{what} {shown!r} cannot be followed to a file ({exc}).") from exc
    if real != real_root and real_root not in real.parents:
        raise UnsafePathError(f"{what} {shown!r} is a link to {real}, which is outside {place} ({root}); only "
                              "files inside it are used. Copy the file in to use it.")
    return real


def is_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path``, links followed, lies inside ``root``'s real folder (for filters that skip, not refuse)."""
    try:
        check_resolved(path, root)
    except UnsafePathError:
        return False
    return True
