"""Whether a project folder is too deep for Windows' 260-character path limit (MAX_PATH), said when it is
created or opened, not hours later when a checkpoint or a cache file fails to save.

Unless long paths are enabled (the ``LongPathsEnabled`` setting, which python.org's Python honours), Windows
refuses a path of 260 UTF-16 characters or more, terminating NUL included: 259 usable. A project under
``C:\\Users\\<name>\\OneDrive - <company>\\Documents\\AllTalk GUI projects\\<voice>`` is easily 110 characters
before the app writes anything into it.

The deepest file the app writes below a project folder is a feature-cache entry while it is being written:
``feature_cache/xtts-front-end-<16 hex>/.<64 hex>.npz.<8 random>.tmp`` (the atomic write's temporary name beside
``<sha256 of the clip>.npz``), :data:`DEEPEST_IN_PROJECT` characters. Measured on a trained project
(tests/core/project/test_long_paths.py): 114 characters for the cache file itself, 128 with the temporary
name. Next come a source's copy (``sources/`` + a name of at most 100 characters, :mod:`~alltalk_gui.core.
portable_names`, + its temporary name: 126) and a sharded checkpoint being saved (``runs/run_YYYYMMDD_HHMMSS/
checkpoints/.tmp-step_0000120/pytorch_model_fsdp_0/__0_0.distcp``: 88). A run name the user types makes
its run's files deeper by as many characters as it has beyond the default's 19, so a run name has at most
:data:`MAX_RUN_NAME` (59) characters: its deepest file is then no deeper than the feature cache's, and a project
folder that passes :func:`path_length_problem` holds every run.
"""

from __future__ import annotations

import os
from pathlib import Path

MAX_PATH = 260  # UTF-16 characters, the terminating NUL included
# The longest name an engine gives its kind of cached features, before the "-<16 hex>" key (15 characters today: the
# module text's example; neutral code names no engine, so the allowance is a number here, checked against a real
# trained project in tests/core/project/test_long_paths.py).
CACHE_KIND_NAME = 15
# feature_cache/ + the longest kind with its 16-hex key + / + the temporary name of a <sha256>.npz entry
DEEPEST_IN_PROJECT = len("feature_cache/") + CACHE_KIND_NAME + 16 + 1 + len(".") + 64 + len(".npz") \
    + len(".") + 8 + len(".tmp")
MAX_PROJECT_PATH = MAX_PATH - 1 - 1 - DEEPEST_IN_PROJECT  # the NUL and the separator after the project folder
# The deepest file below a run folder: a shard of a sharded checkpoint while it is being saved.
DEEPEST_IN_RUN = len("checkpoints/.tmp-step_0000120/pytorch_model_fsdp_0/__0_0.distcp")
# The longest run name (UTF-16 units) whose files stay within DEEPEST_IN_PROJECT: runs/<name>/<DEEPEST_IN_RUN>.
# So the project folder's own check (MAX_PROJECT_PATH) covers every run, whatever name the user typed.
MAX_RUN_NAME = DEEPEST_IN_PROJECT - len("runs/") - 1 - DEEPEST_IN_RUN


def utf16_length(path: str) -> int:
    """Windows counts path lengths in UTF-16 code units (an emoji counts twice, "é" once)."""
    return len(path.encode("utf-16-le")) // 2


def path_length_problem(root: str | os.PathLike[str], *, windows: bool, long_paths_enabled: bool) -> str:
    """"" when every file the app writes below the project folder ``root`` fits Windows' path limit (or the rule
    does not apply: not Windows, or long paths enabled), else a warning that says how to fix it."""
    root = str(root)
    length = utf16_length(root)
    if not windows or long_paths_enabled or length <= MAX_PROJECT_PATH:
        return ""
    return (f"The project folder's path is {length} characters long ({root}). Inside it the app writes files "
            f"up to {DEEPEST_IN_PROJECT} characters deeper, past Windows' limit of {MAX_PATH} characters for a "
            "path, so saving training data or checkpoints would fail. Move the project folder somewhere with a "
            f"shorter path (at most {MAX_PROJECT_PATH} characters, for example C:\\Voices\\<name>), or enable long "
            "paths in Windows (https://learn.microsoft.com/windows/win32/fileio/maximum-file-path-limitation) "
            "and restart.")


def read_long_paths_enabled() -> bool:
    """Whether Windows allows paths beyond MAX_PATH (``LongPathsEnabled`` = 1); True off Windows.

    packaging/windows/install_helper/checks.py reads the same value for the install: it runs with the standard
    library alone before the app is installed, so it cannot import this module (nor this one that)."""
    if os.name != "nt":
        return True
    import winreg

    try:
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"SYSTEM\CurrentControlSet\Control\FileSystem") as key:
            return winreg.QueryValueEx(key, "LongPathsEnabled")[0] == 1
    except OSError:
        return False


def project_path_problem(root: str | os.PathLike[str]) -> str:
    """:func:`path_length_problem` for this system (on Windows the registry says whether long paths are on)."""
    windows = os.name == "nt"
    return path_length_problem(Path(root).absolute(), windows=windows,
                               long_paths_enabled=read_long_paths_enabled() if windows else True)
