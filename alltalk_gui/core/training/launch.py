"""Starting, stopping and ending a training child process: the one launcher the CLI and the GUI share.

The child is the runner (``python -u -m alltalk_gui.core.training.runner``) for one device, or N runners under
``accelerate launch --multi_gpu`` (through :mod:`alltalk_gui.core.training.loopback_launcher`, which keeps the
rendezvous on 127.0.0.1 and a free port) for N processes. ``sys.executable`` starts it, which in the frozen app
is the app itself: its entry script runs ``-m alltalk_gui...`` and ``-m accelerate.commands.launch`` like Python.
An engine with an environment of its own (:mod:`alltalk_gui.core.engine_api.environment`) is trained by that
environment's interpreter instead (:func:`~alltalk_gui.core.engine_api.environment.python_for`).

How the child is run, per OS:

- **Priority.** Training saturates every core it may use, and the desktop should stay responsive. On Windows the
  creation flag ``BELOW_NORMAL_PRIORITY_CLASS`` lowers it from its first instruction; children (the real
  interpreter behind a venv's ``Scripts\\python.exe``, accelerate's workers) inherit a below-normal class. On
  POSIX the command is prefixed with ``nice -n 10``, so every thread and worker starts lowered (``renice``
  after the start would miss threads torch had already created).
- **Stop.** :meth:`TrainingProcess.request_stop` writes the run's ``STOP`` file, which every process polls once
  per step, on every OS and under accelerate. For one process it also signals: SIGTERM on POSIX; on Windows,
  where ``send_signal(SIGTERM)`` is ``TerminateProcess`` (no checkpoint), CTRL_BREAK to the child's own process
  group (``CREATE_NEW_PROCESS_GROUP``), which the runner's SIGBREAK handler turns into a stop.
- **Kill.** The child runs in its own session / process group; a kill ends it and everything it started.
- **Multi-GPU.** Windows builds of PyTorch have no NCCL: the processes use gloo (:func:`distributed_backend`) and
  the TCPStore without libuv (``USE_LIBUV=0``), which those builds lack.

A resume takes the run's ``launch_config.json`` re-rooted at the project folder that is open now
(:func:`resume_config`), so a copied or moved project trains itself, never the original.

**One owner.** The child holds the project's run lock (:class:`~alltalk_gui.core.project.lock.RunLock`, written
here with the child's process id) for as long as it runs, whoever started it: an app that closes while it trains
leaves the project locked until the child ends. A second training of the same project is refused while one runs.
The app sends the child's output to the run's ``output.log`` (not a pipe), so the child does not depend on the
app either.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psutil

from alltalk_gui.core import atomic
from alltalk_gui.core.portability import process_flags
from alltalk_gui.core.engine_api.engine import get_engine
from alltalk_gui.core.project.lock import RunLock, TrainingRunningError, running_training
from alltalk_gui.core.training.checkpoints import CONFIG_FILE, run_checkpoints
from alltalk_gui.core.training.config import TrainConfig
from alltalk_gui.core.training.run_folders import EVENTS_FILE, LAUNCH_CONFIG, STOP_FILE, check_run_name, run_dir

RUNNER_MODULE = "alltalk_gui.core.training.runner"
LAUNCHER_MODULE = "alltalk_gui.core.training.loopback_launcher"
LOOPBACK = "127.0.0.1"
NICENESS = 10  # POSIX nice value of the child (0 normal, 19 lowest)
# Windows process creation flags, re-exported from their home (tests and callers name them here).
BELOW_NORMAL_PRIORITY_CLASS = process_flags.BELOW_NORMAL_PRIORITY_CLASS
CREATE_NEW_PROCESS_GROUP = process_flags.CREATE_NEW_PROCESS_GROUP


def _on_windows() -> bool:
    """Whether this is Windows (a function, so that tests on Linux can check what Windows would get)."""
    return os.name == "nt"


class LaunchError(RuntimeError):
    """The training process could not be started, or there is no run to resume."""


# -- the run's config -------------------------------------------------------------------------------------------

def write_launch_config(config: TrainConfig) -> Path:
    """Save the config the run is launched with as ``<run>/launch_config.json`` (the file the runner reads)."""
    path = config.run_dir / LAUNCH_CONFIG
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_json(path, config.to_dict())
    return path


def resume_config(project_dir: str | os.PathLike[str], run_name: str) -> TrainConfig:
    """The config to resume run ``run_name`` of the project in ``project_dir`` with.

    It is the run's ``launch_config.json`` (or its newest checkpoint's ``train_config.json``), with
    ``project_dir`` and ``run_name`` replaced by the ones given: the saved absolute ``project_dir`` names the
    folder the run was started in, which for a copied or moved project is another project. A ``dataset_dir``
    inside that old folder moves along with it.

    Raises:
        RunNameError: ``run_name`` is not a plain folder name.
        LaunchError: the run has neither file.
    """
    run = run_dir(project_dir, run_name)
    saved = run / LAUNCH_CONFIG
    if not saved.is_file():
        checkpoints = run_checkpoints(run)
        if not checkpoints:
            raise LaunchError(f"The run {run} has no {LAUNCH_CONFIG} and no checkpoint: nothing to resume.")
        saved = checkpoints[-1].path / CONFIG_FILE
    return rebased(TrainConfig.load(saved), project_dir, run_name)


def rebased(config: TrainConfig, project_dir: str | os.PathLike[str], run_name: str) -> TrainConfig:
    """``config`` for run ``run_name`` of the project in ``project_dir`` (see :func:`resume_config`).

    Raises:
        LaunchError: the run's dataset lies outside the project and the project is not where the run started.
    """
    root = Path(project_dir).absolute()
    dataset_dir = config.dataset_dir
    if dataset_dir and config.project_dir:
        try:
            dataset_dir = str(root / Path(dataset_dir).relative_to(config.project_dir))
        except ValueError:
            # A dataset outside the project stays where it is, in the project it was started in. A copied or
            # shared project's saved config is foreign input: it must not train on a folder elsewhere here.
            if Path(config.project_dir).absolute() != root:
                raise LaunchError(f"The run {run_name} trained on {dataset_dir}, outside the project, and the project "
                                  "has moved since (or came from elsewhere): start a new run on this project's "
                                  "dataset instead.") from None
    return dataclasses.replace(config, project_dir=str(root), run_name=check_run_name(run_name),
                               dataset_dir=dataset_dir)


# -- the command ---------------------------------------------------------------------------------------------------

def free_port() -> int:
    """A TCP port nobody listens on now (for the rendezvous of this machine's processes)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def launch_command(config_file: str | os.PathLike[str], events: str | os.PathLike[str], *, resume: bool,
                   processes: int = 1, mixed_precision: str = "no", accelerate_config: str | None = None,
                   port: int | None = None, python: str | None = None) -> list[str]:
    """The child's command line: the runner itself, or N of it under ``accelerate launch``.

    Args:
        config_file: the TrainConfig JSON the runner reads (``run_name`` set).
        events: the events file the runner appends to.
        resume: continue from the run's newest checkpoint.
        processes: 1 runs the runner alone; N > 1 runs N under accelerate's torchrun launcher (one per GPU, or
            N CPU processes in a gloo group on a machine without CUDA).
        mixed_precision: accelerate's ``--mixed_precision`` for N > 1.
        accelerate_config: an ``accelerate config`` file (e.g. one that switches on FSDP) instead of our options.
        port: the rendezvous port for N > 1 (default: a free one).
        python: the interpreter (default ``sys.executable``; the engine's own for an engine with an environment).
    """
    cmd = [python or sys.executable, "-u", "-m"]
    if processes > 1:
        cmd += [LAUNCHER_MODULE]
        if accelerate_config:
            cmd += ["--config_file", str(accelerate_config), "--num_processes", str(processes)]
        else:
            cmd += ["--multi_gpu", "--num_processes", str(processes), "--num_machines", "1",
                    "--mixed_precision", mixed_precision, "--dynamo_backend", "no"]
        if not accelerate_config or _machines(accelerate_config) <= 1:
            # One machine: the rendezvous listens on loopback only, on a port no other run uses.
            cmd += ["--main_process_ip", LOOPBACK, "--main_process_port", str(port or free_port())]
        cmd += ["-m"]
    cmd += [RUNNER_MODULE, "--config", str(config_file), "--events", str(events)]
    if resume:
        cmd.append("--resume")
    return cmd


def _machines(accelerate_config: str | os.PathLike[str]) -> int:
    """``num_machines`` of an accelerate config file (YAML or JSON); 1 when it cannot be read."""
    import yaml

    try:
        data = yaml.safe_load(Path(accelerate_config).read_text(encoding="utf-8"))
        return int(data.get("num_machines", 1)) if isinstance(data, dict) else 1
    except (OSError, ValueError, TypeError, yaml.YAMLError):
        return 1


def distributed_backend() -> str | None:
    """The torch.distributed backend the training processes must use, or None for accelerate's choice
    (NCCL on CUDA, gloo on the CPU). Windows builds of PyTorch have no NCCL: gloo."""
    return "gloo" if _on_windows() else None


def loopback_interface() -> str | None:
    """The name of the network interface that holds 127.0.0.1 (``lo``, ``lo0``), if psutil finds one."""
    for name, addresses in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == LOOPBACK for a in addresses):
            return name
    return None


def child_env(processes: int = 1, base: dict[str, str] | None = None) -> dict[str, str]:
    """The child's environment: unbuffered UTF-8 output (the app reads output.log as UTF-8; Windows would write the
    ANSI code page), and for several processes their links kept on loopback."""
    env = dict(process_flags.utf8_environment(base), PYTHONUNBUFFERED="1")
    if processes > 1:
        if _on_windows():
            env.setdefault("USE_LIBUV", "0")  # Windows wheels of PyTorch have no libuv TCPStore
        else:
            loopback = loopback_interface()
            if loopback:
                # gloo and NCCL open their own sockets on the interface the host name resolves to; on one
                # machine they only need loopback. A user's own choice stays.
                env.setdefault("GLOO_SOCKET_IFNAME", loopback)
                env.setdefault("NCCL_SOCKET_IFNAME", loopback)
    return env


def priority_prefix(lower: bool) -> list[str]:
    """``nice -n 10`` on POSIX when the priority is to be lowered and ``nice`` exists; else nothing."""
    if not lower or _on_windows():
        return []
    nice = shutil.which("nice")
    return [nice, "-n", str(NICENESS)] if nice else []


def popen_options(*, lower_priority: bool) -> dict[str, Any]:
    """``subprocess.Popen`` options: a process group of its own (for Stop and kill) and, on Windows, the priority
    and no console window of its own when the app has none (:mod:`alltalk_gui.core.portability.process_flags`)."""
    return process_flags.popen_options(new_group=True, lower_priority=lower_priority, windows=_on_windows())


# -- the process ---------------------------------------------------------------------------------------------------

@dataclass
class TrainingProcess:
    """A started training child: its process, its run folder and events file, and how to stop or end it."""

    process: subprocess.Popen
    run_dir: Path
    events_path: Path
    processes: int
    command: list[str]
    run_lock: RunLock | None = None  # the project's run lock, naming this child

    @property
    def pid(self) -> int:
        return self.process.pid

    def request_stop(self, *, signals: bool = True) -> None:
        """Ask the child to finish its step, save a checkpoint and exit 0.

        The ``STOP`` file always; with ``signals`` and one process also a signal (see the module docstring).
        Under accelerate the file alone: a signal to the launcher would end its workers before they save.
        """
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / STOP_FILE).touch()
        if not signals or self.processes != 1 or self.process.poll() is not None:
            return
        try:
            if _on_windows():
                # Reaches the child's process group only when it shares this process's console (the CLI); the
                # STOP file above covers the rest (the app has no console).
                self.process.send_signal(signal.CTRL_BREAK_EVENT)
            else:
                self.process.send_signal(signal.SIGTERM)
        except (OSError, ValueError):
            pass

    def kill(self) -> None:
        """End the child and every process it started, now. The last complete checkpoint stays."""
        if self.process.poll() is not None:
            return
        if _on_windows():
            _kill_tree(self.process.pid)
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def clear_stop(self) -> None:
        """Remove the STOP file (after the child exited: a leftover would stop the next session at once)."""
        (self.run_dir / STOP_FILE).unlink(missing_ok=True)

    def ended(self) -> None:
        """The child has exited: remove its STOP file and give back its run lock (were nobody to do it, the lock
        would be stale anyway once the process is gone)."""
        self.clear_stop()
        if self.run_lock is not None:
            self.run_lock.release()


def stop_running_training(project_dir: str | os.PathLike[str]) -> Any:
    """Ask the training that runs in a project (whoever started it: an app that has closed since, another command)
    to finish its step, save a checkpoint and end, through its run's STOP file. Returns the training's
    :class:`~alltalk_gui.core.project.lock.LockHolder`, or None when none runs.

    Raises:
        RunNameError: the run lock names no plain run folder.
    """
    holder = running_training(project_dir)
    if holder is None:
        return None
    folder = run_dir(Path(project_dir).expanduser().absolute(), holder.run)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / STOP_FILE).touch()
    return holder


def _kill_tree(pid: int) -> None:
    """Kill a process and its descendants, children first (Windows has no process groups to kill at once)."""
    import psutil

    try:
        parent = psutil.Process(pid)
        victims = [*parent.children(recursive=True), parent]
    except psutil.Error:
        return
    for proc in victims:
        try:
            proc.kill()
        except psutil.Error:
            pass


ENGINE_ACCELERATE_CONFIG = "accelerate_config.yaml"  # in the run folder: the engine's own, when it has one


def engine_accelerate_config(config: TrainConfig, processes: int) -> str | None:
    """The engine's ``accelerate launch`` config for ``processes`` processes written into the run folder (its path),
    or None when the engine trains with accelerate's default (data parallel)."""
    import yaml

    wanted = get_engine(config.engine).accelerate_config(config, processes)
    if wanted is None:
        return None
    path = config.run_dir / ENGINE_ACCELERATE_CONFIG
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, yaml.safe_dump({**wanted, "num_processes": processes}, sort_keys=False))
    return str(path)


def start_training(config: TrainConfig, *, resume: bool = False, processes: int = 1,
                   events_path: str | os.PathLike[str] | None = None, accelerate_config: str | None = None,
                   lower_priority: bool = True, output: int | IO[Any] | None = None) -> TrainingProcess:
    """Write the run's launch config and start its training child.

    Args:
        config: the run's settings; ``config.run_name`` must be a plain name.
        resume: continue from the run's newest checkpoint.
        processes: see :func:`launch_command`.
        events_path: where the events go (default ``<run>/events.jsonl``).
        accelerate_config: see :func:`launch_command`. Without one, a run on several processes uses the engine's
            own (``Engine.accelerate_config``, e.g. FSDP for a model too big for one card), written into the run
            folder as :data:`ENGINE_ACCELERATE_CONFIG`.
        lower_priority: run below normal priority (the app: yes; the CLI in a terminal: as the user's shell).
        output: ``subprocess.PIPE`` to read the child's output as text lines, an open file to write it there
            (stdout and stderr), None to let it through.

    Raises:
        RunNameError: the run name is empty or not plain.
        LaunchError: the process could not be started, a training already runs in the project, or the engine's
            own environment is not set up.
    """
    from alltalk_gui.core.engine_api.engine import get_engine
    from alltalk_gui.core.engine_api.environment import EngineEnvironmentError, python_for

    check_run_name(config.run_name)
    try:
        python = python_for(get_engine(config.engine))
    except EngineEnvironmentError as exc:
        raise LaunchError(str(exc)) from exc
    run = config.run_dir
    project = run.parent.parent
    training = running_training(project)
    if training is not None:
        raise LaunchError(str(TrainingRunningError(project, training)))
    run.mkdir(parents=True, exist_ok=True)
    (run / STOP_FILE).unlink(missing_ok=True)  # a leftover from a killed session would stop this one at once
    events = Path(events_path) if events_path else run / EVENTS_FILE
    config_file = write_launch_config(config)
    if processes > 1 and not accelerate_config:
        accelerate_config = engine_accelerate_config(config, processes)
    cmd = launch_command(config_file, events, resume=resume, processes=processes,
                         mixed_precision=config.mixed_precision, accelerate_config=accelerate_config, python=python)
    cmd = priority_prefix(lower_priority) + cmd
    if output is subprocess.PIPE:
        piped = {"stderr": subprocess.STDOUT, "text": True, "encoding": "utf-8", "errors": "replace", "bufsize": 1}
    else:
        piped = {"stderr": subprocess.STDOUT} if output is not None else {}
    try:
        process = subprocess.Popen(cmd, stdout=output, env=child_env(processes), **piped,
                                   **popen_options(lower_priority=lower_priority))
    except OSError as exc:
        raise LaunchError(f"Cannot start the training process: {exc}") from exc
    child = TrainingProcess(process=process, run_dir=run, events_path=events, processes=processes, command=cmd)
    try:
        child.run_lock = RunLock.hold(project, process.pid, config.run_name)
    except TrainingRunningError as exc:  # another one started in the same moment: this one goes
        child.kill()
        process.wait()
        raise LaunchError(str(exc)) from exc
    except (OSError, psutil.Error):  # read-only media, or the child already gone: the child itself says why
        pass
    return child
