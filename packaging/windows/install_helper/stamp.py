"""The stamp in ``.venv`` that records what was installed, so a later start knows whether anything changed.

It holds the hash of pyproject.toml (an update of the app), the PyTorch build (``cu126``, ``cu128`` or ``cpu``),
whether the user forced that build (``-Cpu`` / ``-CudaIndex``, kept until they say otherwise) and the exact
torch version installed. PyTorch is pinned with its local version, ``torch==2.9.1+cu126``: by PEP 440 a plain
``torch==2.9.1`` is satisfied by an installed ``2.9.1+cpu``, so switching builds (a graphics card added later,
``-Cpu``) would leave the old build in place while the stamp claimed the new one.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import List, Optional

STAMP_FILE = ".alltalk-gui-installed"
TORCH_PACKAGES = ("torch", "torchaudio")  # pinned together in pyproject.toml


@dataclass(frozen=True)
class Stamp:
    pyproject_sha256: str
    flavour: str
    forced: bool
    torch: str  # the installed version, e.g. "2.9.1+cu126"

    def to_text(self) -> str:
        return json.dumps(asdict(self), indent=2) + "\n"


def read(venv: Path) -> Optional[Stamp]:
    """The stamp, or None when there is none or it is from the old launcher (a single line) or unreadable."""
    try:
        return Stamp(**json.loads((venv / STAMP_FILE).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def write(venv: Path, stamp: Stamp) -> None:
    (venv / STAMP_FILE).write_text(stamp.to_text(), encoding="utf-8")


def pyproject_sha256(root: Path) -> str:
    return hashlib.sha256((root / "pyproject.toml").read_bytes()).hexdigest()


def torch_version(root: Path) -> str:
    """The torch version pyproject.toml pins ("2.9.1"): one place says which PyTorch the app runs on."""
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    match = re.search(r'"torch==([0-9][^";\s]*)"', text)
    if not match:
        raise ValueError("pyproject.toml does not pin torch (\"torch==X.Y.Z\")")
    return match.group(1)


def pins(version: str, flavour: str) -> List[str]:
    """["torch==2.9.1+cu126", "torchaudio==2.9.1+cu126"]: the exact build, so a mismatched one is replaced."""
    return [f"{name}=={version}+{flavour}" for name in TORCH_PACKAGES]


def installed_version(venv: Path, package: str = "torch") -> Optional[str]:
    """The version of ``package`` in the venv, read from its dist-info (no need to import torch)."""
    for metadata in venv.glob(f"[Ll]ib/**/site-packages/{package}-*.dist-info/METADATA"):
        for line in metadata.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    return None
