"""Which PyTorch build suits this computer's NVIDIA card and driver: cu126, cu128 or cpu.

PyPI's Windows wheels of PyTorch are CPU-only; the CUDA builds come from PyTorch's own index, one per CUDA
version, and each holds kernels for a range of cards (compute capabilities):

* **cu126** covers 5.0 to 9.0: Maxwell (GTX 9xx), Pascal (GTX 10xx), Volta, Turing, Ampere, Ada, Hopper;
* **cu128** covers 7.0 and up, including Blackwell (RTX 50xx, 10.0/12.0), but no longer Maxwell or Pascal:
  a GTX 1080 under cu128 fails with "no kernel image is available for execution on the device".

The driver must support the build's CUDA: every 12.x build runs on a driver from 528.33 on (Windows; 525.60.13
on Linux) through CUDA's minor-version compatibility, and Blackwell cards need CUDA 12.8's driver (570.65 on
Windows) anyway. So: the oldest card decides between cu126 and cu128 (a Blackwell card forces cu128), and a
driver too old for the build is the one thing to fix, named with the version to install. The card's
compute capability comes from ``nvidia-smi --query-gpu=compute_cap``; drivers older than about 510 do not know
that field, and then the card's name tells it (:func:`capability_from_name`).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence, Tuple

QUERY = ["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"]
QUERY_OLD_DRIVER = ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]
FLAVOURS = ("cu126", "cu128", "cpu")
INDEX_URL = "https://download.pytorch.org/whl/{flavour}"

# The oldest driver each build runs on (CUDA release notes, minor-version compatibility / CUDA 12.8 GA).
MIN_DRIVER = {
    "nt": {"cu126": (528, 33), "cu128": (570, 65)},
    "posix": {"cu126": (525, 60, 13), "cu128": (570, 26)},
}
CU126_RANGE = ((5, 0), (9, 0))  # compute capabilities with kernels in the cu126 build
CU128_FIRST = (7, 0)
DRIVER_DOWNLOAD = "https://www.nvidia.com/Download/index.aspx"

# Compute capability by marketing name, for drivers that cannot report it. First match wins.
_NAME_TO_CAPABILITY = [
    (r"RTX\s*PRO\s*\d+ Blackwell|RTX\s*50\d\d", (12, 0)),
    (r"B200|B100|GB200", (10, 0)),
    (r"H100|H200|GH200|H800", (9, 0)),
    (r"RTX\s*40\d\d|L40|L4\b|RTX\s*\d+\s*Ada", (8, 9)),
    (r"RTX\s*30\d\d|RTX\s*A\d+|A40\b|A10\b|A16\b|A2\b", (8, 6)),
    (r"A100|A800|A30\b", (8, 0)),
    (r"RTX\s*20\d\d|GTX\s*16\d\d|TITAN RTX|Quadro RTX|\bT4\b|T\d{3,4}\b", (7, 5)),
    (r"TITAN V|V100|Quadro GV100", (7, 0)),
    (r"GTX\s*10\d\d|TITAN Xp|TITAN X \(Pascal\)|Quadro P\d+|\bP100\b|\bP40\b|\bP4\b|MX[123]\d0", (6, 1)),
    (r"GTX\s*9\d\d|GTX\s*750|TITAN X\b|Quadro M\d+|\bM40\b|\bM60\b", (5, 2)),
    (r"GTX\s*[67]\d\d|TITAN\b|Quadro K\d+|\bK80\b", (3, 5)),
]


@dataclass(frozen=True)
class Gpu:
    """One card as nvidia-smi describes it."""

    name: str
    capability: Optional[Tuple[int, int]]  # None: neither nvidia-smi nor the name tells
    driver: str  # e.g. "472.12"

    @property
    def driver_version(self) -> Tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", self.driver))

    @property
    def label(self) -> str:
        return self.name.replace("NVIDIA ", "")


@dataclass(frozen=True)
class Choice:
    """The build to install, why, and what the user should do (``fix``: one sentence, or "")."""

    flavour: str
    reason: str
    fix: str = ""
    notes: Tuple[str, ...] = field(default=())

    @property
    def index_url(self) -> str:
        return INDEX_URL.format(flavour=self.flavour)


Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def run_nvidia_smi(args: Sequence[str]) -> "subprocess.CompletedProcess[str]":
    """Run nvidia-smi; raises OSError (FileNotFoundError) where there is none (no NVIDIA driver)."""
    return subprocess.run(list(args), capture_output=True, text=True, encoding="utf-8", errors="replace",
                          timeout=30, creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0))


def read_gpus(run: Runner = run_nvidia_smi) -> List[Gpu]:
    """The NVIDIA cards nvidia-smi lists; [] when there is no nvidia-smi or it reports none (driver broken)."""
    try:
        done = run(QUERY)
        if done.returncode == 0 and _parse(done.stdout, with_capability=True):
            return _parse(done.stdout, with_capability=True)
        done = run(QUERY_OLD_DRIVER)  # "Field "compute_cap" is not a valid field to query." (before ~510)
    except (OSError, subprocess.SubprocessError):
        return []
    return _parse(done.stdout, with_capability=False) if done.returncode == 0 else []


def _parse(text: str, *, with_capability: bool) -> List[Gpu]:
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != (3 if with_capability else 2) or not re.match(r"\d+\.\d+", parts[-1]):
            continue
        capability = None
        if with_capability and re.fullmatch(r"\d+\.\d+", parts[1]):
            major, minor = parts[1].split(".")
            capability = (int(major), int(minor))
        gpus.append(Gpu(parts[0], capability or capability_from_name(parts[0]), parts[-1]))
    return gpus


def capability_from_name(name: str) -> Optional[Tuple[int, int]]:
    """The compute capability of a card by its name (e.g. "NVIDIA GeForce GTX 1080" -> (6, 1)); None if unknown."""
    for pattern, capability in _NAME_TO_CAPABILITY:
        if re.search(pattern, name, re.IGNORECASE):
            return capability
    return None


def choose(gpus: Sequence[Gpu], os_name: str = "nt") -> Choice:
    """The PyTorch build for these cards and their driver (see the module docstring)."""
    if not gpus:
        return Choice("cpu", "nvidia-smi reported no NVIDIA card (no NVIDIA driver, or one that is not working), "
                             "so PyTorch is installed for the CPU.")
    too_old = [g for g in gpus if g.capability is not None and g.capability < CU126_RANGE[0]]
    usable = [g for g in gpus if g not in too_old]
    if not usable:
        return Choice("cpu", f"The {too_old[0].label} (compute capability {_cc(too_old[0])}) is older than any "
                             "card PyTorch's CUDA builds support, so PyTorch is installed for the CPU.")
    known = [g.capability for g in usable if g.capability is not None]
    if any(c > CU126_RANGE[1] for c in known):
        flavour = "cu128"  # Blackwell: only cu128 has its kernels
    elif len(known) < len(usable) or any(c < CU128_FIRST for c in known):
        flavour = "cu126"  # a Maxwell or Pascal card, or one we cannot place: cu126 covers the widest range
    else:
        flavour = "cu128" if usable[0].driver_version >= MIN_DRIVER[os_name]["cu128"] else "cu126"
    notes = tuple(f"The {g.label} (compute capability {_cc(g)}) is too old for PyTorch and will not be used."
                  for g in too_old)
    notes += tuple(f"The {g.label} (compute capability {_cc(g)}) is not covered by the {flavour} build that the "
                   "newer card needs and will not be used." for g in usable
                   if g.capability is not None and flavour == "cu128" and g.capability < CU128_FIRST)
    names = " and ".join(dict.fromkeys(g.label for g in usable))
    reason = f"PyTorch's {flavour} build for the {names} (driver {usable[0].driver})."
    return Choice(flavour, reason, driver_fix(usable, flavour, os_name), notes)


def driver_fix(gpus: Sequence[Gpu], flavour: str, os_name: str = "nt") -> str:
    """"" when the driver runs ``flavour``, else the one thing to do: install a driver from version N on."""
    if flavour == "cpu" or not gpus:
        return ""
    needed = MIN_DRIVER[os_name][flavour]
    have = gpus[0].driver_version
    if have >= needed:
        return ""
    wanted = ".".join(str(n) for n in needed)
    return (f"Update the NVIDIA driver to version {wanted} or newer (this computer has {gpus[0].driver}), from "
            f"{DRIVER_DOWNLOAD}: until then PyTorch cannot use the {gpus[0].label} and AllTalk GUI works on the "
            "CPU, very slowly. No reinstall is needed afterwards.")


def coverage_problem(flavour: str, gpus: Sequence[Gpu]) -> str:
    """For a build the user forced (-CudaIndex): a sentence when it has no kernels for a card, else ""."""
    for gpu in gpus:
        if gpu.capability is None or flavour == "cpu":
            continue
        low, high = (CU126_RANGE if flavour == "cu126" else (CU128_FIRST, (99, 9)))
        if not low <= gpu.capability <= high:
            return (f"The {flavour} build has no kernels for the {gpu.label} (compute capability {_cc(gpu)}); "
                    f"start without -CudaIndex to get the build that suits it.")
    return ""


def _cc(gpu: Gpu) -> str:
    return "%d.%d" % gpu.capability if gpu.capability else "unknown"
