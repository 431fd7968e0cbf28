"""What must be true of this computer before the install starts, each as one sentence naming the fix.

* **The Python.** AllTalk GUI's dependencies exist for 64-bit Python 3.10 to 3.12 only. A 32-bit Python (the
  python.org installer offered one by default for years) gets as far as "No matching distribution found for
  torch" after minutes of downloads; it is refused at once instead.
* **The path length.** Windows' classic limit is 260 characters per path (MAX_PATH) unless long paths are
  enabled. The deepest files pip writes into ``.venv`` are about 150 characters below the checkout
  (``.venv\\Lib\\site-packages\\`` plus 126 for transformers' longest cached module), so a checkout deeper than
  :data:`MAX_ROOT_CHARS` fails halfway through the install with an unhelpful "No such file or directory".
* **The Visual C++ runtime.** PyTorch 2.9's Windows wheels need the Microsoft Visual C++ 2015-2022
  Redistributable 14.40 or newer (pytorch/pytorch#169429); with an older one ``import torch`` fails with
  "WinError 1114: A dynamic link library (DLL) initialization routine failed".

The decisions are plain functions of recorded values, so they are tested on any OS; only :func:`read_vc_runtime`
and :func:`read_long_paths_enabled` touch the Windows registry (through ``winreg``, on Windows only).
"""

from __future__ import annotations

import os
from typing import Optional, Sequence, Tuple

SUPPORTED_PYTHONS = ((3, 10), (3, 12))  # pyproject.toml: requires-python >=3.10,<3.13
MAX_PATH = 260
DEEPEST_IN_VENV = 152  # characters below the checkout of the deepest file pip writes (measured on 2.9.1)
MAX_ROOT_CHARS = MAX_PATH - 1 - DEEPEST_IN_VENV - 7  # 100, with a little room for a newer wheel's deeper file
VC_RUNTIME_MIN = (14, 40)
VC_RUNTIME_URL = "https://aka.ms/vs/17/release/vc_redist.x64.exe"
_VC_KEYS = (r"SOFTWARE\Microsoft\VisualStudio\14.0\VC\Runtimes\x64",
            r"SOFTWARE\WOW6432Node\Microsoft\VisualStudio\14.0\VC\Runtimes\x64")


def python_problem(version: Sequence[int], pointer_bytes: int, executable: str) -> str:
    """"" for a usable Python, else what to install instead."""
    low, high = SUPPORTED_PYTHONS
    wanted = "the 64-bit Python 3.11 from https://www.python.org/downloads/windows/ (tick \"py launcher\")"
    if pointer_bytes != 8:
        return f"The Python found ({executable}) is the 32-bit one, for which PyTorch does not exist. Install {wanted}."
    if not low <= tuple(version[:2]) <= high:
        return (f"The Python found ({executable}) is version {version[0]}.{version[1]}; AllTalk GUI needs 3.10 to "
                f"3.12. Install {wanted}.")
    return ""


def utf16_length(path: str) -> int:
    """Windows counts path lengths in UTF-16 code units (an emoji counts twice, "é" once)."""
    return len(path.encode("utf-16-le")) // 2


def path_length_problem(root: str, long_paths_enabled: bool) -> str:
    """"" when the environment's deepest files fit under MAX_PATH below ``root``, else how to fix it."""
    length = utf16_length(root)
    if long_paths_enabled or length <= MAX_ROOT_CHARS:
        return ""
    return (f"The AllTalk GUI folder's path is {length} characters long ({root}); below it the install writes "
            f"files whose full paths would pass Windows' 260-character limit. Move the folder somewhere with a "
            f"shorter path (at most {MAX_ROOT_CHARS} characters, for example C:\\AllTalkGUI), or enable long paths "
            "(https://learn.microsoft.com/windows/win32/fileio/maximum-file-path-limitation) and restart.")


def vc_runtime_problem(installed: Optional[Tuple[int, int, int]]) -> str:
    """"" when the Visual C++ runtime is new enough for PyTorch, else what to install. ``installed`` is
    (major, minor, build) from the registry, None when it is not installed."""
    if installed is not None and tuple(installed[:2]) >= VC_RUNTIME_MIN:
        return ""
    have = "is not installed" if installed is None else "is version %d.%d.%d" % tuple(installed)
    return (f"PyTorch needs the Microsoft Visual C++ Redistributable (x64) 14.40 or newer, and this computer's "
            f"{have}. Install the current one from {VC_RUNTIME_URL}, then start AllTalk GUI again.")


def read_vc_runtime() -> Optional[Tuple[int, int, int]]:
    """The installed VC++ 2015-2022 x64 runtime's (major, minor, build) from the registry; None if absent."""
    if os.name != "nt":
        return None
    import winreg

    best = None
    for key_name in _VC_KEYS:
        try:
            with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, key_name) as key:
                if not winreg.QueryValueEx(key, "Installed")[0]:
                    continue
                found = tuple(int(winreg.QueryValueEx(key, name)[0]) for name in ("Major", "Minor", "Bld"))
        except OSError:
            continue
        best = max(best or found, found)
    return best


def read_long_paths_enabled() -> bool:
    """Whether Windows allows paths beyond MAX_PATH (LongPathsEnabled = 1; python.org's Python opts in)."""
    if os.name != "nt":
        return True
    import winreg

    try:
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"SYSTEM\CurrentControlSet\Control\FileSystem") as key:
            return winreg.QueryValueEx(key, "LongPathsEnabled")[0] == 1
    except OSError:
        return False
