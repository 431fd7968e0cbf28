"""packaging/smoke_test.py itself: it passes on a working app and fails on a traceback or an early exit.

The frozen build takes 10 minutes and 7 GB, so here the smoke test runs against the development environment's
``alltalk-gui`` (the same start-up code, first-run checks included) and against small broken stand-ins.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.packaging.conftest import ROOT

SMOKE = ROOT / "packaging" / "smoke_test.py"


def run_smoke(executable: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SMOKE), str(executable), "--timeout", "120", *extra],
                          capture_output=True, text=True, timeout=400)


@pytest.mark.slow
def test_passes_on_the_app_and_sees_its_first_run_checks():
    # A plain console script is not frozen: entry.py's '-m' handling is tested in test_entry.py.
    done = run_smoke(Path(sys.prefix) / "bin" / "alltalk-gui", "--no-child-module")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "PASS" in done.stdout
    assert "base model: XTTS v2 base model in" in done.stdout  # the tiny model was loaded through coqui-tts


def stand_in(tmp_path: Path, body: str) -> Path:
    exe = tmp_path / "alltalk-gui"
    exe.write_text('#!/bin/sh\nif [ "$1" = --help ]; then echo "usage: alltalk-gui"; exit 0; fi\n' + body)
    exe.chmod(0o755)
    return exe


def test_fails_on_a_missing_module(tmp_path):
    exe = stand_in(tmp_path, "echo 'Traceback (most recent call last):'\n"
                             "echo \"ModuleNotFoundError: No module named 'ko_speech_tools.data'\"\nsleep 30\n")
    done = run_smoke(exe, "--no-first-run", "--no-child-module")
    assert done.returncode != 0
    assert "No module named 'ko_speech_tools.data'" in done.stdout + done.stderr


def test_fails_when_the_app_exits_before_it_is_ready(tmp_path):
    done = run_smoke(stand_in(tmp_path, "echo starting\nexit 0\n"), "--no-first-run", "--no-child-module")
    assert done.returncode != 0
    assert "exited" in done.stdout + done.stderr


def test_fails_when_the_cli_is_broken(tmp_path):
    exe = tmp_path / "alltalk-gui"
    exe.write_text("#!/bin/sh\necho 'ImportError: cannot import name main'\nexit 1\n")
    exe.chmod(0o755)
    done = run_smoke(exe, "--no-first-run")
    assert done.returncode != 0
    assert "--help" in done.stdout + done.stderr


def test_fails_when_the_frozen_app_cannot_run_its_child_processes(tmp_path):
    exe = stand_in(tmp_path, "echo 'alltalk-gui: error: unrecognized arguments: -m'\nexit 2\n")
    done = run_smoke(exe, "--no-first-run")
    assert done.returncode != 0
    assert "-m alltalk_gui gpu --json' exited 2" in done.stdout + done.stderr


def test_the_cli_checks_run_the_cli_program_beside_the_app(tmp_path):
    """A build holds alltalk-gui-cli beside the app (windowed on Windows): --help runs there, so a broken CLI
    program fails the smoke test even when the app answers --help."""
    app = stand_in(tmp_path, "echo ready\nsleep 30\n")
    cli = tmp_path / "alltalk-gui-cli"
    cli.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'alltalk_gui.cli'\"\nexit 1\n")
    cli.chmod(0o755)
    done = run_smoke(app, "--no-first-run", "--no-child-module")
    assert done.returncode != 0
    assert "No module named 'alltalk_gui.cli'" in done.stdout + done.stderr
