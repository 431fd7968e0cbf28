"""Recorded nvidia-smi outputs and a recording stand-in for pip, for the Windows install helper's tests.

The helper lives in packaging/windows/install_helper (run by the launcher's Python, not installed with the
app), so it is imported from there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import List, Sequence, TextIO

from tests.packaging.conftest import ROOT

sys.path.insert(0, str(ROOT / "packaging" / "windows"))

from install_helper import cuda  # noqa: E402

RECORDED = json.loads((Path(__file__).with_name("nvidia_smi_outputs.json")).read_text(encoding="utf-8"))


def nvidia_smi(case: str):
    """A stand-in for running nvidia-smi that answers as the recorded card and driver did."""
    record = RECORDED[case]

    def run(args: Sequence[str]) -> subprocess.CompletedProcess:
        if record == "missing":
            raise FileNotFoundError(2, "The system cannot find the file specified", "nvidia-smi")
        key = "query" if list(args) == cuda.QUERY else "query_old_driver"
        answer = record[key]
        return subprocess.CompletedProcess(list(args), answer["returncode"], answer["stdout"], "")

    return run


def recorded_gpus(case: str) -> List[cuda.Gpu]:
    return cuda.read_gpus(nvidia_smi(case))


class FakeCommands:
    """Records every command and does what pip and venv would to the files the helper looks at: a venv with
    pyvenv.cfg and an interpreter, torch's dist-info with the pinned version."""

    def __init__(self, pip_version: str = "23.0.1", pip_config: str = "", fail: str = "") -> None:
        self.pip_version = pip_version
        self.pip_config = pip_config
        self.fail = fail  # a word: the streamed command containing it exits 1
        self.captured: List[List[str]] = []
        self.streamed: List[tuple] = []

    def capture(self, args: Sequence[str]) -> subprocess.CompletedProcess:
        args = list(args)
        self.captured.append(args)
        out = ""
        if args[-2:] == ["pip", "--version"]:
            out = f"pip {self.pip_version} from somewhere (python 3.11)\n"
        elif args[-3:] == ["pip", "config", "list"]:
            out = self.pip_config
        return subprocess.CompletedProcess(args, 0, out, "")

    def stream(self, args: Sequence[str], cwd: Path, log: TextIO) -> int:
        args = list(args)
        self.streamed.append((args, cwd))
        log.write(f"(fake) {args[1:4]}\n")
        if self.fail and any(self.fail in a for a in args):
            return 1
        if args[1:3] == ["-m", "venv"]:
            make_venv(Path(args[3]))
        elif args[3:6] == ["install", "--upgrade", "pip"]:
            self.pip_version = "25.3"
        else:
            for pin in (a for a in args if a.startswith("torch==")):
                put_torch(venv_of(args[0]), pin.split("==", 1)[1])
        return 0

    def commands(self) -> List[List[str]]:
        return [args for args, _ in self.streamed]


def venv_of(python: str) -> Path:
    return Path(python).parents[1]


def make_venv(venv: Path, home: str = str(Path(sys.executable).parent)) -> None:
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    (venv / "pyvenv.cfg").write_text(f"home = {home}\ninclude-system-site-packages = false\n")


def put_torch(venv: Path, version: str) -> None:
    site = venv / "lib" / "python3.11" / "site-packages"
    for old in site.glob("torch-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    info = site / f"torch-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
