"""What this computer has (:class:`Facts`) and what to install on it (:class:`Plan`), decided without side effects.

:func:`gather` reads the facts (the Python running this helper, nvidia-smi, the registry); :func:`make_plan` turns
them into the PyTorch build to install, the exact pins, and the problems that must be fixed first, each one
sentence naming the one thing to do. Tests feed recorded facts (a GTX 1080 with an old driver, a user folder
``C:\\Users\\José``) to :func:`make_plan` on any OS.
"""

from __future__ import annotations

import os
import struct
import sys
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from . import checks, cuda
from .stamp import Stamp, pins

FLAVOUR_FROM_ARG = {"cpu": "cpu", "cu126": "cu126", "cu128": "cu128"}


@dataclass(frozen=True)
class Facts:
    root: str  # the checkout, as the OS spells it
    os_name: str  # os.name: "nt" on Windows
    python_version: Tuple[int, ...]
    pointer_bytes: int  # 8 for a 64-bit Python
    python_executable: str
    gpus: Tuple[cuda.Gpu, ...]
    vc_runtime: Optional[Tuple[int, int, int]]
    long_paths_enabled: bool


@dataclass(frozen=True)
class Plan:
    flavour: str
    forced: bool  # the user chose the build (-Cpu, -CudaIndex); kept on later starts
    index_url: str
    pins: List[str]
    torch_version: str  # what pip must leave installed, e.g. "2.9.1+cu126"
    reason: str  # why this build, in words (logged)
    problems: List[str] = field(default_factory=list)  # fix these first: the install does not start
    warnings: List[str] = field(default_factory=list)  # shown after a working install (e.g. update the driver)


def gather(root: str, run_nvidia_smi: cuda.Runner = cuda.run_nvidia_smi) -> Facts:
    """The facts of the computer this runs on."""
    return Facts(root=root, os_name=os.name, python_version=tuple(sys.version_info[:3]),
                 pointer_bytes=struct.calcsize("P"), python_executable=sys.executable,
                 gpus=tuple(cuda.read_gpus(run_nvidia_smi)), vc_runtime=checks.read_vc_runtime(),
                 long_paths_enabled=checks.read_long_paths_enabled())


def flavour_argument(value: str) -> str:
    """"cpu", "cu126", "cu128", or a PyTorch index URL ending in one of them (the old -CudaIndex)."""
    name = value.rstrip("/").rsplit("/", 1)[-1].lower()
    if name not in FLAVOUR_FROM_ARG:
        raise ValueError(f"Unknown PyTorch build {value!r}; use cpu, cu126 or cu128.")
    return FLAVOUR_FROM_ARG[name]


def make_plan(facts: Facts, torch_version: str, asked: Optional[str] = None,
              previous: Optional[Stamp] = None) -> Plan:
    """The install for ``facts``. ``asked``: a build the user forced now; ``previous``: the last install's
    stamp, whose forced build is kept when nothing is asked."""
    warnings: List[str] = []
    if asked is None and previous is not None and previous.forced:
        asked = previous.flavour
    if asked is not None:
        choice = cuda.Choice(asked, f"PyTorch's {asked} build, as asked (-Cpu or -CudaIndex).",
                             cuda.driver_fix(facts.gpus, asked, facts.os_name))
        warnings += [w for w in [cuda.coverage_problem(asked, facts.gpus)] if w]
    else:
        choice = cuda.choose(facts.gpus, facts.os_name)
    warnings += [w for w in [choice.fix, *choice.notes] if w]
    return Plan(flavour=choice.flavour, forced=asked is not None, index_url=choice.index_url,
                pins=pins(torch_version, choice.flavour), torch_version=f"{torch_version}+{choice.flavour}",
                reason=choice.reason, problems=problems(facts), warnings=warnings)


def problems(facts: Facts) -> List[str]:
    """What must be fixed before installing, most basic first (each names its fix)."""
    found = [checks.python_problem(facts.python_version, facts.pointer_bytes, facts.python_executable)]
    if facts.os_name == "nt":
        found.append(checks.path_length_problem(facts.root, facts.long_paths_enabled))
        found.append(checks.vc_runtime_problem(facts.vc_runtime))
    return [p for p in found if p]


def up_to_date(plan: Plan, stamp: Optional[Stamp], pyproject_sha256: str, installed_torch: Optional[str]) -> bool:
    """Whether the environment already is what ``plan`` asks for (the launcher then starts the app at once)."""
    return (not plan.problems and stamp is not None and stamp.pyproject_sha256 == pyproject_sha256
            and stamp.flavour == plan.flavour and installed_torch == plan.torch_version)


def format_list(items: Sequence[str]) -> str:
    return "\n".join(f"- {item}" for item in items)
