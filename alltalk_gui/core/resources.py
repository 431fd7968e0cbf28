"""Find the app's data files (``resources/``) wherever it is installed.

Three layouts exist: a source checkout or editable install (``resources/`` beside the package), a frozen
PyInstaller build (``resources/`` in the bundle), and a wheel install (``share/alltalk-gui`` under the
environment's prefix, from ``[tool.setuptools.data-files]``). The first place that has the file wins. Code running
in an engine's own environment (layered over the app's, see ``core/engine_api/environment.py``) looks under the
app's prefix, which that environment names in ``ALLTALK_GUI_APP_PREFIX``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def resource_roots() -> list[Path]:
    """The places searched, in order."""
    roots = []
    frozen_root = getattr(sys, "_MEIPASS", None)
    if frozen_root:
        roots.append(Path(frozen_root) / "resources")
    roots.append(Path(__file__).resolve().parents[2] / "resources")  # source checkout / editable install
    prefix = os.environ.get("ALLTALK_GUI_APP_PREFIX") or sys.prefix
    roots.append(Path(prefix) / "share" / "alltalk-gui")  # wheel install (data-files)
    return roots


def resource_path(*parts: str) -> Path:
    """The path of ``resources/<parts...>`` (a file or a folder) in this installation.

    Raises:
        FileNotFoundError: no known place holds it (a broken install).
    """
    roots = resource_roots()
    for root in roots:
        path = root.joinpath(*parts)
        if path.exists():
            return path
    raise FileNotFoundError(f"resources/{'/'.join(parts)} is missing from this installation "
                            f"(looked in {', '.join(str(r) for r in roots)}).")
