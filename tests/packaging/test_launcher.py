"""The Linux desktop launcher: its progress window, its fast path, and (opt-in) a real first-run install.

The full first-run test copies the checkout into a fresh folder (with a space in its name), starts the launcher
there with an X display (Xvfb) for the progress window and Qt offscreen for the app, and waits until the new
environment is installed and the app logs "ready". It downloads and installs several GB, so it runs only with
ALLTALK_TEST_FRESH_INSTALL=1.
"""

from __future__ import annotations

import hashlib
import os
import queue
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.packaging.conftest import ROOT

LINUX = ROOT / "packaging" / "linux"
PROGRESS = LINUX / "install_progress.py"
SYSTEM_PYTHON = shutil.which("python3") or sys.executable


def has_tk(python: str) -> bool:
    return subprocess.run([python, "-c", "import tkinter"], capture_output=True).returncode == 0


def read_until(process: subprocess.Popen, wanted: list[str], timeout: float) -> str:
    """Collect the process's output until every string in ``wanted`` appeared; fail on a traceback or timeout."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen = ""
    deadline = time.monotonic() + timeout
    while not all(w in seen for w in wanted):
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            line = ""
        if line is None:
            pytest.fail(f"exited with {process.wait()} before printing {wanted}:\n{seen[-6000:]}")
        seen += line
        assert "Traceback" not in seen, seen[-6000:]
        if time.monotonic() > deadline:
            pytest.fail(f"no {wanted} within {timeout:.0f} s:\n{seen[-6000:]}")
    return seen


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.mark.skipif(not has_tk(SYSTEM_PYTHON), reason="the system python3 has no tkinter")
def test_progress_window_runs_the_install_and_logs_its_output(tmp_path, fresh_home, xvfb_display):
    log = tmp_path / "install.log"
    script = "echo Collecting torch==2.9.1; sleep 0.5; echo Installing collected packages: torch; echo Successfully installed torch-2.9.1"
    done = subprocess.run([SYSTEM_PYTHON, str(PROGRESS), str(log), "bash", "-c", script], capture_output=True,
                          text=True, timeout=60, env={**fresh_home, "DISPLAY": xvfb_display})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "progress window opened" in done.stdout
    text = log.read_text()
    assert "Collecting torch==2.9.1" in text and "Successfully installed torch-2.9.1" in text


@pytest.mark.skipif(not has_tk(SYSTEM_PYTHON), reason="the system python3 has no tkinter")
def test_progress_window_says_so_when_there_is_no_display_and_runs_nothing(tmp_path, fresh_home):
    marker = tmp_path / "ran"
    done = subprocess.run([SYSTEM_PYTHON, str(PROGRESS), str(tmp_path / "install.log"), "touch", str(marker)],
                          capture_output=True, text=True, timeout=60, env=fresh_home)
    assert done.returncode == 3, done.stdout + done.stderr  # the launcher then tries zenity, a terminal, ...
    assert not marker.exists()


def copy_checkout(target: Path) -> Path:
    """The repository's tracked files (as they are in the working tree), as a fresh user would download them."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


def launcher_checkout(tmp_path: Path) -> Path:
    """The launcher's files and pyproject.toml in a folder with a space in its name, with no environment yet."""
    checkout = tmp_path / "AllTalk GUI"
    (checkout / "packaging").mkdir(parents=True)
    shutil.copytree(LINUX, checkout / "packaging" / "linux")
    shutil.copy2(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    return checkout


def test_launcher_starts_an_installed_environment_at_once(tmp_path, fresh_home):
    """When .venv matches pyproject.toml the launcher starts the app with no install and no window."""
    checkout = launcher_checkout(tmp_path)
    # An installed environment: the development one's app entry point, stamped as installed from this pyproject.
    (checkout / ".venv" / "bin").mkdir(parents=True)
    os.symlink(Path(sys.prefix) / "bin" / "alltalk-gui", checkout / ".venv" / "bin" / "alltalk-gui")
    digest = hashlib.sha256((checkout / "pyproject.toml").read_bytes()).hexdigest()
    (checkout / ".venv" / ".alltalk-gui-installed").write_text(digest + "\n")

    process = subprocess.Popen(["bash", str(checkout / "packaging" / "linux" / "alltalk-gui-launcher.sh")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=fresh_home)
    try:
        output = read_until(process, ["AllTalk GUI", "ready"], timeout=120)
    finally:
        stop(process)
    assert "Setting up" not in output
    assert not (Path(fresh_home["XDG_STATE_HOME"]) / "alltalk_gui" / "install.log").exists()


# Stands in for first_run_install.sh: prints what pip would and then provides the environment by linking the
# development one's app entry point, so each way of showing progress can be tried in seconds.
STAND_IN_INSTALL = f"""
echo "Collecting torch==2.9.1"
sleep 1
echo "Installing collected packages: torch"
mkdir -p .venv/bin
ln -sf {Path(sys.prefix) / "bin" / "alltalk-gui"} .venv/bin/alltalk-gui
echo "Successfully installed torch-2.9.1"
"""


TERMINALS = ("x-terminal-emulator", "gnome-terminal", "konsole", "xfce4-terminal", "xterm")


@pytest.mark.parametrize("mode", ["tk", "zenity", "terminal", "console", "notify"])
def test_launcher_shows_progress_installs_stamps_and_starts_the_app(tmp_path, fresh_home, mode, request):
    env = {**fresh_home, "ALLTALK_GUI_PROGRESS": mode}
    if mode in ("tk", "zenity", "terminal"):
        if mode == "tk" and not has_tk(SYSTEM_PYTHON):
            pytest.skip("the system python3 has no tkinter")
        if mode == "zenity" and shutil.which("zenity") is None:
            pytest.skip("zenity is not installed")
        if mode == "terminal" and not any(shutil.which(t) for t in TERMINALS):
            pytest.skip("no terminal emulator is installed")
        env["DISPLAY"] = request.getfixturevalue("xvfb_display")
    checkout = launcher_checkout(tmp_path)
    script = tmp_path / "stand_in_install.sh"
    script.write_text(f"cd {shlex.quote(str(checkout))}\n" + STAND_IN_INSTALL)
    env["ALLTALK_GUI_INSTALL_SCRIPT"] = str(script)
    process = subprocess.Popen(["bash", str(checkout / "packaging" / "linux" / "alltalk-gui-launcher.sh")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                               cwd=fresh_home["HOME"])
    try:
        output = read_until(process, ["AllTalk GUI 0", "ready"], timeout=180)
    finally:
        stop(process)
    digest = hashlib.sha256((checkout / "pyproject.toml").read_bytes()).hexdigest()
    assert (checkout / ".venv" / ".alltalk-gui-installed").read_text().strip() == digest
    log = (Path(fresh_home["XDG_STATE_HOME"]) / "alltalk_gui" / "install.log").read_text()
    assert "Successfully installed torch-2.9.1" in log
    if mode == "tk":
        assert "progress window opened" in output
    if mode == "console":
        assert "Setting up AllTalk GUI" in output and "Collecting torch" in output


def test_launcher_stops_when_the_install_fails_and_keeps_no_stamp(tmp_path, fresh_home):
    checkout = launcher_checkout(tmp_path)
    script = tmp_path / "failing_install.sh"
    script.write_text("echo 'ERROR: No matching distribution found for torch==2.9.1'; exit 1\n")
    env = {**fresh_home, "ALLTALK_GUI_PROGRESS": "notify", "ALLTALK_GUI_INSTALL_SCRIPT": str(script)}
    done = subprocess.run(["bash", str(checkout / "packaging" / "linux" / "alltalk-gui-launcher.sh")],
                          capture_output=True, text=True, env=env, timeout=60, cwd=fresh_home["HOME"])
    assert done.returncode == 1
    assert "the installation did not finish" in done.stderr
    assert not (checkout / ".venv" / ".alltalk-gui-installed").exists()
    log = (Path(fresh_home["XDG_STATE_HOME"]) / "alltalk_gui" / "install.log").read_text()
    assert "No matching distribution" in log


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.skipif(os.environ.get("ALLTALK_TEST_FRESH_INSTALL") != "1",
                    reason="installs several GB into a fresh environment; set ALLTALK_TEST_FRESH_INSTALL=1")
def test_launcher_installs_a_fresh_checkout_with_a_progress_window_then_starts_the_app(tmp_path, fresh_home,
                                                                                      xvfb_display):
    checkout = copy_checkout(tmp_path / "AllTalk GUI checkout")
    env = {**fresh_home, "DISPLAY": xvfb_display, "PIP_CACHE_DIR": str(Path.home() / ".cache" / "pip")}
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(sys.prefix))
    started = time.monotonic()
    # Started from the home folder, as a desktop menu does, so nothing is found through the working directory.
    process = subprocess.Popen(["bash", str(checkout / "packaging" / "linux" / "alltalk-gui-launcher.sh")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                               cwd=fresh_home["HOME"])
    try:
        output = read_until(process, ["progress window opened", "AllTalk GUI 0", "ready"], timeout=3300)
    finally:
        stop(process)
    minutes = (time.monotonic() - started) / 60
    print(f"fresh install and start took {minutes:.1f} min")
    venv = checkout / ".venv"
    assert (venv / "bin" / "alltalk-gui").is_file()
    digest = hashlib.sha256((checkout / "pyproject.toml").read_bytes()).hexdigest()
    assert (venv / ".alltalk-gui-installed").read_text().strip() == digest
    log = (Path(fresh_home["XDG_STATE_HOME"]) / "alltalk_gui" / "install.log").read_text()
    assert "Successfully installed" in log
    # The app that started is the copy's own install, not the development checkout's.
    check = subprocess.run([str(venv / "bin" / "python"), "-c", "import alltalk_gui; print(alltalk_gui.__file__)"],
                           capture_output=True, text=True, env=env, cwd=fresh_home["HOME"])
    assert str(checkout) in check.stdout, output[-3000:]
