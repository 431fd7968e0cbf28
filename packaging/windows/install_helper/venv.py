"""The app's environment (``.venv`` in the checkout): find out whether it is whole, and rebuild it if not.

An install that was cancelled, a full disk or a Python that was uninstalled or upgraded leaves a ``.venv``
that looks present but cannot work, and pip cannot mend it: a venv without its interpreter, one whose
``pyvenv.cfg`` names a base Python that is gone ("No Python at 'C:\\...\\python.exe'"), or one whose pip never
got installed. Such a venv is deleted and created again; the packages in it would be reinstalled anyway.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class VenvState:
    """``kind``: "missing", "ok" or "broken" (then ``reason`` says why)."""

    kind: str
    reason: str = ""


def venv_python(venv: Path, os_name: str = os.name) -> Path:
    return venv / ("Scripts/python.exe" if os_name == "nt" else "bin/python")


def read_pyvenv_cfg(venv: Path) -> Optional[Dict[str, str]]:
    try:
        text = (venv / "pyvenv.cfg").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def inspect(venv: Path, run: Runner, os_name: str = os.name) -> VenvState:
    """Whether ``venv`` is usable: its interpreter exists, its base Python exists and it can import pip."""
    if not venv.exists():
        return VenvState("missing")
    cfg = read_pyvenv_cfg(venv)
    if cfg is None:
        return VenvState("broken", "it has no pyvenv.cfg (its creation was interrupted)")
    home = cfg.get("home", "")
    if not home or not Path(home).is_dir():
        return VenvState("broken", f"the Python it was made from ({home or 'unknown'}) is no longer installed")
    python = venv_python(venv, os_name)
    if not python.is_file():
        return VenvState("broken", f"it has no {python.name} (its creation was interrupted)")
    try:
        done = run([str(python), "-c", "import pip, sys; print(sys.version)"])
    except OSError as exc:
        return VenvState("broken", f"its Python does not start ({exc})")
    if done.returncode != 0:
        return VenvState("broken", "its Python cannot import pip (its creation was interrupted)")
    return VenvState("ok")


def create_command(venv: Path, base_python: str = sys.executable) -> list:
    """The command that makes a fresh venv from the Python running this helper (with pip)."""
    return [base_python, "-m", "venv", str(venv)]
