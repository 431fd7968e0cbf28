"""How the app starts its child processes on Windows: the one home of the process creation flags.

Every child the app starts is a console program: the training runner and ``accelerate launch`` (``python -m`` or
the frozen app itself), an engine's own interpreter (:mod:`~alltalk_gui.core.engine_api.engine_child`), and
``python -m venv`` / ``pip`` when an engine's environment is set up. Windows gives a console program a console
window of its own when its parent has no console window to share, and the app has none: the launcher starts
``python.exe`` without a window and a windowed PyInstaller build has no console at all. Without a flag each
child flashes a black window, and the training child's stays open for hours (closing it kills the training).

``CREATE_NO_WINDOW`` gives the child a console without a window. The rule is Qt's own for QProcess (its Windows
back-end adds the flag when ``GetConsoleWindow()`` is 0, so the Train page's device scan needs nothing): a parent
that has a console window, the CLI in a terminal, keeps sharing it, so the child's output still shows there and
Ctrl+C / Ctrl+Break reach it.

The app reads what its children print as UTF-8 (the training child's ``output.log``, an engine child's output,
pip's lines). Windows' Python writes to a file or pipe in the ANSI code page (cp1252 in Western Europe) unless
told otherwise: "José" arrived with a replacement character for the "é", and printing a character the code page
lacks (a Polish or Japanese name, a path under ``C:\\Users\\Łukasz``) to stdout raises UnicodeEncodeError in the
child (stderr only mangles it).
:func:`utf8_environment` makes the child's standard streams and its default text encoding UTF-8 on every
system (Python's UTF-8 mode, the default from Python 3.15 on).

Children started by :mod:`multiprocessing` (the transcription, text-check and speaker-check helpers) need nothing:
Python starts them with the parent's own kind of executable (``pythonw.exe`` under ``pythonw.exe``, the
windowed app under the windowed app), which opens no console either.
"""

from __future__ import annotations

import os
from typing import Any

# Windows process creation flags (named in subprocess only on Windows, so spelled out here).
CREATE_NEW_PROCESS_GROUP = 0x00000200
BELOW_NORMAL_PRIORITY_CLASS = 0x00004000
CREATE_NO_WINDOW = 0x08000000


def creation_flags(*, console_window: bool, new_group: bool = False, lower_priority: bool = False) -> int:
    """Windows' ``creationflags`` for a console child of a parent that has (or has no) ``console_window``.

    ``new_group``: a process group of its own (CTRL_BREAK reaches it and nothing else); ``lower_priority``: below
    normal priority from its first instruction (its own children inherit the class).
    """
    flags = 0 if console_window else CREATE_NO_WINDOW
    if new_group:
        flags |= CREATE_NEW_PROCESS_GROUP
    if lower_priority:
        flags |= BELOW_NORMAL_PRIORITY_CLASS
    return flags


def utf8_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with the child's text in UTF-8: its stdin/stdout/stderr
    (``PYTHONIOENCODING``) and the default of its ``open()`` calls (``PYTHONUTF8``). Read its output as UTF-8."""
    return dict(os.environ if base is None else base, PYTHONUTF8="1", PYTHONIOENCODING="utf-8")


def has_console_window() -> bool:
    """Whether this process has a console window its console children can share (always True off Windows, where
    no child gets a window of its own)."""
    if os.name != "nt":
        return True
    import ctypes

    return bool(ctypes.windll.kernel32.GetConsoleWindow())  # type: ignore[attr-defined]


def popen_options(*, new_group: bool = False, lower_priority: bool = False, windows: bool | None = None,
                  console_window: bool | None = None) -> dict[str, Any]:
    """``subprocess.Popen`` keyword arguments for a child process of the app.

    On Windows the :func:`creation_flags` (no console window when this process has none); elsewhere a session of
    its own when ``new_group`` (so the child and everything it starts can be signalled together), else nothing:
    POSIX lowers priority with ``nice`` in the command instead.

    Args:
        windows: the platform's rule to apply (default: this system's); tests on Linux ask for Windows'.
        console_window: whether this process has a console window (default: asked with :func:`has_console_window`).
    """
    if windows is None:
        windows = os.name == "nt"
    if not windows:
        return {"start_new_session": True} if new_group else {}
    if console_window is None:
        console_window = has_console_window()
    flags = creation_flags(console_window=console_window, new_group=new_group, lower_priority=lower_priority)
    return {"creationflags": flags} if flags else {}
