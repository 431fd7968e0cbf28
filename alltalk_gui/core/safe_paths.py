"""Paths built from project data stay inside the project.

A voice project is a folder people share: its ``project.json`` and ``segments.json`` may come from someone else,
and anything in them that becomes part of a path (a clip id, a source's ``audio_file``) could be written as
``../../x`` or ``/home/someone/.bashrc``. Every such path is built with :func:`inside`, which refuses anything
that would leave its folder, and names that end up as file names are checked with :func:`plain_name` first.

Both checks are lexical (no file is touched), so they hold for files that do not exist yet, and they treat
Windows drive letters and backslashes as separators on every system: a project written on Windows and opened
on Linux is held to the same rule.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath

_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


class UnsafePathError(ValueError):
    """A path or name taken from project data would point outside its folder. The message names both."""


def plain_name(name: object, what: str = "name") -> str:
    """``name`` if it can be a file name on every system: letters, digits, ``_``, ``.``, ``-``, starting with a
    letter or digit, at most 128 characters, not a reserved Windows device name (``con``, ``nul``...).

    Raises:
        UnsafePathError: anything else (path separators, ``..``, control characters, an empty string).
    """
    if not isinstance(name, str) or not _PLAIN.fullmatch(name) or name.split(".")[0].lower() in _WINDOWS_RESERVED:
        raise UnsafePathError(f"{what} {name!r} is not a plain name (letters, digits, '_', '.', '-' only).")
    return name


def inside(root: str | os.PathLike[str], relative: object, what: str = "path") -> Path:
    """``root / relative``, refused unless ``relative`` is a relative path that stays inside ``root``.

    Refused: absolute paths (``/x``, ``C:\\x``, ``\\\\server\\share``), drive-relative ones (``C:x``), any ``..``
    component, empty strings and NUL characters. Symbolic links inside the project are not followed here; the
    project folder is the user's own, and only its JSON files are treated as foreign.

    Raises:
        UnsafePathError: with ``what`` and the offending value.
    """
    if not isinstance(relative, str) or not relative or "\0" in relative:
        raise UnsafePathError(f"{what} {relative!r} is not a path inside the project.")
    posix, windows = PurePosixPath(relative), PureWindowsPath(relative)
    if posix.is_absolute() or windows.drive or windows.root or ".." in windows.parts:
        raise UnsafePathError(f"{what} {relative!r} points outside {root}; only paths inside the project are "
                              "accepted.")
    return Path(root).joinpath(*windows.parts)
