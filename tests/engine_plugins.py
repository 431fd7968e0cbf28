"""Plug-in engines for tests: a distribution's metadata (``*.dist-info`` with an ``entry_points.txt``) written into a
temporary folder on ``sys.path``, which is exactly how an installed plug-in package is found.

:func:`plugin_site` writes the folder; :func:`installed` puts it on ``sys.path`` for this process (and makes the
registry look again), and a child process gets it through ``PYTHONPATH`` (:func:`child_env`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator

from alltalk_gui.core.engine_api.engine import ENTRY_POINT_GROUP, reload_engines

ROOT = Path(__file__).resolve().parents[1]


def plugin_site(folder: Path, engines: dict[str, str], dist: str = "test-engines") -> Path:
    """``folder`` holding the metadata of a distribution ``dist`` that declares ``engines`` (name -> "module:attr")
    in the engines' entry-point group. Returns ``folder``."""
    info = folder / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
    lines = "".join(f"{name} = {value}\n" for name, value in engines.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}", encoding="utf-8")
    return folder


@contextlib.contextmanager
def installed(site: Path) -> Iterator[Path]:
    """``site`` (from :func:`plugin_site`) on ``sys.path`` and the registry reloaded, until the block ends."""
    sys.path.insert(0, str(site))
    reload_engines()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        reload_engines()


def child_env(site: Path, **extra: str) -> dict[str, str]:
    """The environment for a child process that sees the plug-ins of ``site`` (and this checkout first)."""
    path = os.pathsep.join([str(ROOT), str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**os.environ, "PYTHONPATH": path, **extra}
