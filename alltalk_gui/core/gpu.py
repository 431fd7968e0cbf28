"""Which accelerators this machine has, and how much memory each has free: for ``alltalk-gui gpu`` and the GUI.

CUDA devices are listed through torch (name, compute capability, bf16 support) with free/total memory from
``torch.cuda.mem_get_info``, which asks the driver and so counts other processes' use too. The CPU and RAM are
always listed, since training can fall back to them.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

GIB = 1024**3


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cuda" or "cpu"
    index: int
    name: str
    total_gib: float
    free_gib: float
    bf16: bool
    capability: str = ""  # CUDA compute capability, e.g. "8.6"
    cores: int = 0  # CPU only

    def to_dict(self) -> dict:
        return asdict(self)


def list_devices() -> list[DeviceInfo]:
    """CUDA devices first (if any), then the CPU."""
    import psutil
    import torch

    devices: list[DeviceInfo] = []
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            free, total = torch.cuda.mem_get_info(i)
            devices.append(DeviceInfo(
                kind="cuda", index=i, name=props.name, total_gib=round(total / GIB, 2), free_gib=round(free / GIB, 2),
                bf16=props.major >= 8, capability=f"{props.major}.{props.minor}",
            ))
    vm = psutil.virtual_memory()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    devices.append(DeviceInfo(
        kind="cpu", index=0, name=_cpu_name(), total_gib=round(vm.total / GIB, 2),
        free_gib=round(vm.available / GIB, 2), bf16=True, cores=cores,
    ))
    return devices


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "CPU"
