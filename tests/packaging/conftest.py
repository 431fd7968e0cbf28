"""Fixtures for the packaging tests: an X display (Xvfb) for the launcher's progress window, a fresh home."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def xvfb_display():
    """A private Xvfb display number as ":N"; skips when Xvfb is not installed (Debian package: xvfb)."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (apt-get install xvfb)")
    for number in range(90, 110):
        if not Path(f"/tmp/.X11-unix/X{number}").exists() and not Path(f"/tmp/.X{number}-lock").exists():
            break
    else:
        pytest.skip("no free X display number")
    server = subprocess.Popen(["Xvfb", f":{number}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socket = Path(f"/tmp/.X11-unix/X{number}")
    deadline = time.monotonic() + 15
    while not socket.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            pytest.skip("Xvfb did not start")
        time.sleep(0.1)
    yield f":{number}"
    server.terminate()
    server.wait(10)


@pytest.fixture
def fresh_home(tmp_path) -> dict[str, str]:
    """Environment variables for a user with an empty home: no settings, no menu entries, no install log."""
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               XDG_STATE_HOME=str(home / ".local/state"), XDG_CACHE_HOME=str(home / ".cache"),
               ALLTALK_GUI_CONFIG_DIR=str(home / "alltalk_config"), QT_QPA_PLATFORM="offscreen")
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return env
