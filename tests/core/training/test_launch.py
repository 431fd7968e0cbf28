"""The training launcher: commands, per-OS process options, Stop and kill (what Windows would get is checked by
switching ``launch._on_windows``; the Stop and rendezvous tests run real training children on the tiny model)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from alltalk_gui.core.training import launch
from alltalk_gui.core.training.checkpoints import run_checkpoints
from alltalk_gui.core.training.events import Done, Started, Step
from alltalk_gui.core.training.follow import EventsFollower, follow_process
from alltalk_gui.core.portability.process_flags import CREATE_NO_WINDOW
from alltalk_gui.core.training.launch import (
    BELOW_NORMAL_PRIORITY_CLASS,
    CREATE_NEW_PROCESS_GROUP,
    TrainingProcess,
    child_env,
    distributed_backend,
    launch_command,
    popen_options,
    priority_prefix,
    start_training,
)
from alltalk_gui.core.training.run_folders import RunNameError
from tests.core.training.tiny_training import fast_config


@pytest.fixture()
def windows(monkeypatch):
    monkeypatch.setattr(launch, "_on_windows", lambda: True)


def test_one_process_runs_the_runner_unbuffered():
    assert launch_command("c.json", "e.jsonl", resume=True) == [
        sys.executable, "-u", "-m", "alltalk_gui.core.training.runner", "--config", "c.json", "--events", "e.jsonl",
        "--resume"]


def test_several_processes_meet_on_loopback_at_a_free_port():
    cmd = launch_command("c.json", "e.jsonl", resume=False, processes=2, mixed_precision="bf16", port=40123)
    assert cmd[:4] == [sys.executable, "-u", "-m", "alltalk_gui.core.training.loopback_launcher"]
    assert cmd[cmd.index("--main_process_ip") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--main_process_port") + 1] == "40123"
    assert cmd[cmd.index("--num_processes") + 1] == "2" and cmd[cmd.index("--mixed_precision") + 1] == "bf16"
    assert cmd[cmd.index("-m", 3) + 1] == "alltalk_gui.core.training.runner"
    chosen = launch_command("c", "e", resume=False, processes=2)
    assert int(chosen[chosen.index("--main_process_port") + 1]) > 0  # a free one, not accelerate's fixed 29500


def test_an_accelerate_config_for_several_machines_keeps_its_own_address(tmp_path):
    one, two = tmp_path / "one.yaml", tmp_path / "two.yaml"
    one.write_text("distributed_type: FSDP\nnum_machines: 1\n")
    two.write_text("distributed_type: MULTI_GPU\nnum_machines: 2\nmain_process_ip: 10.0.0.1\n")
    assert "127.0.0.1" in launch_command("c", "e", resume=False, processes=2, accelerate_config=str(one))
    cmd = launch_command("c", "e", resume=False, processes=2, accelerate_config=str(two))
    assert "--main_process_ip" not in cmd and cmd[cmd.index("--config_file") + 1] == str(two)


def test_windows_gets_creation_flags_gloo_and_no_libuv(windows):
    assert popen_options(lower_priority=True) == {
        "creationflags": CREATE_NEW_PROCESS_GROUP | BELOW_NORMAL_PRIORITY_CLASS}
    assert popen_options(lower_priority=False) == {"creationflags": CREATE_NEW_PROCESS_GROUP}
    assert priority_prefix(True) == []  # the creation flag lowers it; no re-nicing of Scripts\python.exe
    assert distributed_backend() == "gloo"
    env = child_env(2, base={"PATH": "x"})
    assert env["USE_LIBUV"] == "0" and env["PYTHONUNBUFFERED"] == "1" and "GLOO_SOCKET_IFNAME" not in env
    assert "USE_LIBUV" not in child_env(1, base={})


def test_posix_gets_its_own_session_nice_and_loopback_interfaces():
    assert popen_options(lower_priority=True) == {"start_new_session": True}
    prefix = priority_prefix(True)
    assert Path(prefix[0]).name == "nice" and prefix[1:] == ["-n", "10"]
    assert priority_prefix(False) == []
    assert distributed_backend() is None  # accelerate's own choice: NCCL on CUDA, gloo on the CPU
    env = child_env(2, base={"NCCL_SOCKET_IFNAME": "mine"})
    assert env["GLOO_SOCKET_IFNAME"] == launch.loopback_interface() == "lo"
    assert env["NCCL_SOCKET_IFNAME"] == "mine"  # the user's own setting stays


class _Recorder:
    """A stand-in for Popen that records the signals sent to it."""

    pid = 12345

    def __init__(self):
        self.sent = []

    def poll(self):
        return None

    def send_signal(self, sig):
        self.sent.append(sig)


def _child(tmp_path, processes=1) -> TrainingProcess:
    return TrainingProcess(process=_Recorder(), run_dir=tmp_path / "run", events_path=tmp_path / "run" / "e",
                           processes=processes, command=[])


def test_stop_on_windows_writes_stop_and_sends_ctrl_break_never_sigterm(windows, tmp_path, monkeypatch):
    monkeypatch.setattr(signal, "CTRL_BREAK_EVENT", 1, raising=False)
    child = _child(tmp_path)
    child.request_stop()
    assert (tmp_path / "run" / "STOP").is_file() and child.process.sent == [1]
    several = _child(tmp_path, processes=2)
    several.request_stop()
    assert several.process.sent == []  # the STOP file alone reaches every process under accelerate


def test_a_ctrl_break_that_cannot_be_delivered_leaves_the_stop_file_to_do_it(windows, tmp_path, monkeypatch):
    """The app has no console, so GenerateConsoleCtrlEvent fails there: the STOP file still stops the run."""
    monkeypatch.setattr(signal, "CTRL_BREAK_EVENT", 1, raising=False)
    child = _child(tmp_path)

    def no_console(sig):
        raise OSError(6, "The handle is invalid")

    child.process.send_signal = no_console
    child.request_stop()
    assert (tmp_path / "run" / "STOP").is_file()


def test_windows_starts_the_child_below_normal_in_its_own_group_without_nice(windows, tmp_path, monkeypatch):
    started = {}

    class FakePopen:
        pid = 4321

        def __init__(self, cmd, **kwargs):
            started.update(cmd=cmd, **kwargs)

    monkeypatch.setattr(launch.subprocess, "Popen", FakePopen)
    config = fast_config(tmp_path / "p", tmp_path / "tiny", "r1")
    child = start_training(config, processes=2, output=subprocess.PIPE)
    assert started["creationflags"] == CREATE_NEW_PROCESS_GROUP | BELOW_NORMAL_PRIORITY_CLASS
    assert "start_new_session" not in started and started["cmd"][0] == sys.executable  # no nice, no re-nicing
    assert started["env"]["USE_LIBUV"] == "0" and started["stdout"] == subprocess.PIPE
    assert (config.run_dir / "launch_config.json").is_file() and child.command == started["cmd"]


def test_stop_on_posix_sends_sigterm_unless_signals_are_off(tmp_path):
    child = _child(tmp_path)
    child.request_stop()
    assert child.process.sent == [signal.SIGTERM]
    quiet = _child(tmp_path)
    quiet.request_stop(signals=False)
    assert quiet.process.sent == [] and (tmp_path / "run" / "STOP").is_file()
    quiet.clear_stop()
    assert not (tmp_path / "run" / "STOP").exists()


def test_kill_on_windows_ends_the_whole_tree(windows, tmp_path):
    """Windows has no process groups to kill: the launcher and what it started are killed one by one."""
    script = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; "
              "time.sleep(60)']); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.time() + 30
        while not psutil.Process(parent.pid).children():
            assert time.time() < deadline
            time.sleep(0.05)
        grandchild = psutil.Process(parent.pid).children()[0]
        child = TrainingProcess(process=parent, run_dir=tmp_path, events_path=tmp_path / "e", processes=1,
                                command=[])
        child.kill()
        assert parent.wait(timeout=10) != 0
        grandchild.wait(timeout=10)
        assert not grandchild.is_running()
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_run_name_with_separators_never_starts(tmp_path):
    config = fast_config(tmp_path / "p", tmp_path / "tiny", "../../escape")
    with pytest.raises(RunNameError):
        start_training(config)
    assert not (tmp_path / "escape").exists() and not (tmp_path / "p").exists()


# -- real children -------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_project(tmp_path_factory):
    from alltalk_gui.core.engines.xtts.tiny_model import build_tiny_xtts
    from alltalk_gui.testing.speech import make_speech_dataset

    root = tmp_path_factory.mktemp("launch")
    tiny = build_tiny_xtts(root / "tiny")
    make_speech_dataset(root / "project" / "dataset", n_train=4, n_eval=1)
    return root / "project", tiny


def _follow_until(child: TrainingProcess, follower: EventsFollower, seen: list, wanted, timeout=300) -> None:
    deadline = time.time() + timeout
    while not any(wanted(e) for e in seen):
        assert child.process.poll() is None, f"the child exited with {child.process.returncode}: {seen[-3:]}"
        assert time.time() < deadline, "the training never got there"
        seen += follower.poll()
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_stop_through_the_stop_file_with_signals_disabled(tiny_project):
    """What Windows' app gets when CTRL_BREAK cannot reach the child: the STOP file alone stops it cleanly."""
    project, tiny = tiny_project
    config = fast_config(project, tiny, "stop_file", epochs=200, batch_size=1)
    follower = EventsFollower(config.run_dir / "events.jsonl")
    child = start_training(config, output=subprocess.DEVNULL)
    seen: list = []
    try:
        _follow_until(child, follower, seen, lambda e: isinstance(e, Step))
        child.request_stop(signals=False)
        code = follow_process(child.process, follower, seen.append)
    finally:
        child.kill()
        child.clear_stop()
    done = seen[-1]
    assert code == 0 and isinstance(done, Done) and done.reason == "stopped", seen[-3:]
    assert run_checkpoints(config.run_dir)[-1].step == done.step < 200
    assert not (config.run_dir / "STOP").exists()


def _listening(root_pid: int) -> list[tuple[str, int]]:
    """(address, port) of every listening TCP socket of a process and its descendants."""
    found = []
    root = psutil.Process(root_pid)
    for proc in [root, *root.children(recursive=True)]:
        try:
            found += [(c.laddr.ip, c.laddr.port) for c in proc.net_connections(kind="inet")
                      if c.status == psutil.CONN_LISTEN]
        except psutil.Error:
            continue
    return found


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_processes_rendezvous_on_loopback_only_and_stop_together(tiny_project):
    project, tiny = tiny_project
    config = fast_config(project, tiny, "loopback", epochs=200, batch_size=1)
    follower = EventsFollower(config.run_dir / "events.jsonl")
    child = start_training(config, processes=2, output=subprocess.DEVNULL)
    port = int(child.command[child.command.index("--main_process_port") + 1])
    seen: list = []
    try:
        _follow_until(child, follower, seen, lambda e: isinstance(e, Step))
        listening = _listening(child.pid)
        child.request_stop(signals=False)
        code = follow_process(child.process, follower, seen.append)
    finally:
        child.kill()
        child.clear_stop()
    assert listening, "no listening socket found"
    assert port in {p for _ip, p in listening}  # the rendezvous server, on the port we chose
    assert all(ip.startswith("127.") or ip == "::1" for ip, _p in listening), listening
    started = next(e for e in seen if isinstance(e, Started))
    assert started.processes == 2
    assert code == 0 and isinstance(seen[-1], Done) and seen[-1].reason == "stopped"
    assert run_checkpoints(config.run_dir)[-1].step == seen[-1].step


def test_the_windowed_app_starts_training_without_a_console_window(windows, monkeypatch):
    """The app has no console window (launcher, windowed build): the training child must not open one."""
    monkeypatch.setattr(launch.process_flags, "has_console_window", lambda: False)
    assert popen_options(lower_priority=True) == {
        "creationflags": CREATE_NO_WINDOW | CREATE_NEW_PROCESS_GROUP | BELOW_NORMAL_PRIORITY_CLASS}
