"""The Linux menu entry: the .desktop file validates, and install.sh puts entry and icons in the user's menu."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.packaging.conftest import ROOT

DESKTOP = ROOT / "packaging" / "linux" / "alltalk-gui.desktop"
INSTALL = ROOT / "packaging" / "linux" / "install.sh"
needs_validator = pytest.mark.skipif(shutil.which("desktop-file-validate") is None,
                                     reason="desktop-file-validate is not installed (desktop-file-utils)")


def read_entry(path: Path) -> dict[str, str]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # keys are case-sensitive in desktop entries
    parser.read(path, encoding="utf-8")
    return dict(parser["Desktop Entry"])


@needs_validator
def test_desktop_file_validates():
    done = subprocess.run(["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_desktop_file_names_the_app_and_its_icon():
    entry = read_entry(DESKTOP)
    assert entry["Name"] == "AllTalk GUI"
    assert entry["Icon"] == "alltalk-gui"
    assert entry["Terminal"] == "false"
    # Any argument would be read by the app as a CLI command, so the entry must pass none (no %f/%F/%u).
    assert "%" not in entry["Exec"]


@pytest.mark.parametrize("folder_name", ["data", "data with space"])
def test_install_script_puts_entry_and_icons_in_the_menu_and_removes_them(tmp_path, fresh_home, folder_name):
    data = tmp_path / folder_name
    env = {**fresh_home, "XDG_DATA_HOME": str(data)}
    done = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr

    installed = data / "applications" / "alltalk-gui.desktop"
    entry = read_entry(installed)
    launcher = ROOT / "packaging" / "linux" / "alltalk-gui-launcher.sh"
    assert entry["Exec"] == f'"{launcher}"'
    assert entry["TryExec"] == str(launcher)
    for size in (16, 24, 32, 48, 64, 128, 256, 512):
        icon = data / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "alltalk-gui.png"
        assert icon.read_bytes() == (ROOT / "resources" / "icons" / f"alltalk-gui-{size}.png").read_bytes()
    assert (data / "icons" / "hicolor" / "scalable" / "apps" / "alltalk-gui.svg").is_file()
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(installed)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr

    done = subprocess.run(["bash", str(INSTALL), "--uninstall"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not installed.exists()
    assert not list((data / "icons").rglob("alltalk-gui.*"))


def test_install_script_can_point_the_entry_at_a_frozen_build(tmp_path, fresh_home):
    build = tmp_path / "dist" / "alltalk-gui"
    build.mkdir(parents=True)
    (build / "alltalk-gui").write_text("#!/bin/sh\n")
    (build / "alltalk-gui").chmod(0o755)
    env = {**fresh_home, "XDG_DATA_HOME": str(tmp_path / "data")}
    done = subprocess.run(["bash", str(INSTALL), "--frozen", str(build)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    entry = read_entry(tmp_path / "data" / "applications" / "alltalk-gui.desktop")
    assert entry["Exec"] == f'"{build / "alltalk-gui"}"'

    missing = subprocess.run(["bash", str(INSTALL), "--frozen", str(tmp_path / "nowhere")], capture_output=True,
                             text=True, env=env, timeout=60)
    assert missing.returncode != 0 and "packaging/build.sh" in missing.stderr


@pytest.mark.slow
def test_the_app_opens_on_an_x_display_with_the_window_class_the_entry_names(fresh_home, xvfb_display):
    """On a real X server (Xvfb, Qt's xcb plugin) the window's WM_CLASS is what StartupWMClass says, so docks
    group the window under the menu entry's name and icon."""
    if shutil.which("xprop") is None or shutil.which("xwininfo") is None:
        pytest.skip("xprop/xwininfo are not installed (x11-utils)")
    import sys
    import time

    env = {**fresh_home, "DISPLAY": xvfb_display, "QT_QPA_PLATFORM": "xcb"}
    app = subprocess.Popen([str(Path(sys.prefix) / "bin" / "alltalk-gui")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=env, cwd=fresh_home["HOME"])
    try:
        output = ""
        deadline = time.monotonic() + 120
        while "ready" not in output:
            line = app.stdout.readline()
            assert line and time.monotonic() < deadline, f"the app did not come up on {xvfb_display}:\n{output}"
            output += line
        tree = subprocess.run(["xwininfo", "-root", "-children"], capture_output=True, text=True, env=env).stdout
        classes = set()
        for window in re.findall(r"^\s+(0x[0-9a-f]+)", tree, re.MULTILINE):
            prop = subprocess.run(["xprop", "-id", window, "WM_CLASS"], capture_output=True, text=True, env=env)
            classes.update(re.findall(r'"([^"]*)"', prop.stdout))
    finally:
        app.terminate()
        app.wait(30)
    assert read_entry(DESKTOP)["StartupWMClass"] in classes
    assert "alltalk-gui" in classes  # the instance name, which matches the entry's file name
