"""An engine's own Python environment, for an engine whose packages conflict with the app's.

Parler-TTS is the case that needs it: its only release (``parler-tts`` 0.2.3) pins ``transformers==4.46.1`` and
its model classes do not run under the transformers 5.x the app needs (see ``core/engines/parler/``), while the
rest of what it needs (torch, accelerate, peft, numpy, the app itself) is exactly what the app already has. So
an :class:`EngineEnvironment` is a small virtual environment *layered over the app's*: it holds only the
engine's pinned packages, and a ``.pth`` file in it adds the app's own site-packages after them. Its interpreter
imports the engine's transformers first and finds torch, accelerate and ``alltalk_gui`` in the app's environment,
so it costs tens of megabytes, not another copy of torch.

Where it lives: ``<the app's environment>/engine-envs/<name>`` (``sys.prefix``), or under
``$ALLTALK_GUI_ENGINE_ENVS`` when set. Inside the app's environment it goes with it: the launchers delete and
remake ``.venv`` on an update, and a layered environment made for the old one must go too.

How it is made (:func:`create`, on first use, with progress lines): ``python -m venv --without-pip``, the
``.pth``, then ``python -m pip install --no-deps --target <its site-packages> <pins>`` run by the app's own pip
(``--no-deps``: the pins are the whole list, so pip never resolves, upgrades or removes anything of the app's;
``--target``: nothing outside the new folder is written), then an import check of the engine's modules with the
new interpreter, and last a stamp file. A failed or cancelled creation removes the folder, so nothing
half-made is ever used. ``ALLTALK_GUI_ENGINE_PIP_ARGS`` adds pip options (tests: ``--no-index --find-links``).

The frozen app has no interpreter or pip to make one with: :func:`create` says so.

Children that run an engine with its own environment (the training child, the preview and export worker of
:mod:`.engine_child`) are started with :func:`python_for`, which is ``sys.executable`` for every other engine.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from alltalk_gui.core import folders
from alltalk_gui.core.portability import process_flags

ROOT_ENV = "ALLTALK_GUI_ENGINE_ENVS"
PIP_ARGS_ENV = "ALLTALK_GUI_ENGINE_PIP_ARGS"
APP_PREFIX_ENV = "ALLTALK_GUI_APP_PREFIX"  # the app's environment, for code that runs in a layered one
STAMP_FILE = "alltalk-engine-env.json"
LOCK_SUFFIX = ".lock"  # beside the environment's folder, held while it is made
PTH_FILE = "zz_alltalk_app.pth"  # sorts last: the engine's own packages come first on sys.path
FOLDER = "engine-envs"


class EngineEnvironmentError(RuntimeError):
    """The engine's environment is missing, broken or cannot be made; the message says what to do."""


@dataclass(frozen=True)
class EngineEnvironment:
    """What an engine with its own environment declares (``Engine.environment``)."""

    name: str                        # folder name; changes whenever the pins change ("parler-tts-0.2.3-1")
    requirements: tuple[str, ...]    # every package it adds, pinned; installed without their dependencies
    imports: tuple[str, ...]         # modules that must import in it afterwards (the check that it works)
    why: str                         # one sentence for people: why this engine has an environment of its own
    download_size: str               # "about 15 MB to download, 120 MB on disk"

    def fingerprint(self) -> str:
        """What the stamp records: the pins, the imports and the app environment it is layered over."""
        text = json.dumps({"name": self.name, "requirements": list(self.requirements),
                           "imports": list(self.imports), "app": app_site_dirs()}, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


Progress = Callable[[str], None]


def frozen() -> bool:
    """Whether this is the frozen (PyInstaller) app, which cannot make environments."""
    return bool(getattr(sys, "frozen", False))


def environments_root() -> Path:
    override = os.environ.get(ROOT_ENV)
    return Path(override).expanduser() if override else Path(app_prefix()) / FOLDER


def app_prefix() -> str:
    """The app's own environment (``sys.prefix``, or the one a layered environment was made over)."""
    return os.environ.get(APP_PREFIX_ENV) or sys.prefix


def environment_dir(env: EngineEnvironment) -> Path:
    return environments_root() / env.name


def interpreter(env: EngineEnvironment) -> Path:
    """The environment's Python (``Scripts\\python.exe`` on Windows, ``bin/python`` elsewhere)."""
    folder = environment_dir(env)
    return folder / "Scripts" / "python.exe" if os.name == "nt" else folder / "bin" / "python"


def app_site_dirs() -> list[str]:
    """The app's site-packages folders (pure and platform; one folder on most systems), in sys.path order."""
    dirs = []
    for key in ("purelib", "platlib"):
        path = sysconfig.get_path(key, vars={"base": app_prefix(), "platbase": app_prefix()})
        if path and path not in dirs and Path(path).is_dir():
            dirs.append(path)
    return dirs


def site_packages(env: EngineEnvironment) -> Path:
    folder = str(environment_dir(env))
    return Path(sysconfig.get_path("purelib", vars={"base": folder, "platbase": folder}))


def is_ready(env: EngineEnvironment) -> bool:
    """Whether the environment exists, was completed, and was made for these pins over this app environment."""
    stamp = environment_dir(env) / STAMP_FILE
    try:
        data = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("fingerprint") == env.fingerprint() and interpreter(env).is_file()


def python_for(engine: Any) -> str:
    """The interpreter that runs ``engine``'s model code: its environment's, or this one.

    Raises:
        EngineEnvironmentError: the engine has an environment and it is not ready (make it with :func:`create`).
    """
    env = engine.environment
    if env is None:
        return sys.executable
    if not is_ready(env):
        raise EngineEnvironmentError(
            f"{engine.title} runs in an environment of its own, which is not set up yet ({env.why} It takes "
            f"{env.download_size}.) Set it up from the Train page, or run 'alltalk-gui engine-env {engine.name}'.")
    return str(interpreter(env))


def create(env: EngineEnvironment, progress: Progress | None = None,
           cancelled: Callable[[], bool] | None = None) -> Path:
    """Make (or remake) ``env`` and return its interpreter; a ready one is returned as it is.

    ``progress`` gets one line of text per step and per line of pip's output; ``cancelled`` is polled between
    them (a cancelled creation removes what it made and raises).

    Raises:
        EngineEnvironmentError: the frozen app, no network or a package that failed (pip's last lines are in
            the message), a failed import check, or a cancel. The half-made folder is removed.
    """
    say = progress or (lambda line: None)
    if is_ready(env):
        return interpreter(env)
    if frozen():
        raise EngineEnvironmentError(
            "The packaged (frozen) app cannot make the Python environment this engine needs. Install AllTalk GUI "
            "with its launcher (packaging/linux or packaging/windows), which keeps a Python to make it with.")
    with _one_maker(env, say, cancelled):
        if is_ready(env):  # made by the maker we waited for
            say("The environment is ready.")
            return interpreter(env)
        return _make(env, say, cancelled)


@contextmanager
def _one_maker(env: EngineEnvironment, say: Progress, cancelled: Callable[[], bool] | None) -> Iterator[None]:
    """Hold the environment's lock file while it is made: a second maker (another window, the CLI's ``engine-env``
    beside the app, two training children at once) waits, then finds it ready, instead of removing the first one's
    half-made folder. Waiting is polled, so a cancel still ends it."""
    from filelock import FileLock, Timeout

    folder = environment_dir(env)
    folder.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder.with_name(folder.name + LOCK_SUFFIX)))
    waiting = False
    while True:
        try:
            lock.acquire(timeout=0 if not waiting else 1)
            break
        except Timeout:
            if not waiting:
                say(f"Waiting for another AllTalk GUI process that is making this environment ({folder}).")
                waiting = True
            if cancelled is not None and cancelled():
                raise EngineEnvironmentError("Cancelled while waiting for the other process.") from None
    try:
        yield
    finally:
        lock.release()


def _make(env: EngineEnvironment, say: Progress, cancelled: Callable[[], bool] | None) -> Path:
    folder = environment_dir(env)
    partial = folder.with_name(folder.name + ".partial")
    _remove(partial)
    try:
        say(f"Making the environment in {folder} ({env.download_size}).")
        _run([sys.executable, "-m", "venv", "--without-pip", str(partial)], say, cancelled)
        made = _layered(env, partial)
        say(f"Installing {len(env.requirements)} packages: {', '.join(env.requirements)}.")
        _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check",
              "--target", str(made), *os.environ.get(PIP_ARGS_ENV, "").split(), *env.requirements], say, cancelled)
        _remove(folder)
        # The venv's scripts hold no absolute path of the folder; pyvenv.cfg neither. Retried: on Windows the
        # antivirus scans the new python.exe and DLLs just after pip, holding them (WinError 5 on the rename).
        folders.rename(partial, folder)
        say("Checking that the engine's packages import.")
        check = "import " + ", ".join(env.imports) if env.imports else "pass"
        _run([str(interpreter(env)), "-c", check], say, cancelled)
    except BaseException:
        _remove(partial)
        _remove(folder)
        raise
    from alltalk_gui.core import atomic

    atomic.write_json(folder / STAMP_FILE, {"fingerprint": env.fingerprint(), "requirements": list(env.requirements),
                                           "app": app_site_dirs()})
    say("The environment is ready.")
    return interpreter(env)


def remove(env: EngineEnvironment) -> None:
    """Delete the environment (the next :func:`create` makes it again)."""
    _remove(environment_dir(env))


def _layered(env: EngineEnvironment, folder: Path) -> Path:
    """Write the ``.pth`` that puts the app's site-packages after the environment's own; returns its
    site-packages. ``site.addsitedir`` (not a bare path) so the app's own ``.pth`` files (an editable install of
    the app) are read too; the app's prefix goes into the environment for code that looks for the app's data."""
    site_dir = Path(sysconfig.get_path("purelib", vars={"base": str(folder), "platbase": str(folder)}))
    site_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"import os; os.environ.setdefault({APP_PREFIX_ENV!r}, {app_prefix()!r})"]
    lines += [f"import site; site.addsitedir({d!r})" for d in app_site_dirs()]
    (site_dir / PTH_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return site_dir


def _run(cmd: list[str], say: Progress, cancelled: Callable[[], bool] | None) -> None:
    """Run ``cmd``, passing each output line on; raise with its last lines when it fails or is cancelled."""
    tail: list[str] = []
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, encoding="utf-8",
                               errors="replace",
                               env=dict(process_flags.utf8_environment(), PYTHONUNBUFFERED="1", PIP_NO_INPUT="1"),
                               **process_flags.popen_options())  # venv and pip: no console window on Windows
    assert process.stdout is not None
    for line in process.stdout:
        line = line.rstrip()
        if line:
            tail = (tail + [line])[-12:]
            say(line)
        if cancelled is not None and cancelled():
            process.kill()
            process.wait()
            raise EngineEnvironmentError("Cancelled; nothing was kept.")
    if process.wait() != 0:
        raise EngineEnvironmentError(f"'{' '.join(Path(cmd[0]).name if i == 0 else c for i, c in enumerate(cmd[:4]))} "
                                     f"...' failed (exit code {process.returncode}):\n" + "\n".join(tail))


def _remove(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path, ignore_errors=True)
