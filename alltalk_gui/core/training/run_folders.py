"""The run folder: its file names, how runs are named, and which run is the newest or can be resumed.

Each training run lives in ``<project>/runs/<run_name>/``::

    events.jsonl        the run's events, one JSON line each (appended to by every session of the run)
    STOP                present: the running training finishes its step, saves a checkpoint and exits
    launch_config.json  the TrainConfig the run was launched with (read again by Resume)
    memory.json         measured peak memory of each session, beside the estimate
    checkpoints/step_N/ complete checkpoints (see :mod:`alltalk_gui.core.training.checkpoints`)

The training loop, the runner, the launcher, the CLI and the GUI all take these names from here. A run name is a
plain folder name: a name with a path separator or ``..`` could make a run write outside ``runs/``, so
:func:`check_run_name` refuses it. This module needs neither torch nor Qt (the GUI lists runs with it).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from alltalk_gui.core.portability.portable_names import windows_problem
from alltalk_gui.core.project.long_paths import MAX_PATH, MAX_RUN_NAME, utf16_length
from alltalk_gui.core.training.checkpoints import run_checkpoints, run_folders
from alltalk_gui.core.training.events import Done
from alltalk_gui.core.training.follow import read_event_file

RUNS_DIR = "runs"
EVENTS_FILE = "events.jsonl"
STOP_FILE = "STOP"
LAUNCH_CONFIG = "launch_config.json"
MEMORY_FILE = "memory.json"
RUN_NAME_FORMAT = "run_%Y%m%d_%H%M%S"  # time.strftime format of a new run's name
# Letters, digits and . _ - (and spaces inside): a name every file system takes, shown as typed.
_PLAIN_NAME = re.compile(r"^[\w.\- ]+$")
_FINISHED = ("finished", "max_steps")  # Done reasons that leave nothing to resume


class RunNameError(ValueError):
    """A run name that is not a plain folder name."""


def new_run_name(now: float | None = None) -> str:
    """The name of a new run: the local time it starts, e.g. ``run_20261123_041502``."""
    return time.strftime(RUN_NAME_FORMAT, time.localtime(now))


# Every run name, old or new, has at most this many characters (the rule since the first release).
MAX_ANY_RUN_NAME = 100


def check_run_name(name: str) -> str:
    """Return ``name`` if it is a plain folder name every system takes.

    Raises:
        RunNameError: empty, ``.`` or ``..``, a path separator (``/`` or ``\\`` on every OS, so a project copied
            between Windows and Linux means the same), a drive letter or a character outside letters, digits,
            space, ``.``, ``_`` and ``-``, spaces/dots at either end, a name Windows cannot hold (a device name such
            as ``CON``, ``NUL``, ``COM1``; :func:`~alltalk_gui.core.portability.portable_names.windows_problem`),
            or more than :data:`MAX_ANY_RUN_NAME` characters, so a project stays usable on every OS. A name for a
            new run is held to less: :func:`check_new_run_name`.
    """
    if not name or name in (".", "..") or "/" in name or "\\" in name or ":" in name:
        raise RunNameError(f"The run name '{name}' is not a plain folder name: use letters, digits, '_', '-' and "
                           "'.', without '/' or '\\'.")
    if (problem := windows_problem(name)) is not None:  # a device name, dots or spaces at the end...
        raise RunNameError(f"The run name '{name}' cannot be a folder on Windows ({problem}); choose another, "
                           "for example 'take_2'.")
    if not _PLAIN_NAME.match(name) or name != name.strip(" .") or len(name) > MAX_ANY_RUN_NAME:
        raise RunNameError(f"The run name '{name}' is not a plain folder name: use at most {MAX_ANY_RUN_NAME} "
                           "letters, digits, '_', '-', '.' and spaces (not at either end).")
    return name


def check_new_run_name(name: str) -> str:
    """:func:`check_run_name`, and for a run that does not exist yet at most
    :data:`~alltalk_gui.core.project.long_paths.MAX_RUN_NAME` characters: its checkpoints' paths then stay within
    Windows' 260-character limit wherever the project folder's own check allows it. A run that already exists
    keeps its name (it was made under the older limit of :data:`MAX_ANY_RUN_NAME`, and resumes as it is).

    Raises:
        RunNameError: see :func:`check_run_name`; a longer name.
    """
    check_run_name(name)
    if utf16_length(name) > MAX_RUN_NAME:
        raise RunNameError(f"The run name '{name[:20]}...' has {utf16_length(name)} characters; at most "
                           f"{MAX_RUN_NAME} keep its checkpoints' paths within Windows' limit of {MAX_PATH} "
                           "characters. Choose a shorter name.")
    return name


def runs_dir(project_dir: str | os.PathLike[str]) -> Path:
    """Where a project's runs live."""
    return Path(project_dir) / RUNS_DIR


def run_dir(project_dir: str | os.PathLike[str], name: str) -> Path:
    """The folder of run ``name`` of a project (the name checked first).

    Raises:
        RunNameError: see :func:`check_run_name`.
    """
    return runs_dir(project_dir) / check_run_name(name)


def newest_run_with_checkpoint(runs: str | os.PathLike[str], engine: str | None = None) -> Path | None:
    """The run folder under ``runs`` whose newest complete checkpoint was written last, if any run has one;
    with ``engine``, among that engine's runs only (a project may hold runs of several engines, and what one
    engine's run shows or resumes means nothing for another)."""
    best, best_time = None, -1.0
    for run in run_folders(runs):
        checkpoints = run_checkpoints(run)
        if not checkpoints or (engine is not None and checkpoints[-1].engine != engine):
            continue
        try:
            stamp = checkpoints[-1].path.stat().st_mtime
        except OSError:  # pruned by a running training in the meantime
            continue
        if stamp > best_time:
            best, best_time = run, stamp
    return best


def run_finished(run: str | os.PathLike[str]) -> bool:
    """Whether the run's last Done event says it ran to its end (nothing left to resume)."""
    path = Path(run) / EVENTS_FILE
    if not path.is_file():
        return False
    done = [e for e in read_event_file(path).events if isinstance(e, Done)]
    return bool(done) and _reason(done[-1].reason) in _FINISHED


def resumable_run(runs: str | os.PathLike[str], engine: str | None = None) -> Path | None:
    """The newest run with a checkpoint (of ``engine``, when given), if it did not run to its end (what Resume
    continues)."""
    run = newest_run_with_checkpoint(runs, engine)
    return run if run is not None and not run_finished(run) else None


def _reason(value: object) -> str:
    """A Done reason as text, whether the event holds a string or an enum member."""
    return str(getattr(value, "value", value))
