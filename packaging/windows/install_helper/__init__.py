"""The Windows launcher's decisions and install steps, in Python so that they are tested on any OS.

``alltalk-gui-launcher.ps1`` stays thin: it finds (or asks for) a Python, shows a progress window that follows
the install log, and shows errors. Everything it would have to decide runs here, in the Python it found (or in
``.venv``'s own for the quick check at each start), with the standard library only:

``python packaging\\windows\\install_helper check   --state DIR [--cpu | --cuda cu126|cu128|URL]``
    exit 0 when ``.venv`` is up to date (the launcher starts the app at once), 10 when it needs an install.
``python packaging\\windows\\install_helper install --state DIR [--cpu | --cuda ...]``
    check the computer, choose the PyTorch build, repair or create ``.venv``, install, stamp. Appends to
    ``DIR\\install.log`` and writes ``DIR\\install-result.json`` ({"ok", "message", "warnings", "log"}) for the
    launcher's message box. Exit 0 installed, 1 a step failed, 2 something to fix first, 3 already running.

Modules: :mod:`.cuda` (which build for which card and driver), :mod:`.checks` (Python, path length, Visual C++
runtime), :mod:`.plan` (facts -> plan), :mod:`.venv` (is ``.venv`` whole), :mod:`.pip_options` (truststore,
mirrors), :mod:`.stamp` (what was installed), :mod:`.install` (the steps).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import List, Optional

from . import plan as planning
from . import stamp
from .install import AlreadyRunning, Commands, InstallFailed, make_environment

ROOT = Path(__file__).resolve().parents[3]  # install_helper -> windows -> packaging -> the checkout
LOG_FILE = "install.log"
RESULT_FILE = "install-result.json"
EXIT_OK, EXIT_FAILED, EXIT_FIX_FIRST, EXIT_RUNNING, EXIT_NEEDS_INSTALL = 0, 1, 2, 3, 10


def default_state_dir() -> Path:
    """%LOCALAPPDATA%\\AllTalkGUI on Windows (where the launcher shows the log), else ~/.local/state/alltalk_gui."""
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "AllTalkGUI"
    return Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state")) / "alltalk_gui"


def parse_args(argv: Optional[List[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="install_helper", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["check", "install"])
    parser.add_argument("--state", type=Path, default=None, help="folder for install.log and the result")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this helper's)")
    build = parser.add_mutually_exclusive_group()
    build.add_argument("--cpu", action="store_true", help="install PyTorch's CPU build")
    build.add_argument("--cuda", default=None, help="cu126, cu128, or a PyTorch index URL ending in one")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None, commands: Optional[Commands] = None,
         facts: Optional[planning.Facts] = None) -> int:
    args = parse_args(argv)
    root = args.root.resolve()
    state_dir = args.state or default_state_dir()
    try:
        asked = "cpu" if args.cpu else planning.flavour_argument(args.cuda) if args.cuda else None
    except ValueError as exc:  # -CudaIndex with something else than cu126, cu128 or their URLs
        state_dir.mkdir(parents=True, exist_ok=True)
        return _result(state_dir, EXIT_FIX_FIRST, str(exc), [], state_dir / LOG_FILE)
    facts = facts or planning.gather(str(root))
    env_dir = root / ".venv"
    previous = stamp.read(env_dir)
    plan = planning.make_plan(facts, stamp.torch_version(root), asked, previous)
    if args.command == "check":
        current = planning.up_to_date(plan, previous, stamp.pyproject_sha256(root), stamp.installed_version(env_dir))
        return EXIT_OK if current else EXIT_NEEDS_INSTALL
    return run_install(plan, root, state_dir, commands or Commands())


def run_install(plan: planning.Plan, root: Path, state_dir: Path, commands: Commands) -> int:
    """The install with its log and result file; returns the exit status (see the package docstring)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / LOG_FILE
    with open(log_path, "a", encoding="utf-8", newline="\n") as log:
        log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} install of {root} with {sys.executable} "
                  f"({sys.version.split()[0]}), PyTorch {plan.torch_version}\n")
        if plan.problems:
            log.write("Fix first:\n" + planning.format_list(plan.problems) + "\n")
            return _result(state_dir, EXIT_FIX_FIRST, " ".join(plan.problems), [], log_path)
        try:
            make_environment(plan, root, state_dir, log, commands)
        except AlreadyRunning as exc:
            return _result(state_dir, EXIT_RUNNING, str(exc), [], log_path)
        except InstallFailed as exc:
            log.write(f"FAILED: {exc}\n")
            return _result(state_dir, EXIT_FAILED, f"{exc} The end of the log is below; the whole log is "
                           f"{log_path}.", [], log_path)
        for warning in plan.warnings:
            log.write(f"Note: {warning}\n")
    return _result(state_dir, EXIT_OK, "AllTalk GUI is installed.", plan.warnings, log_path)


def _result(state_dir: Path, code: int, message: str, warnings: List[str], log_path: Path) -> int:
    result = {"ok": code == EXIT_OK, "exit": code, "message": message, "warnings": warnings, "log": str(log_path)}
    # UTF-8 with a BOM: Windows PowerShell 5.1's Get-Content then reads "José" as José without -Encoding.
    (state_dir / RESULT_FILE).write_text(json.dumps(result, ensure_ascii=False, indent=2), encoding="utf-8-sig")
    print(message, *warnings, sep="\n")
    return code
