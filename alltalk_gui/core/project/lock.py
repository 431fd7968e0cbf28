"""One writer per project: an exclusive lock file, held for as long as a window or a command has it open.

Two app windows, or the app and the command line, on one project each saved their whole in-memory state over
the other's (two imports left project.json listing one file while ``sources/`` held both), and two Resumes of
one run wrote the same checkpoints. Now whoever opens a project to change it takes ``.alltalk-gui.lock`` in the
project folder; a second opener is told who holds it (program, user, computer, process, since when) and may
open the project read-only instead (:attr:`VoiceProject.read_only`), where every save is refused.

Why a lock file and not ``QLockFile`` in the app: the app and the command line must exclude each other, and the
core never imports Qt, so both use this one implementation. It is the same design as QLockFile: the file is
created with ``O_CREAT | O_EXCL`` (atomic on every local file system, on Windows too), holds the holder's pid,
host name and the process's start time, and is stale when that process no longer runs on this computer (its
pid is gone, or now belongs to a process started later): a crashed app never blocks the project for good. A
lock from another computer (a project on a network share) cannot be checked from here and is never broken
automatically; :func:`break_lock` does it on the user's word.

A training run has an owner of its own: the training child, which reads the dataset and writes the run folder for
as long as it runs, whoever started it. Whoever launches it (the app, ``alltalk-gui train``) writes the run lock,
``.alltalk-gui.training.lock``, naming the child's own process (:meth:`RunLock.hold`), so it holds while the child
lives even when the app that started it closes; it is stale once that process has ended, like the project lock.
While it holds, nobody else becomes the project's writer (:meth:`VoiceProject.take_lock` raises
:class:`TrainingRunningError`, which says which run, which process since when, and how to stop it; the app offers
read-only), and the dataset export is refused even in the window that started the run. ``alltalk-gui stop DIR``
or the Train page's Stop asks the run to save a checkpoint and end.
"""

from __future__ import annotations

import getpass
import json
import os
import shlex
import socket
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import psutil

from alltalk_gui.core.project.errors import ProjectError

LOCK_FILE = ".alltalk-gui.lock"
RUN_LOCK_FILE = ".alltalk-gui.training.lock"
_UNREADABLE_GRACE_S = 10.0  # a lock file being written right now is empty for a moment; older and empty is stale


class ProjectLockedError(ProjectError):
    """Another process holds the project. ``holder`` says who; the message says what the user can do."""

    def __init__(self, root: Path, holder: "LockHolder | None") -> None:
        who = holder.describe() if holder else "another program (its lock file cannot be read)"
        remote = holder is not None and holder.host != socket.gethostname()
        hint = (f" If it is not open there any more (a copied or shared project), delete {LOCK_FILE} in the project "
                "folder." if remote else "")
        training = running_training(root)
        also = f" {training_sentence(root, training)}" if training is not None else ""
        super().__init__(f"{root} is open in {who}. Only one program may change a project at a time: close it "
                         f"there, or open the project read-only.{hint}{also}")
        self.root, self.holder, self.remote = root, holder, remote


class TrainingRunningError(ProjectLockedError):
    """A training child holds the project (its run lock); ``holder`` is the child. The message says which run,
    which process since when, how to stop it, and that the project may be opened read-only."""

    def __init__(self, root: Path, holder: "LockHolder") -> None:
        remote = holder.host != socket.gethostname()  # cannot be checked from here: the user decides
        hint = (f" If it does not run there any more, delete {RUN_LOCK_FILE} in the project folder." if remote
                else "")
        ProjectError.__init__(self, f"{training_sentence(root, holder)} Only the training may change the project "
                                    f"while it runs; it can be opened read-only meanwhile.{hint}")
        # Never offered for taking over: that breaks the project lock, not the training's.
        self.root, self.holder, self.remote = root, holder, False


def training_sentence(root: str | os.PathLike[str], holder: "LockHolder") -> str:
    """"Training is still running in ... (run X, process P, user U, since T). Stop ... asks it to end."."""
    where = "" if holder.host == socket.gethostname() else f" on {holder.host}"
    return (f"Training is still running in {root} (run {holder.run}, process {holder.pid}{where}, user {holder.user}, "
            f"since {holder.since}). Stop on the Train page, or 'alltalk-gui stop {shlex.quote(str(root))}', asks it "
            "to save a checkpoint and end; or wait until it has finished.")


@dataclass(frozen=True)
class LockHolder:
    """What a lock file says about the process holding it."""

    program: str      # "AllTalk GUI app", "alltalk-gui import"...
    pid: int
    host: str
    user: str
    since: str        # ISO time the lock was taken
    started: float    # the process's start time (seconds since the epoch): tells a reused pid apart
    run: str = ""     # a run lock: the training run the process trains

    def describe(self) -> str:
        return f"{self.program} (user {self.user} on {self.host}, process {self.pid}, since {self.since})"

    def is_alive(self) -> bool:
        """Whether the holding process still runs; True when that cannot be known (another computer)."""
        if self.host != socket.gethostname():
            return True
        try:
            process = psutil.Process(self.pid)
            # An ended child not yet reaped by its parent is a zombie: it holds nothing any more.
            return abs(process.create_time() - self.started) < 1.0 and process.status() != psutil.STATUS_ZOMBIE
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            return False
        except psutil.Error:
            return True  # exists but cannot be inspected (another user's process): assume it holds the lock


class _LockFile:
    """A lock file taken with ``O_CREAT | O_EXCL``, holding its holder and a token; given back only by its taker."""

    FILE = ""

    def __init__(self, root: Path, holder: LockHolder, token: str) -> None:
        self.root, self.holder, self._token = root, holder, token

    @property
    def path(self) -> Path:
        return self.root / self.FILE

    @classmethod
    def _take(cls, root: Path, holder: LockHolder, held: Callable[[LockHolder | None], Exception]) -> "_LockFile":
        """Create the file for ``holder``, breaking a stale one; ``held`` makes the error for a live holder (None:
        a file that cannot be read yet, being written at this moment)."""
        path = root / cls.FILE
        for _attempt in range(3):
            token = uuid.uuid4().hex
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                other = _read(path)
                if other is not None and other.is_alive():
                    raise held(other) from None
                if other is None and _age_s(path) < _UNREADABLE_GRACE_S:
                    raise held(None) from None
                _remove_stale(path)
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({**asdict(holder), "token": token}, f)
                f.flush()
                os.fsync(f.fileno())
            return cls(root, holder, token)
        raise held(_read(path))

    def release(self) -> None:
        """Remove the lock file, if it is still ours (never one that somebody took over after breaking ours)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("token") == self._token:
            self.path.unlink(missing_ok=True)


class ProjectLock(_LockFile):
    """The lock on one project folder, taken by :meth:`acquire` and given back by :meth:`release`.

    Use as a context manager, or keep it for as long as the project is open (the app does).
    """

    FILE = LOCK_FILE

    @classmethod
    def acquire(cls, root: str | os.PathLike[str], program: str) -> "ProjectLock":
        """Take the lock on ``root`` for this process, breaking a stale one.

        Raises:
            ProjectLockedError: a live process holds it (or one on another computer); TrainingRunningError (one):
                a training child trains in the project (whoever launched it took the lock before starting it).
            OSError: the folder cannot be written (read-only media): the caller may open read-only.
        """
        root = Path(root).expanduser().absolute()
        lock = cls._take(root, _this_process(program), lambda holder: ProjectLockedError(root, holder))
        training = running_training(root)
        if training is not None:  # the training owns the project while it runs (its launcher took this first)
            lock.release()
            raise TrainingRunningError(root, training)
        return lock

    def __enter__(self) -> "ProjectLock":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class RunLock(_LockFile):
    """The run lock of a project, naming the process that trains (see the module text)."""

    FILE = RUN_LOCK_FILE

    @classmethod
    def hold(cls, root: str | os.PathLike[str], pid: int, run: str) -> "RunLock":
        """Write the run lock of ``root`` for process ``pid`` (the training child, or this process when it trains
        itself) training ``run``; a stale one is replaced.

        Raises:
            TrainingRunningError: another live process trains in this project.
            OSError: the folder cannot be written, or another program is writing the lock at this moment;
                psutil.Error: ``pid`` does not run.
        """
        root = Path(root).expanduser().absolute()
        me = _this_process(f"training run {run}")
        holder = LockHolder(program=f"training run {run}", pid=pid, host=me.host, user=me.user, since=me.since,
                            started=psutil.Process(pid).create_time(), run=run)

        def held(other: LockHolder | None) -> Exception:
            if other is None:
                return OSError(f"The run lock {root / RUN_LOCK_FILE} is being written by another program.")
            return TrainingRunningError(root, other)

        return cls._take(root, holder, held)


def running_training(root: str | os.PathLike[str]) -> LockHolder | None:
    """The process training in the project at ``root`` now, or None (no run lock, or its process has ended)."""
    holder = _read(Path(root) / RUN_LOCK_FILE)
    return holder if holder is not None and holder.is_alive() else None


def read_holder(root: str | os.PathLike[str]) -> LockHolder | None:
    """Who holds the lock on ``root``: None if nobody, or if the lock file cannot be read."""
    return _read(Path(root) / LOCK_FILE)


def held_by_this_process(root: str | os.PathLike[str]) -> bool:
    """Whether this very process holds the lock on ``root`` (a command took it before opening the project)."""
    holder = read_holder(root)
    return holder is not None and holder.pid == os.getpid() and holder.host == socket.gethostname()


def _read(path: Path) -> LockHolder | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("token", None)
        holder = LockHolder(**data)
        if not (isinstance(holder.pid, int) and isinstance(holder.host, str) and isinstance(holder.started, float)
                and isinstance(holder.run, str)):
            return None
        return holder
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def break_lock(root: str | os.PathLike[str]) -> None:
    """Remove the lock on ``root`` whoever holds it: only on the user's word (a lock from another computer)."""
    (Path(root) / LOCK_FILE).unlink(missing_ok=True)


def _this_process(program: str) -> LockHolder:
    try:
        user = getpass.getuser()
    except Exception:  # no user name in the environment (a service): the pid and host still identify it
        user = "unknown"
    return LockHolder(program=program, pid=os.getpid(), host=socket.gethostname(), user=user,
                      since=datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds"),
                      started=psutil.Process().create_time())


def _remove_stale(path: Path) -> None:
    # Renamed to a unique name first, so two processes breaking the same stale lock cannot both succeed and
    # then remove each other's fresh one: only one rename of that file wins, the other finds nothing. If what
    # was renamed turns out to be a fresh lock (taken between our read and the rename), it is put back.
    aside = path.with_name(f"{path.name}.stale-{uuid.uuid4().hex}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    holder = _read(aside)
    if holder is not None and holder.is_alive():
        try:
            os.link(aside, path)
        except OSError:
            pass  # somebody locked it meanwhile; the fresh lock's owner keeps going, as with QLockFile
    aside.unlink(missing_ok=True)


def _age_s(path: Path) -> float:
    try:
        return datetime.now().timestamp() - path.stat().st_mtime
    except OSError:
        return 0.0
